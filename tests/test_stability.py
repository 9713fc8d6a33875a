"""Leaks and stability: resident memory stays flat over millions of batches decoded and
encoded (good and bad ones), the caller's buffers are released, reference counts of
returned objects are right, and threads get the results one thread gets.

The resident memory measured before and after each long run is printed in the test
summary."""

from __future__ import annotations

import gc
import mmap
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import kcodec
from kcodec.errors import KcodecError

from .conftest import UNDER_ASAN

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/statm"),
                                reason="reads resident memory from /proc")

#: Growth allowed over a run: allocator slack, never a per-batch leak (a leak of even 16
#: bytes per batch over a million batches is 16 MB).
SLACK = 8 << 20
#: Runs before the measured ones: the pools of spare buffers settle over the first few runs
#: of a shape after another (binary views after columns: 165, 165, 167, 171 MiB, then flat
#: at 171 over a dozen more runs).
WARM_UP = 4
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def batch(codec: str = "none", records: int = 3, base_offset: int = 0, magic: int = 2) -> bytes:
    builder = kcodec.BatchBuilder(magic=magic, compression=codec, base_offset=base_offset)
    for i in range(records):
        builder.append(b"value-%d" % i * 3, key=b"key-%d" % i, timestamp=1_700_000_000_000 + i,
                       headers=[("trace", b"%d" % i)] if magic == 2 else ())
    return builder.build()


def log_of(entries: list[bytes], copies: int) -> bytes:
    return b"".join(entries) * copies


def decode_all(data: bytes) -> int:
    n = 0
    for entry in kcodec.read_batches(data):
        for record in entry:
            n += len(record.value or b"") + len(record.headers)
    return n


def flat(run: Callable[[], Any], rounds: int, record_property: Callable[[str, object], None],
         label: str) -> None:
    """Run WARM_UP times to warm caches and pools, then ``rounds`` times; resident memory
    must not grow by more than SLACK."""
    if UNDER_ASAN:
        pytest.skip("resident memory under AddressSanitizer includes its quarantine")
    for _ in range(WARM_UP):
        run()
    gc.collect()
    before = resident()
    for _ in range(rounds):
        run()
    gc.collect()
    after = resident()
    record_property("memory", f"{label}: {before / 2**20:.1f} MiB before, "
                              f"{after / 2**20:.1f} MiB after")
    assert after - before < SLACK, f"{label}: resident memory grew {after - before} bytes"


def test_decoding_a_million_batches(record_property: Callable[[str, object], None]) -> None:
    data = log_of([batch(records=1, base_offset=i) for i in range(100)], 500)  # 50,000
    flat(lambda: decode_all(data), 20, record_property, "1,000,000 batches read (uncompressed)")


@pytest.mark.parametrize("codec", CODECS[1:])
def test_decoding_compressed_batches(codec: str,
                                     record_property: Callable[[str, object], None]) -> None:
    data = log_of([batch(codec, records=10, base_offset=10 * i) for i in range(100)], 100)
    flat(lambda: decode_all(data), 10, record_property, f"100,000 {codec} batches read")


def test_decoding_legacy_message_sets(record_property: Callable[[str, object], None]) -> None:
    data = log_of([batch(codec, records=5, magic=magic)
                   for magic in (0, 1) for codec in CODECS[:4]], 2500)
    flat(lambda: decode_all(data), 10, record_property, "200,000 legacy entries read")


def test_columnar_decoding(record_property: Callable[[str, object], None]) -> None:
    data = log_of([batch(codec, records=20) for codec in CODECS], 2000)
    flat(lambda: kcodec.decode_columns(data, include_headers=True), 10, record_property,
         "100,000 batches decoded to columns")


def test_binary_view_decoding(record_property: Callable[[str, object], None]) -> None:
    """Views keep every compressed batch's decompressed records until the table goes; those
    buffers then return to the pool or the allocator."""
    pytest.importorskip("pyarrow")
    data = log_of([batch(codec, records=20) for codec in CODECS], 2000)
    flat(lambda: kcodec.decode_arrow(data, include_headers=True, binary_view=True), 5,
         record_property, "100,000 batches decoded to binary views")


def test_encoding_a_million_batches(record_property: Callable[[str, object], None]) -> None:
    def build() -> None:
        for i in range(100_000):
            builder = kcodec.BatchBuilder(base_offset=i)
            builder.append(b"value", key=b"key", timestamp=1_700_000_000_000,
                           headers=[("h", b"x")])
            builder.build()
    flat(build, 10, record_property, "1,000,000 batches built")


@pytest.mark.parametrize("codec", CODECS[1:])
def test_encoding_compressed_batches(codec: str,
                                     record_property: Callable[[str, object], None]) -> None:
    def build() -> None:
        for i in range(2_000):
            batch(codec, records=10, base_offset=i)
    flat(build, 10, record_property, f"20,000 {codec} batches built")


def corrupt_inputs() -> Iterator[tuple[bytes, bool]]:
    """Batches each broken in one place (CRC, count, record length, compressed stream),
    with whether to check CRCs (off, so that the break behind the CRC is reached)."""
    good = batch("none", records=3)
    yield good[:17] + b"\0\0\0\0" + good[21:], True
    yield good[:57] + (9).to_bytes(4, "big") + good[61:], False
    yield good[:61] + b"\x7f" + good[62:], False
    for codec in CODECS[1:]:
        packed = batch(codec, records=3)
        yield packed[:70] + b"\xff" * 8 + packed[78:], False


def test_errors_do_not_leak(record_property: Callable[[str, object], None]) -> None:
    inputs = list(corrupt_inputs())

    def fail() -> None:
        for _ in range(5_000):
            for data, validate_crc in inputs:
                with pytest.raises(KcodecError):
                    for entry in kcodec.read_batches(data, validate_crc=validate_crc):
                        list(entry)
                with pytest.raises(KcodecError):
                    kcodec.decode_columns(data, validate_crc=validate_crc)
    flat(fail, 4, record_property, "320,000 corrupt batches refused")


def test_buffers_are_released_in_reference_cycles() -> None:
    """A batch caught in a reference cycle releases the caller's buffer when collected:
    the bytearray can be resized and the mapping closed afterwards."""
    data = bytearray(batch(records=2))
    entry = next(kcodec.read_batches(data))
    cycle: list[Any] = [entry, list(entry)]
    cycle.append(cycle)
    del entry, cycle
    gc.collect()
    data.extend(b"more")  # BufferError if an export were still held
    with mmap.mmap(-1, len(data)) as mapped:
        mapped.write(data)
        reader = kcodec.read_batches(mapped)
        loop: list[Any] = [reader, next(reader)]
        loop.append(loop)
        del reader, loop
        gc.collect()
    assert gc.garbage == []


def test_reference_counts_of_returned_objects() -> None:
    """Counted outside ``assert`` (pytest's rewriting holds the values it shows)."""
    data = batch(records=3)
    baseline = sys.getrefcount(data)
    entries = list(kcodec.read_batches(data))
    records = list(entries[0])
    values = [r.value for r in records]
    # a value: held by its record and by ``values``, plus getrefcount's argument
    value_counts = [sys.getrefcount(r.value) for r in records]
    key_counts = [sys.getrefcount(r.key) for r in records]
    record_counts = [sys.getrefcount(r) for r in records]  # + the loop variable
    batch_count = sys.getrefcount(entries[0])
    assert (value_counts, key_counts, record_counts, batch_count) == (
        [3] * 3, [2] * 3, [3] * 3, 2)
    del entries, records, values
    gc.collect()
    after = sys.getrefcount(data)
    assert after == baseline
    builder = kcodec.BatchBuilder()
    builder.append(b"v")
    built_count = sys.getrefcount(builder.build())
    assert built_count == 2  # held by the builder too (build() returns it again)
    del builder
    built = kcodec.BatchBuilder()
    built.append(b"v")
    result = built.build()
    del built
    result_count = sys.getrefcount(result)
    assert result_count == 2  # ``result`` and getrefcount's argument


def _digest(data: bytes) -> list[tuple[int, bytes | None, bytes | None, int]]:
    return [(r.offset, r.key, r.value, len(r.headers))
            for entry in kcodec.read_batches(data) for r in entry]


def test_threads_read_what_one_thread_reads() -> None:
    logs = [log_of([batch(codec, records=20, base_offset=20 * i) for i in range(50)], 4)
            for codec in CODECS]
    expected = [_digest(data) for data in logs]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            assert list(pool.map(_digest, logs)) == expected
            assert [len(r["offset"]) for r in pool.map(kcodec.decode_columns, logs)] == [
                len(e) for e in expected]


def test_decodes_on_several_threads_each_at_once() -> None:
    """Calls from several threads at once, each asking for helper threads, take helpers of
    their own and decode what one call alone decodes."""
    logs = [log_of([batch(codec, records=20, base_offset=20 * i) for i in range(50)], 4)
            for codec in CODECS]
    expected = [kcodec.decode_columns(data) for data in logs]

    def decode(data: bytes) -> dict[str, Any]:
        return kcodec.decode_columns(data, threads=3)

    with ThreadPoolExecutor(4) as pool:
        for _ in range(10):
            for got, want in zip(pool.map(decode, logs * 2), expected * 2):
                assert got.keys() == want.keys()
                assert all((got[k] == want[k]) if k == "count" else (got[k] == want[k]).all()
                           for k in want)


def test_threads_build_what_one_thread_builds() -> None:
    jobs = [(codec, i) for codec in CODECS for i in range(40)]
    expected = [batch(codec, records=30, base_offset=i) for codec, i in jobs]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda job: batch(job[0], records=30, base_offset=job[1]),
                                 jobs)) == expected


def test_columnar_threads_match_one_thread() -> None:
    data = log_of([batch(codec, records=50, base_offset=50 * i)
                   for i, codec in enumerate(CODECS * 20)], 1)
    one = kcodec.decode_columns(data, include_headers=True)
    for threads in (2, 4):
        many = kcodec.decode_columns(data, include_headers=True, threads=threads)
        assert one.keys() == many.keys()
        for name, column in one.items():
            assert (column == many[name]) if name == "count" else (column == many[name]).all()


FORGED_COUNT = """
import resource, sys
import kcodec
from kcodec.errors import InvalidRecordError
b = kcodec.BatchBuilder()
b.append(b"v", key=b"k")
data = bytearray(b.build())
data[57:61] = (2**31 - 1).to_bytes(4, "big")  # a record count the bytes cannot hold
data[17:21] = kcodec.crc32c(bytes(data[21:])).to_bytes(4, "big")
with open("/proc/self/statm") as statm:
    mapped = int(statm.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (mapped + (256 << 20),) * 2)
for decode in (lambda: [list(e) for e in kcodec.read_batches(bytes(data))],
               lambda: kcodec.decode_columns(bytes(data))):
    try:
        decode()
    except InvalidRecordError as exc:
        print(type(exc).__name__, exc.position)
"""


def test_forged_record_count_allocates_nothing_large(tmp_path: Path) -> None:
    """Under an address-space limit of 256 MiB more than the process has, a batch that
    claims 2**31 - 1 records is refused as data, never a MemoryError."""
    import subprocess
    run = subprocess.run([sys.executable, "-c", FORGED_COUNT], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)  # the installed kcodec, not the checkout's
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["InvalidRecordError", "70"] * 2, run.stdout
