"""Pluggable compression (KIP-984, codec id 5): the codec contract and the plugin registry.

A batch with codec id 5 names its codec: an int8 length and the UTF-8 name follow the
61-byte header, then the plugin's compressed records (FORMAT.md §7; this name-in-batch
layout is kcodec's reading of the KIP's first draft, which no Kafka broker accepts).

A name is resolved in this order, and only so:

1. codecs registered in this process with :func:`register`;
2. installed packages that declare an entry point with exactly that name in the
   ``kcodec.codecs`` group (loaded the first time the name is asked for, then kept).

A name read from data is only ever a key into those two tables: it is never imported,
never treated as a module or class path. An unknown name raises
:class:`~kcodec.errors.UnknownPluginError` (Kafka's UNSUPPORTED_COMPRESSION_TYPE, 76).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

from kcodec._scratch import ScratchBuffer
from kcodec.errors import (
    CompressionError,
    CorruptRecordError,
    DecompressionLimitError,
    KcodecError,
    UnknownPluginError,
)

#: The entry-point group installed plugin packages declare their codecs in.
ENTRY_POINT_GROUP = "kcodec.codecs"
#: A plugin name is 1 to 127 bytes of UTF-8 (its length is an int8 in the batch).
MAX_NAME_BYTES = 127


@runtime_checkable
class PluggableCodec(Protocol):
    """What a plugin provides. kcodec frames and checks the batch; the codec only turns the
    records section into its compressed form and back.

    * ``compress(data, level)`` returns the compressed bytes (any bytes-like object) of
      ``data``, a read-only memoryview (which stays valid if the codec keeps it). ``level``
      is None (the codec's default) or an int within ``level_range``.
    * ``decompress(data, max_size)`` returns the decompressed bytes and must not produce
      more than ``max_size`` bytes: raise :class:`~kcodec.errors.DecompressionLimitError`
      instead (kcodec checks the length too, but only afterwards).
    * Optional ``compress_into(data, level, sink)`` and ``decompress_into(data, sink)``
      write straight into kcodec's pooled buffer, a :class:`Sink` (which enforces the
      decompression limit), saving a copy and an allocation; kcodec prefers them.
    * Optional ``level_range``: ``(low, high)`` of the levels accepted; without it, a level
      is refused. Options other than the level (a dictionary, a window size) belong to the
      codec object: construct one object per configuration and register it under its name.

    Thread safety: one codec object is called from many threads at once (kcodec decodes
    batches on several threads), so keep per-call state local or thread-local. Errors
    about the data should be :class:`~kcodec.errors.KcodecError` subclasses; anything
    else a codec raises is reported as a :class:`~kcodec.errors.CompressionError`.
    """

    def compress(self, data: memoryview, level: int | None) -> Any: ...

    def decompress(self, data: memoryview, max_size: int) -> Any: ...


class Sink:
    """The output of one ``compress_into`` or ``decompress_into`` call: kcodec's pooled
    buffer, bounded by ``limit``.

    ``window(size)`` gives writable space for up to ``size`` bytes (fewer near the limit:
    never more than one byte past it, so overrunning is detected); ``commit(count)`` keeps
    the first ``count`` bytes of that window; ``write(data)`` appends. Going past
    ``limit`` raises :class:`~kcodec.errors.DecompressionLimitError`. A window is meant to
    be written at once; one kept after the sink grows, or after the call, stays safe to use
    but no longer reaches the sink (what is written through it then is lost).
    """

    __slots__ = ("_buffer", "limit")

    def __init__(self, buffer: ScratchBuffer, limit: int) -> None:
        self._buffer = buffer
        self.limit = limit

    def __len__(self) -> int:
        return len(self._buffer)

    def window(self, size: int) -> memoryview:
        room = self.limit - len(self._buffer) + 1
        return self._buffer.lent_window(max(1, min(size, room)))

    def commit(self, count: int) -> None:
        self._buffer.commit(count)
        self._check()

    def write(self, data: Any) -> None:
        if len(self._buffer) + len(memoryview(data).cast("B")) > self.limit:
            raise DecompressionLimitError.exceeding(self.limit)
        self._buffer.write(data)

    def _check(self) -> None:
        if len(self._buffer) > self.limit:
            raise DecompressionLimitError.exceeding(self.limit)


_NO_LIMIT = (1 << 63) - 1
_lock = threading.Lock()
_registered: dict[str, PluggableCodec] = {}
_loaded: dict[str, PluggableCodec] = {}  # from entry points, by name


def check_name(name: str) -> bytes:
    """The UTF-8 bytes of a valid plugin name (1 to 127 bytes), else ValueError."""
    if not isinstance(name, str):
        raise TypeError(f"a plugin name is a str, not {type(name).__name__}")
    encoded = name.encode("utf-8")
    if not 1 <= len(encoded) <= MAX_NAME_BYTES:
        raise ValueError(f"a plugin name has 1 to {MAX_NAME_BYTES} bytes of UTF-8, "
                         f"not {len(encoded)}")
    return encoded


def register(name: str, codec: PluggableCodec, *, replace: bool = False) -> None:
    """Make ``codec`` the plugin called ``name`` in this process (ahead of any installed
    package of that name). Registering a taken name needs ``replace=True``."""
    check_name(name)
    if not callable(getattr(codec, "compress", None)) or \
            not callable(getattr(codec, "decompress", None)):
        raise TypeError("a codec has compress(data, level) and decompress(data, max_size)")
    with _lock:
        if name in _registered and not replace:
            raise ValueError(f"a plugin named {name!r} is already registered")
        _registered[name] = codec


def unregister(name: str) -> None:
    """Forget the codec registered as ``name`` (KeyError if there is none)."""
    with _lock:
        del _registered[name]


def names() -> list[str]:
    """Registered plugin names and the names installed packages declare, sorted."""
    with _lock:
        found = set(_registered) | set(_loaded)
    found.update(entry.name for entry in _entry_points())
    return sorted(found)


def get(name: str) -> PluggableCodec:
    """The codec registered or installed as exactly ``name``; UnknownPluginError if none."""
    codec = _registered.get(name)  # single dict reads: no lock needed
    if codec is None:
        codec = _loaded.get(name)
    if codec is not None:
        return codec
    for entry in _entry_points():
        if entry.name == name:
            return _load(entry)
    raise UnknownPluginError(f"no compression plugin named {name!r} is registered or "
                             f"installed", plugin=name)


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


def _load(entry: metadata.EntryPoint) -> PluggableCodec:
    """An installed plugin: the entry point names a codec object, or a class or function
    that makes one without arguments."""
    try:
        target = entry.load()
        codec = (target if hasattr(target, "compress") and not isinstance(target, type)
                 else target())
    except Exception as exc:  # a broken installation: name it, in kcodec's hierarchy
        raise UnknownPluginError(f"plugin {entry.name!r} is installed ({entry.value}) but "
                                 f"failed to load: {type(exc).__name__}: {exc}",
                                 plugin=entry.name) from exc
    if not isinstance(codec, PluggableCodec):
        raise UnknownPluginError(f"plugin {entry.name!r} ({entry.value}) is not a codec",
                                 plugin=entry.name)
    with _lock:
        return _loaded.setdefault(entry.name, codec)


# ---- the records section of a codec-5 batch (FORMAT.md §7.2) ------------------------------

def split_section(section: memoryview, position: int) -> tuple[str, memoryview]:
    """The plugin name and the compressed stream of a codec-5 batch's records section
    (the bytes from offset 61); ``position`` is where the section starts in the input."""
    if len(section) < 1:
        raise CorruptRecordError("a pluggable-codec batch ends before its plugin name",
                                 position=position)
    length = section[0] if section[0] < 128 else section[0] - 256
    if not 1 <= length <= MAX_NAME_BYTES:
        raise CorruptRecordError(f"invalid plugin name length {length}", position=position)
    if len(section) < 1 + length:
        raise CorruptRecordError(f"the plugin name ({length} bytes) runs past the batch",
                                 position=position)
    try:
        name = bytes(section[1:1 + length]).decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptRecordError("the plugin name is not UTF-8", position=position + 1) from None
    return name, section[1 + length:]


def name_prefix(name: str) -> bytes:
    """The bytes a codec-5 batch carries before its compressed records."""
    encoded = check_name(name)
    return bytes((len(encoded),)) + encoded


# ---- calling a codec -----------------------------------------------------------------------

def compress_into(name: str, data: memoryview, level: int | None, sink: ScratchBuffer) -> None:
    codec = get(name)
    check_level(name, codec, level)
    direct = getattr(codec, "compress_into", None)
    if direct is not None:
        try:
            _call(name, direct, data, level, Sink(sink, _NO_LIMIT))
        finally:
            sink.let_go()
    else:
        sink.write(_bytes_of(name, "compress", _call(name, codec.compress, data, level)))


def decompress_into(name: str, data: memoryview, limit: int, sink: ScratchBuffer) -> None:
    codec = get(name)
    direct = getattr(codec, "decompress_into", None)
    if direct is not None:
        try:
            _call(name, direct, data, Sink(sink, limit))
        finally:
            sink.let_go()
    else:
        out = _bytes_of(name, "decompress", _call(name, codec.decompress, data, limit))
        if len(out) > limit:
            raise DecompressionLimitError.exceeding(limit)
        sink.write(out)
    if len(sink) > limit:
        raise DecompressionLimitError.exceeding(limit)


def check_level(name: str, codec: PluggableCodec, level: int | None) -> None:
    if level is None:
        return
    level = operator.index(level)   # an int, as Kafka's level configs are (TypeError else)
    if isinstance(codec, BuiltinCodec):   # the built-in codec's own rules (gzip's -1 too)
        codec._codecs.compressor(codec.codec, level)
        return
    levels: tuple[int, int] | None = getattr(codec, "level_range", None)
    if levels is None:
        raise ValueError(f"plugin {name!r} has no levels")
    if not levels[0] <= level <= levels[1]:
        raise ValueError(f"plugin {name!r} level {level} is outside {levels[0]}..{levels[1]}")


def _bytes_of(name: str, method: str, result: Any) -> memoryview:
    """A plugin's result as bytes: any contiguous buffer, else CompressionError."""
    try:
        return memoryview(result).cast("B")
    except (TypeError, ValueError):
        raise CompressionError(f"plugin {name!r} {method}() returned "
                               f"{type(result).__name__}, not bytes") from None


def _call(name: str, function: Callable[..., Any], *args: Any) -> Any:
    try:
        return function(*args)
    except KcodecError:
        raise
    except Exception as exc:  # a plugin's own failure on bad data
        raise CompressionError(f"plugin {name!r} failed: {type(exc).__name__}: {exc}") from exc


# ---- kcodec's own codecs as plugins --------------------------------------------------------

class BuiltinCodec:
    """A built-in Kafka codec offered as a plugin (the same bytes as codec ids 1-4 carry)."""

    def __init__(self, codec: Any) -> None:
        from kcodec.codecs import LEVEL_RANGES
        from kcodec.constants import Compression
        self.codec = Compression.parse(codec)
        if self.codec in (Compression.NONE, Compression.PLUGGABLE):
            raise ValueError(f"{self.codec.name.lower()} is not a compression codec")
        self.level_range = LEVEL_RANGES.get(self.codec)
        from kcodec import codecs
        self._codecs = codecs

    def __reduce__(self) -> tuple[Any, ...]:  # picklable, e.g. for Spark executors
        return (BuiltinCodec, (self.codec,))

    def compress(self, data: memoryview, level: int | None) -> bytes:
        return self._codecs.compress(self.codec, data, level)

    def decompress(self, data: memoryview, max_size: int) -> bytes:
        return self._codecs.decompress(self.codec, data, max_size=max_size)

    # (kcodec's codecs work on the sink's memory itself: the windows lent out let go first)
    def compress_into(self, data: memoryview, level: int | None, sink: Sink) -> None:
        sink._buffer.let_go()
        self._codecs.compress_builtin_into(self.codec, data, level, sink._buffer)

    def decompress_into(self, data: memoryview, sink: Sink) -> None:
        sink._buffer.let_go()
        self._codecs.decompress_builtin_into(self.codec, data, sink.limit, sink._buffer)


__all__ = ["ENTRY_POINT_GROUP", "MAX_NAME_BYTES", "BuiltinCodec", "Sink",
           "PluggableCodec", "check_name", "get", "names", "register", "unregister"]
