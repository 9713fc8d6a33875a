"""zstd with a trained dictionary, as a kcodec compression plugin (KIP-984, codec id 5).

Small records compress poorly on their own: a 100-byte JSON event has no history for
zstd to refer to. A dictionary trained on sample records supplies that history. The plugin
is named after its dictionary (``zstd-dict-<dictionary id>``), so a batch says exactly
which dictionary decompresses it, and a reader without that dictionary fails with
UNSUPPORTED_COMPRESSION_TYPE instead of producing garbage.

    codec = train(sample_values)                 # or ZstdDictCodec.load("orders.zdict")
    kcodec.plugins.register(codec.name, codec)
    kcodec.BatchBuilder(compression="pluggable", plugin=codec.name, level=3)
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import zstandard

from kcodec.errors import CompressionError, DecompressionLimitError

__version__ = "0.1.0"

#: Levels zstd accepts here (negative levels are fast modes without much use for a dictionary).
LEVEL_RANGE = (1, 22)
DEFAULT_LEVEL = 3


class ZstdDictCodec:
    """A kcodec plugin: zstd frames compressed against one dictionary. Thread-safe: every
    thread gets its own compression and decompression contexts."""

    level_range = LEVEL_RANGE

    def __init__(self, dictionary: bytes) -> None:
        self.dictionary = bytes(dictionary)
        self._dict = zstandard.ZstdCompressionDict(self.dictionary)
        self.dict_id = self._dict.dict_id()
        if self.dict_id == 0:
            raise ValueError("not a trained zstd dictionary (its id is 0)")
        self.name = f"zstd-dict-{self.dict_id}"
        self._local = threading.local()

    def __reduce__(self) -> tuple[Any, ...]:  # ship to Spark executors by the dictionary alone
        return (ZstdDictCodec, (self.dictionary,))

    @classmethod
    def load(cls, path: str | Path) -> ZstdDictCodec:
        return cls(Path(path).read_bytes())

    def save(self, path: str | Path) -> Path:
        """Write the dictionary (written aside, then renamed into place)."""
        target = Path(path)
        staging = target.with_name(f".{target.name}.partial")
        staging.write_bytes(self.dictionary)
        staging.replace(target)
        return target

    def _compressor(self, level: int) -> zstandard.ZstdCompressor:
        contexts: dict[int, zstandard.ZstdCompressor] = self._local.__dict__.setdefault(
            "compressors", {})
        if level not in contexts:
            contexts[level] = zstandard.ZstdCompressor(level=level, dict_data=self._dict)
        return contexts[level]

    def _decompressor(self) -> zstandard.ZstdDecompressor:
        dctx: zstandard.ZstdDecompressor | None = getattr(self._local, "decompressor", None)
        if dctx is None:
            dctx = self._local.decompressor = zstandard.ZstdDecompressor(dict_data=self._dict)
        return dctx

    def compress(self, data: memoryview, level: int | None) -> bytes:
        return self._compressor(DEFAULT_LEVEL if level is None else level).compress(data)

    def decompress(self, data: memoryview, max_size: int) -> bytes:
        out = bytearray()
        self._stream(data, max_size, out.extend)
        return bytes(out)

    def decompress_into(self, data: memoryview, sink: Any) -> None:
        """Straight into kcodec's buffer (the plugin contract's zero-copy route)."""
        try:
            with self._decompressor().stream_reader(data, read_across_frames=True) as reader:
                while True:
                    got = reader.readinto(sink.window(1 << 17))
                    if not got:
                        return
                    sink.commit(got)
        except zstandard.ZstdError as exc:
            raise CompressionError(f"corrupt {self.name} data: {exc}") from None

    def _stream(self, data: memoryview, max_size: int, emit: Any) -> None:
        produced = 0
        try:
            with self._decompressor().stream_reader(data, read_across_frames=True) as reader:
                while chunk := reader.read(min(1 << 17, max_size - produced + 1)):
                    produced += len(chunk)
                    if produced > max_size:
                        raise DecompressionLimitError(
                            f"decompressed data would exceed the limit of {max_size} bytes")
                    emit(chunk)
        except zstandard.ZstdError as exc:
            raise CompressionError(f"corrupt {self.name} data: {exc}") from None


def train(samples: Iterable[bytes], size: int = 16 * 1024) -> ZstdDictCodec:
    """A codec whose dictionary (at most ``size`` bytes) is trained on ``samples``, e.g.
    a few thousand record values of the topic."""
    return ZstdDictCodec(zstandard.train_dictionary(size, list(samples)).as_bytes())


__all__ = ["DEFAULT_LEVEL", "LEVEL_RANGE", "ZstdDictCodec", "train"]
