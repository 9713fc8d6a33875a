"""Pluggable compression (codec id 5): the registry, the batch layout of FORMAT.md §7.2,
the example dictionary-zstd plugin, and the rule that data never makes kcodec import."""

from __future__ import annotations

import json
import random
import struct
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import plugins
from kcodec._scratch import ScratchBuffer
from kcodec.errors import (
    ChecksumError,
    CompressionError,
    CorruptRecordError,
    DecompressionLimitError,
    InvalidRecordError,
    RecordTooLargeError,
    UnknownPluginError,
    UnknownServerError,
    UnsupportedCompressionTypeError,
)

from .conftest import example_plugin_site


class Reverse:
    """A toy codec with levels 1-3: the level is stored in the first byte."""

    level_range = (1, 3)

    def compress(self, data: memoryview, level: int | None) -> bytes:
        return bytes((level or 2,)) + bytes(data)[::-1]

    def decompress(self, data: memoryview, max_size: int) -> bytes:
        out = bytes(data[1:])[::-1]
        if len(out) > max_size:
            raise DecompressionLimitError("too big")
        return out


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Register codecs for one test, and forget them (and loaded entry points) after."""
    names: list[str] = []
    yield names
    for name in names:
        plugins.unregister(name)
    plugins._loaded.clear()


def register(names: list[str], name: str, codec: Any) -> None:
    plugins.register(name, codec)
    names.append(name)


def build(plugin: str, count: int = 20, level: int | None = None, **options: Any) -> bytes:
    builder = kcodec.BatchBuilder(compression="pluggable", plugin=plugin, level=level,
                                  **options)
    for i in range(count):
        builder.append(b"value %d " % i * 5, key=b"key-%d" % i, timestamp=1_700_000_000_000 + i,
                       headers=[("h", b"%d" % i)])
    return builder.build()


def contents(data: bytes) -> list[tuple[Any, ...]]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers)
            for b in kcodec.read_batches(data) for r in b]


def test_layout_is_format_7_2(registered: list[str]) -> None:
    register(registered, "reverse", Reverse())
    data = build("reverse", count=3, level=1)
    plain = kcodec.BatchBuilder()
    for i in range(3):
        plain.append(b"value %d " % i * 5, key=b"key-%d" % i, timestamp=1_700_000_000_000 + i,
                     headers=[("h", b"%d" % i)])
    reference = plain.build()
    assert data[22] & 7 == 5 and data[16] == 2  # codec 5, magic 2
    assert data[57:61] == reference[57:61] == struct.pack(">i", 3)  # count in its place
    assert data[61] == len(b"reverse") and data[62:69] == b"reverse"
    assert data[69:] == b"\x01" + reference[61:][::-1]  # the plugin's stream follows
    assert struct.unpack(">i", data[8:12])[0] == len(data) - 12  # length covers the name
    (batch,) = kcodec.read_batches(data)
    assert batch.is_valid() and batch.compression == kcodec.Compression.PLUGGABLE
    assert batch.plugin_name == "reverse" and batch.record_count == 3
    assert contents(data) == contents(reference)


@pytest.mark.parametrize("codec,levels", [
    ("gzip", range(1, 10)), ("lz4", range(1, 18)), ("zstd", [-5, -1, *range(1, 23)]),
    ("snappy", [None])])
def test_builtin_codecs_as_plugins_at_every_level(registered: list[str], codec: str,
                                                  levels: Any) -> None:
    register(registered, f"kafka-{codec}", plugins.BuiltinCodec(codec))
    expected = contents(build(f"kafka-{codec}", level=None))
    for level in levels:
        data = build(f"kafka-{codec}", level=level)
        assert contents(data) == expected
        # the same stream the built-in codec id carries
        builtin = kcodec.BatchBuilder(compression=codec, level=level)
        for i in range(20):
            builtin.append(b"value %d " % i * 5, key=b"key-%d" % i,
                           timestamp=1_700_000_000_000 + i, headers=[("h", b"%d" % i)])
        assert data[62 + len(f"kafka-{codec}"):] == builtin.build()[61:]


def test_levels_are_checked(registered: list[str]) -> None:
    register(registered, "reverse", Reverse())
    for level in (1, 2, 3):
        assert contents(build("reverse", level=level)) == contents(build("reverse"))
    with pytest.raises(ValueError, match="outside 1..3"):
        kcodec.BatchBuilder(compression="pluggable", plugin="reverse", level=4)
    with pytest.raises(TypeError):   # a level is an int, as the built-in codecs' are
        kcodec.BatchBuilder(compression="pluggable", plugin="reverse", level=2.5)  # type: ignore[arg-type]
    register(registered, "no-levels", plugins.BuiltinCodec("snappy"))
    with pytest.raises(ValueError, match="no levels"):
        kcodec.BatchBuilder(compression="pluggable", plugin="no-levels", level=1)
    register(registered, "kafka-gzip", plugins.BuiltinCodec("gzip"))   # Kafka's -1 default too
    plain = kcodec.BatchBuilder(compression="gzip", level=-1)
    lent = kcodec.BatchBuilder(compression="pluggable", plugin="kafka-gzip", level=-1)
    for builder in (plain, lent):
        builder.append(b"value", timestamp=1700000000000)
    assert lent.build()[62 + len("kafka-gzip"):] == plain.build()[61:]


def test_a_builder_checks_its_plugin_without_calling_it(registered: list[str]) -> None:
    """A builder checks the plugin and level when it is made, and the plugin first
    compresses when the batch is built; each builder checks again (the registry may
    change between them)."""
    calls: list[int | None] = []

    class Counting(Reverse):
        def compress(self, data: memoryview, level: int | None) -> bytes:
            calls.append(level)
            return super().compress(data, level)

    register(registered, "counting", Counting())
    builder = kcodec.BatchBuilder(compression="pluggable", plugin="counting", level=3)
    assert calls == []
    builder.append(b"v", timestamp=1_700_000_000_000)
    builder.build()
    assert calls == [3]
    plugins.unregister("counting")
    registered.clear()
    with pytest.raises(UnknownPluginError):
        kcodec.BatchBuilder(compression="pluggable", plugin="counting", level=3)


def test_unknown_plugin_is_error_76_naming_it(registered: list[str]) -> None:
    register(registered, "reverse", Reverse())
    data = build("reverse")
    plugins.unregister("reverse")
    registered.clear()
    (batch,) = kcodec.read_batches(data)
    assert batch.plugin_name == "reverse"  # header-only use needs no plugin
    with pytest.raises(UnknownPluginError) as info:
        batch.records()
    assert info.value.plugin == "reverse" and info.value.error_code == 76
    assert info.value.position == 61 and "'reverse'" in str(info.value)
    with pytest.raises(UnknownPluginError):
        kcodec.decode_arrow(data)
    with pytest.raises(UnknownPluginError):
        kcodec.BatchBuilder(compression="pluggable", plugin="reverse")


def test_longest_and_non_ascii_names(registered: list[str]) -> None:
    for name in ("p" * 127, "zstd-字典-x" + "é" * 57, "🗜️", "Ω"):
        assert len(name.encode()) <= 127
        register(registered, name, plugins.BuiltinCodec("lz4"))
        data = build(name)
        (batch,) = kcodec.read_batches(data)
        assert batch.plugin_name == name and data[61] == len(name.encode())
        assert len(batch.records()) == 20
    for bad in ("p" * 128, "字" * 43, ""):
        with pytest.raises(ValueError, match="1 to 127 bytes"):
            plugins.register(bad, Reverse())


@pytest.mark.parametrize("section,message", [
    (b"", "ends before its plugin name"), (b"\x00rest", "length 0"),
    (b"\xffrest", "length -1"), (b"\x7fshort", "runs past the batch"),
    (b"\x02\xff\xfe", "not UTF-8")])
def test_broken_names_are_corrupt_at_byte_61(section: bytes, message: str) -> None:
    data = bytearray(kcodec.empty_batch(base_offset=0, last_offset=0, max_timestamp=0))
    data[22] = 5
    data[57:61] = struct.pack(">i", 1)
    data += section
    data[8:12] = struct.pack(">i", len(data) - 12)
    data[17:21] = struct.pack(">I", kcodec.crc32c(bytes(data[21:])))
    (batch,) = kcodec.read_batches(bytes(data))
    with pytest.raises(CorruptRecordError, match=message) as info:
        batch.records()
    assert info.value.position in (61, 62)


def test_a_name_from_data_is_never_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            registered: list[str]) -> None:
    """Names that are importable modules or entry-point-like values stay mere names."""
    marker = tmp_path / "imported"
    (tmp_path / "kcodec_trap.py").write_text(f"open({str(marker)!r}, 'w').close()\n"
                                             "def compress(data, level): return data\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    register(registered, "carrier", plugins.BuiltinCodec("gzip"))
    template = build("carrier")
    for name in ("kcodec_trap", "kcodec_trap:compress", "os", "os.path", "subprocess",
                 "kcodec.codecs", "builtins.eval", "../kcodec_trap.py"):
        encoded = name.encode()
        data = bytearray(template[:61]) + bytes((len(encoded),)) + encoded + template[69:]
        data[8:12] = struct.pack(">i", len(data) - 12)
        data[17:21] = struct.pack(">I", kcodec.crc32c(bytes(data[21:])))
        with pytest.raises(UnknownPluginError):
            list(next(kcodec.read_batches(bytes(data))))
    assert not marker.exists() and "kcodec_trap" not in sys.modules


def test_broken_installed_plugins_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            registered: list[str]) -> None:
    info = tmp_path / "broken_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[kcodec.codecs]\nmissing = no_such_module:codec\n"
                                           "not-a-codec = json:JSONDecoder\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UnknownPluginError, match="failed to load: ModuleNotFoundError") as e:
        plugins.get("missing")
    assert e.value.plugin == "missing" and e.value.error_code == 76
    with pytest.raises(UnknownPluginError, match="is not a codec"):
        plugins.get("not-a-codec")


def test_codec_failures_become_kcodec_errors(registered: list[str]) -> None:
    class Broken(Reverse):
        def decompress(self, data: memoryview, max_size: int) -> bytes:
            raise RuntimeError("boom")

    class Greedy(Reverse):
        def decompress(self, data: memoryview, max_size: int) -> bytes:
            return b"x" * (max_size + 10)

    register(registered, "broken", Broken())
    register(registered, "greedy", Greedy())
    with pytest.raises(CompressionError, match="plugin 'broken' failed: RuntimeError: boom"):
        next(kcodec.read_batches(build("broken"))).records()
    with pytest.raises(DecompressionLimitError):
        next(kcodec.read_batches(build("greedy"))).records()


def test_results_that_are_not_bytes_are_compression_errors(registered: list[str]) -> None:
    """A plugin returning something other than a buffer fails with CompressionError at the
    batch, whether compressing (no batch is built) or decompressing; any contiguous buffer
    counts as bytes."""
    import array

    class Returns(Reverse):
        def __init__(self, result: Any) -> None:
            self.result = result

        def compress(self, data: memoryview, level: int | None) -> Any:
            return self.result

        def decompress(self, data: memoryview, max_size: int) -> Any:
            return self.result

    register(registered, "good", Reverse())
    data = build("good")
    register(registered, "odd", Reverse())
    for result in (None, "text", [1, 2]):
        plugins.register("odd", Returns(result), replace=True)
        builder = kcodec.BatchBuilder(compression="pluggable", plugin="odd")
        builder.append(b"v")
        with pytest.raises(CompressionError, match=f"returned {type(result).__name__}, not bytes"):
            builder.build()
        plugins.register("good", Returns(result), replace=True)
        with pytest.raises(CompressionError, match="not bytes") as info:
            next(kcodec.read_batches(data)).records()
        assert info.value.position == 61
        with pytest.raises(CompressionError, match="not bytes"):
            kcodec.decode_arrow(data)
    register(registered, "ints", Returns(array.array("i", [1, 2])))
    builder = kcodec.BatchBuilder(compression="pluggable", plugin="ints")
    builder.append(b"v")
    assert len(builder.build()) == 61 + 1 + len("ints") + 8


def test_a_falsy_codec_object_is_still_the_registered_one(registered: list[str]) -> None:
    class Empty(dict[str, int]):   # falsy while empty
        compress = Reverse.compress
        decompress = Reverse.decompress
        level_range = Reverse.level_range

    codec = Empty()
    register(registered, "falsy", codec)
    assert plugins.get("falsy") is codec
    assert len(contents(build("falsy"))) == 20


def test_decompression_is_bounded_through_the_sink(registered: list[str]) -> None:
    register(registered, "kafka-zstd", plugins.BuiltinCodec("zstd"))
    data = build("kafka-zstd", count=2000)
    assert len(kcodec.decode_arrow(data)) == 2000
    with pytest.raises(DecompressionLimitError):
        next(kcodec.read_batches(data, max_decompressed_size=1000)).records()
    sink = plugins.Sink(ScratchBuffer(16), 10)
    assert len(sink.window(1 << 20)) == 11  # never more than one byte past the limit
    with pytest.raises(DecompressionLimitError):
        sink.commit(11)
    with pytest.raises(DecompressionLimitError):
        plugins.Sink(ScratchBuffer(16), 3).write(b"four")


class Keeper:
    """A codec that keeps what kcodec lends it: its inputs (as a sampler would) and its
    first window, which it writes through after asking for more room, and again later."""

    def __init__(self) -> None:
        self.inputs: list[memoryview] = []
        self.windows: list[memoryview] = []

    def compress(self, data: memoryview, level: int | None) -> bytes:
        self.inputs.append(data[1:])   # a slice keeps the lent memory as the view does
        return bytes(data)

    def decompress(self, data: memoryview, max_size: int) -> bytes:
        return bytes(data)

    def decompress_into(self, data: memoryview, sink: plugins.Sink) -> None:
        first = sink.window(16)
        sink.window(64 << 20)          # grows (moves) the sink's buffer
        first[:] = b"A" * 16
        self.windows.append(first)
        sink.write(data)


def test_a_plugin_cannot_append_to_the_batch_it_compresses(registered: list[str]) -> None:
    class Meddler(Reverse):
        def compress(self, data: memoryview, level: int | None) -> bytes:
            builder.append(b"x" * 100_000)   # would move the buffer under ``data``
            return super().compress(data, level)
    register(registered, "meddler", Meddler())
    builder = kcodec.BatchBuilder(compression="pluggable", plugin="meddler")
    builder.append(b"value", timestamp=1700000000000)
    with pytest.raises(CompressionError, match="being compressed"):
        builder.build()


def test_views_a_plugin_keeps_stay_valid(registered: list[str]) -> None:
    keeper = Keeper()
    register(registered, "keeper", keeper)
    records = kcodec.BatchBuilder()
    for i in range(200):
        records.append(b"v%d" % i * 500, key=b"k", timestamp=1700000000000)
    plain = records.build()
    builder = kcodec.BatchBuilder(compression="pluggable", plugin="keeper")
    for i in range(200):
        builder.append(b"v%d" % i * 500, key=b"k", timestamp=1700000000000)
    data = builder.build()
    other = kcodec.BatchBuilder(compression="lz4")   # decompressed into a pooled buffer of
    for i in range(200):                            # the size the builder's was
        other.append(b"w%d" % i * 500, key=b"k", timestamp=1700000000000)
    for _ in range(3):
        next(kcodec.read_batches(other.build())).records()
    assert keeper.inputs[0].tobytes() == plain[62:]   # the records section, as lent
    expected = [r.value for r in next(kcodec.read_batches(plain)).records()]
    for _ in range(3):
        assert [r.value for r in next(kcodec.read_batches(data)).records()] == expected
        assert kcodec.decode_arrow(data).column("value").to_pylist() == expected
    for window in keeper.windows:   # writing through them later reaches nothing in use
        window[:] = b"B" * 16
    assert [r.value for r in next(kcodec.read_batches(data)).records()] == expected
    with pytest.raises(BufferError, match="exported once"):
        memoryview(keeper.windows[0].obj)


def test_a_window_kept_while_a_builtin_codec_fills_the_sink(registered: list[str]) -> None:
    """kcodec's own codecs, given a plugin's sink, work on its memory directly: a window the
    plugin kept stays valid (the sink had been moved by realloc under it)."""
    kept: list[memoryview] = []

    class Wrapping:
        def __init__(self, codec: str) -> None:
            self.codec = plugins.BuiltinCodec(codec)

        def compress(self, data: memoryview, level: int | None) -> bytes:
            return self.codec.compress(data, level)

        def decompress(self, data: memoryview, max_size: int) -> bytes:
            raise AssertionError("decompress_into is used")

        def decompress_into(self, data: memoryview, sink: plugins.Sink) -> None:
            kept.append(sink.window(4))
            self.codec.decompress_into(data, sink)
    payload = bytes(200_000)
    for codec in ("gzip", "zstd", "lz4", "snappy"):
        register(registered, f"wrapping-{codec}", Wrapping(codec))
        packed = kcodec.compress("pluggable", payload, plugin=f"wrapping-{codec}")
        assert kcodec.decompress("pluggable", packed, plugin=f"wrapping-{codec}") == payload
        kept[-1][:] = b"ABCD"   # reaches nothing in use
        assert bytes(kept[-1]) == b"ABCD"


_WINDOW_IN_A_TRACEBACK = """
import gc, struct, zlib
import kcodec
from kcodec import plugins
from kcodec._scratch import ScratchBuffer
from kcodec.errors import CompressionError

class Strict:   # takes a window, then finds the stream corrupt
    def compress(self, data, level):
        return zlib.compress(bytes(data))
    def decompress(self, data, max_size):
        raise AssertionError("decompress_into is used")
    def decompress_into(self, data, sink):
        window = sink.window(1 << 16)
        zlib.decompress(bytes(data))

plugins.register("strict", Strict())
builder = kcodec.BatchBuilder(compression="pluggable", plugin="strict")
for _ in range(50):
    builder.append(b"v" * 100, key=b"k", timestamp=1700000000000)
data = bytearray(builder.build())
data[-10] ^= 0xFF
struct.pack_into(">I", data, 17, kcodec.crc32c(bytes(data[21:])))
for _ in range(20):
    for decode in (kcodec.decode_arrow, lambda d: list(kcodec.iter_columns(d))):
        try:
            decode(bytes(data))
        except CompressionError:
            pass
        gc.collect()
class Holder:
    pass
for _ in range(20):   # a lent window and what it exports, in one cycle
    window = ScratchBuffer(100).lent_window(10)
    a, b = Holder(), Holder()
    a.it, b.it, a.next, b.next = window.obj, window, b, a
    del window, a, b
    gc.collect()
print("survived")
"""


def test_a_window_collected_in_a_cycle_after_a_plugin_fails() -> None:
    """A plugin's window held by its error's traceback ends in a cycle the collector
    clears; the window lets go of its memory as usual (the process once crashed here)."""
    import subprocess
    done = subprocess.run([sys.executable, "-c", _WINDOW_IN_A_TRACEBACK], capture_output=True,
                          text=True, cwd=Path(__file__).parent, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, "survived"), done.stderr


def test_registry_api(registered: list[str]) -> None:
    register(registered, "reverse", Reverse())
    assert "reverse" in plugins.names() and isinstance(plugins.get("reverse"), Reverse)
    with pytest.raises(ValueError, match="already registered"):
        plugins.register("reverse", Reverse())
    replacement = Reverse()
    plugins.register("reverse", replacement, replace=True)
    assert plugins.get("reverse") is replacement
    with pytest.raises(TypeError):
        plugins.register("not-a-codec", object())  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        plugins.unregister("never-registered")
    with pytest.raises(UnknownPluginError):
        plugins.get("never-registered")


def test_builder_and_config_options(registered: list[str]) -> None:
    register(registered, "reverse", Reverse())
    with pytest.raises(ValueError, match="needs a plugin name"):
        kcodec.BatchBuilder(compression="pluggable")
    with pytest.raises(ValueError, match="compression='pluggable' only"):
        kcodec.BatchBuilder(compression="gzip", plugin="reverse")
    with pytest.raises(UnsupportedCompressionTypeError):
        kcodec.BatchBuilder(magic=1, compression="pluggable", plugin="reverse")
    config = kcodec.ProducerConfig.from_properties({
        "compression.type": "pluggable", "pluggable.factory.plugin": "reverse",
        "compression.pluggable.level": "3"})
    assert config.plugin == "reverse"
    builder = config.batch_builder("orders", base_offset=7)
    builder.append(b"v")
    (batch,) = kcodec.read_batches(builder.build())
    assert batch.plugin_name == "reverse" and batch.base_offset == 7
    assert batch.buffer[69] == 3  # Reverse stores its level
    with pytest.raises(ValueError, match="needs pluggable.factory.plugin"):
        kcodec.ProducerConfig.from_properties({"compression.type": "pluggable"})
    with pytest.raises(ValueError, match="goes with compression.type=pluggable"):
        kcodec.ProducerConfig.from_properties({"compression.type": "lz4",
                                               "pluggable.factory.plugin": "reverse"})


def test_convert_to_and_from_standard_batches(registered: list[str]) -> None:
    from kafka.record.memory_records import MemoryRecords
    register(registered, "reverse", Reverse())
    data = build("reverse", base_offset=40) + build("reverse", base_offset=60)
    standard = kcodec.convert(data, magic=2, compression="gzip")
    assert {b.compression for b in kcodec.read_batches(standard)} == {kcodec.Compression.GZIP}
    assert contents(standard) == contents(data)
    peer = MemoryRecords(standard)  # a Kafka client reads the converted batches
    offsets = []
    while peer.has_next():
        offsets += [r.offset for r in peer.next_batch()]
    assert offsets == [r[0] for r in contents(data)]
    assert kcodec.convert(data, magic=2) == data  # kept as it is
    again = kcodec.convert(standard, magic=2, compression="pluggable", plugin="reverse")
    assert again == data
    first = bytes(next(kcodec.read_batches(standard)).buffer)
    for magic in (1, 3):   # refused at the plugin batch
        with pytest.raises(UnsupportedCompressionTypeError) as info:
            kcodec.convert(first + build("reverse", base_offset=60), magic=magic)
        assert info.value.position == len(first)
    # a broker answers a codec id it does not define (as 5) with UNKNOWN_SERVER_ERROR, after
    # its base offset, size and CRC checks
    with pytest.raises(UnknownServerError, match="type id: 5") as error:
        kcodec.validate(build("reverse", base_offset=0), next_offset=0)
    assert (error.value.error_code, error.value.position) == (-1, 21)
    with pytest.raises(InvalidRecordError, match="baseOffset"):
        kcodec.validate(build("reverse", base_offset=5), next_offset=0)
    with pytest.raises(RecordTooLargeError):
        kcodec.validate(build("reverse", base_offset=0), next_offset=0,
                        config={"max.message.bytes": 50})
    damaged = bytearray(build("reverse", base_offset=0))
    damaged[-1] ^= 1
    with pytest.raises(ChecksumError):
        kcodec.validate(bytes(damaged), next_offset=0)
    with pytest.raises(UnknownServerError, match="type id: 5"):
        kcodec.validate(build("reverse", base_offset=0), next_offset=0, produce_version=3)


def test_columns_and_threads_match_the_row_api(registered: list[str]) -> None:
    register(registered, "kafka-lz4", plugins.BuiltinCodec("lz4"))
    data = b"".join(build("kafka-lz4", count=50, base_offset=i * 50) for i in range(40))
    rows = contents(data)
    for threads in (1, 2):
        table = kcodec.decode_arrow(data, threads=threads)
        assert table.column("offset").to_pylist() == [r[0] for r in rows]
        assert table.column("value").to_pylist() == [r[3] for r in rows]
    results: list[list[Any]] = []
    workers = [threading.Thread(target=lambda: results.append(contents(data))) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert results == [rows] * 4


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.binary(max_size=300)), min_size=1, max_size=30),
       level=st.one_of(st.none(), st.integers(1, 3)))
def test_round_trip_property(values: list[bytes | None], level: int | None) -> None:
    if "reverse-property" not in plugins.names():
        plugins.register("reverse-property", Reverse(), replace=True)
    builder = kcodec.BatchBuilder(compression="pluggable", plugin="reverse-property",
                                  level=level, base_offset=5)
    for i, value in enumerate(values):
        builder.append(value, key=None if i % 2 else b"k%d" % i, timestamp=i)
    data = builder.build()
    assert [r.value for r in next(kcodec.read_batches(data))] == values
    assert kcodec.convert(kcodec.convert(data, magic=2, compression="none"), magic=2,
                          compression="pluggable", plugin="reverse-property",
                          level=level) == data


# ---- the example plugin package: zstd with a trained dictionary ---------------------------

@pytest.fixture
def example_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      registered: list[str]) -> str:
    """examples/zstd-dict as pip would install it: the package and its entry point."""
    name = example_plugin_site(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in [m for m in sys.modules if m.startswith("kcodec_zstd_dict")]:
        monkeypatch.delitem(sys.modules, module)
    return name


def test_installed_plugin_is_found_by_name_and_loaded_lazily(example_installed: str) -> None:
    assert example_installed in plugins.names()
    assert "kcodec_zstd_dict" not in sys.modules  # listed from metadata, not imported
    builder = kcodec.BatchBuilder(compression="pluggable", plugin=example_installed, level=5)
    events = [b'{"order_id": "%d", "item": "lamp", "country": "DE"}' % i for i in range(50)]
    for event in events:
        builder.append(event)
    data = builder.build()
    assert "kcodec_zstd_dict" in sys.modules
    assert [r.value for r in next(kcodec.read_batches(data))] == events
    assert plugins.get(example_installed) is plugins.get(example_installed)  # loaded once


def test_dictionary_codec_at_every_level(example_installed: str,
                                         registered: list[str]) -> None:
    from kcodec_zstd_dict import ZstdDictCodec, train
    rng = random.Random(5)
    values = [json.dumps({"order": i, "customer": f"c-{rng.randrange(5000):05d}",
                          "item": rng.choice(["book", "lamp", "desk", "mug"]),
                          "cents": rng.randrange(199, 19999),
                          "status": rng.choice(["created", "paid", "shipped"])}).encode()
              for i in range(3000)]
    codec = train(values[:2000], size=8192)
    assert codec.name == f"zstd-dict-{codec.dict_id}"
    register(registered, codec.name, codec)
    plain_total = dict_total = 0
    for level in range(1, 23):
        builder = kcodec.BatchBuilder(compression="pluggable", plugin=codec.name, level=level)
        plain = kcodec.BatchBuilder(compression="zstd", level=level)
        for value in values[2000:2010]:
            builder.append(value)
            plain.append(value)
        data = builder.build()
        assert [r.value for r in next(kcodec.read_batches(data))] == values[2000:2010]
        dict_total += len(data)
        plain_total += len(plain.build())
    assert dict_total < plain_total * 0.9  # small batches: the dictionary pays off
    loaded = ZstdDictCodec.load(codec.save(Path(str(sys.modules["kcodec_zstd_dict"].__file__))
                                           .parent / "trained.zdict"))
    assert loaded.name == codec.name
    assert loaded.decompress(memoryview(codec.compress(memoryview(b"abc" * 100), 3)),
                             300) == b"abc" * 100
    with pytest.raises(DecompressionLimitError):
        loaded.decompress(memoryview(codec.compress(memoryview(b"abc" * 100), 3)), 299)


def test_command_line(registered: list[str], tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    from kcodec.cli import main
    from kcodec.segments import write_partition
    register(registered, "reverse", Reverse())
    assert main(["plugins"]) == 0 and "reverse" in capsys.readouterr().out.split()
    source = write_partition(tmp_path / "t-0", [build("reverse", base_offset=0),
                                                build("reverse", base_offset=20)])
    assert main(["dump", str(next(source.glob("*.log")))]) == 0
    assert "compresscodec: pluggable:reverse" in capsys.readouterr().out
    assert main(["convert", str(source), str(tmp_path / "out"), "--compression", "lz4"]) == 0
    converted = next((tmp_path / "out" / "t-0").glob("*.log")).read_bytes()
    assert {b.compression for b in kcodec.read_batches(converted)} == {kcodec.Compression.LZ4}
    assert main(["convert", str(tmp_path / "out" / "t-0"), str(tmp_path / "back"),
                 "--compression", "pluggable", "--plugin", "reverse"]) == 0
    back = next((tmp_path / "back" / "t-0").glob("*.log")).read_bytes()
    assert back == next(source.glob("*.log")).read_bytes()
