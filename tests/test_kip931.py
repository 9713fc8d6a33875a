"""KIP-931's magic 3 (FORMAT.md §8.2): layout, reading on request, conversion to and from
magic 2 on every vector and real segment, and the savings it measures."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.codecs import decompress_prefix
from kcodec.errors import (
    CorruptRecordError,
    InvalidRecordError,
    KcodecError,
    UnsupportedCompressionTypeError,
)
from kcodec.kip931 import measure, scan

from .conftest import VECTORS, real_segments, resealed

NOW = 1_700_000_000_000


def content(data: bytes) -> list[tuple[Any, ...]]:
    """Every header field and record of every batch (magic aside)."""
    out = []
    for b in kcodec.read_batches(data, allow_magic3=True):
        assert isinstance(b, kcodec.RecordBatch)
        out.append(((b.base_offset, b.last_offset, b.record_count, b.max_timestamp,
                     b.producer_id, b.producer_epoch, b.base_sequence, b.partition_leader_epoch,
                     b.is_transactional, b.is_control, b.timestamp_type, b.delete_horizon_ms,
                     b.compression_id),
                    [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b]))
    return out


def zigzag(value: int) -> bytes:
    raw, out = (value << 1) ^ (value >> 63), bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    return bytes(out + bytes((raw,)))


def test_layout_is_format_8_2() -> None:
    builder = kcodec.BatchBuilder(magic=3, base_offset=10, producer_id=7, producer_epoch=2,
                                  base_sequence=5, partition_leader_epoch=4)
    builder.append(b"v0", key=b"k", timestamp=NOW)
    builder.append(None, timestamp=NOW + 300)
    data = builder.build()
    assert builder.size_in_bytes == len(data)
    base, length, epoch, magic, crc, attributes = struct.unpack_from(">qiibIh", data)
    assert (base, length, epoch, magic) == (10, len(data) - 12, 4, 3)
    assert attributes == 0x80  # ignoreMessageAttributes
    assert crc == kcodec.crc32c(data[21:])
    assert struct.unpack_from(">qhii", data, 23) == (7, 2, 5, 2)  # pid, epoch, seq, count
    varints = zigzag(1) + zigzag(NOW) + zigzag(300)
    assert data[41:41 + len(varints)] == varints
    header = 41 + len(varints)
    # records as in v2 minus the attributes byte
    first = zigzag(0) + zigzag(0) + zigzag(1) + b"k" + zigzag(2) + b"v0" + zigzag(0)
    second = zigzag(300) + zigzag(1) + zigzag(-1) + zigzag(-1) + zigzag(0)
    assert data[header:] == zigzag(len(first)) + first + zigzag(len(second)) + second
    (batch,) = kcodec.read_batches(data, allow_magic3=True)
    assert batch.magic == 3 and batch.header_size == header and batch.is_valid()
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == [
        (10, NOW, b"k", b"v0"), (11, NOW + 300, None, None)]


@pytest.mark.parametrize("delta,saved", [(63, 12), (8191, 10), (1_048_575, 8)])
def test_header_savings_match_the_table(delta: int, saved: int) -> None:
    builders = [kcodec.BatchBuilder(magic=m) for m in (2, 3)]
    for builder in builders:
        builder.append(b"x", timestamp=NOW)
        builder.append(b"y", timestamp=NOW + delta, offset=delta)
    v2, v3 = (b.build() for b in builders)
    (batch,) = kcodec.read_batches(v3, allow_magic3=True)
    assert 61 - batch.header_size == saved
    assert len(v2) - len(v3) == saved + 2  # and a byte a record


def test_magic_3_is_read_only_when_asked_for() -> None:
    with pytest.raises(CorruptRecordError, match="Invalid magic found in record: 3"):
        list(kcodec.read_batches(VECTORS["E15_magic3"]))
    builder = kcodec.BatchBuilder(magic=3)
    builder.append(b"v")
    with pytest.raises(CorruptRecordError, match="Invalid magic"):
        list(kcodec.read_batches(builder.build()))


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_and_batch_kind(codec: str) -> None:
    kinds: list[dict[str, Any]] = [
        {}, {"timestamp_type": kcodec.TimestampType.LOG_APPEND_TIME, "log_append_time": NOW},
        {"delete_horizon_ms": NOW + 5}, {"producer_id": 9, "producer_epoch": 1,
                                         "base_sequence": 2_147_483_600, "is_transactional": True}]
    for options in kinds:
        built = []
        for magic in (2, 3):
            builder = kcodec.BatchBuilder(magic=magic, compression=codec, base_offset=1 << 40,
                                          **options)
            for i in range(100):
                builder.append(b"value %d" % i * (i % 7), key=None if i % 3 else b"k%d" % i,
                               timestamp=NOW + i, headers=[("h", b"%d" % i)] if i % 2 else ())
            built.append(builder.build())
        assert content(built[0]) == content(built[1])
        if "log_append_time" in options:  # records' own timestamps are not read back
            assert content(kcodec.convert(built[1], magic=2)) == content(built[0])
            continue
        assert kcodec.convert(built[1], magic=2) == built[0]
        assert kcodec.convert(built[0], magic=3) == built[1]


def test_control_and_empty_batches() -> None:
    marker = kcodec.BatchBuilder.end_txn_marker(kcodec.ControlType.COMMIT, producer_id=5,
                                                producer_epoch=1, coordinator_epoch=3,
                                                base_offset=40, timestamp=NOW)
    leader_change = kcodec.BatchBuilder(is_control=True, base_offset=41)
    leader_change.append_control_record(b"\x00\x00\x00\x02", b"\x00\x00\x01\x02", timestamp=NOW)
    empty = kcodec.empty_batch(base_offset=42, last_offset=50, max_timestamp=NOW,
                               delete_horizon_ms=NOW + 9)
    data = marker + leader_change.build() + empty
    v3 = kcodec.convert(data, magic=3)
    assert {b.magic for b in kcodec.read_batches(v3, allow_magic3=True)} == {3}
    assert content(v3) == content(data)
    assert kcodec.convert(v3, magic=2) == data
    assert len(kcodec.empty_batch(base_offset=0, last_offset=0, max_timestamp=-1,
                                  magic=3)) == 44  # FORMAT.md: the smallest magic-3 batch


def readable_v2(data: bytes) -> bool:
    """Data that reads cleanly and holds magic-2 batches only (what magic 3 succeeds)."""
    try:
        return all(b.magic == 2 and b.records() is not None for b in kcodec.read_batches(data))
    except KcodecError:
        return False


@pytest.mark.parametrize("path", [p for p in real_segments() if readable_v2(p.read_bytes())],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_segments_round_trip(path: Path) -> None:
    data = path.read_bytes()
    v3 = kcodec.convert(data, magic=3)
    back = kcodec.convert(v3, magic=2)
    assert content(back) == content(data)
    assert kcodec.convert(back, magic=3) == v3


@pytest.mark.parametrize("name", sorted(n for n, data in VECTORS.items() if readable_v2(data)))
def test_vectors_round_trip(name: str) -> None:
    data = VECTORS[name]
    v3 = kcodec.convert(data, magic=3)
    assert content(kcodec.convert(v3, magic=2)) == content(data)


@settings(max_examples=80, deadline=None)
@given(records=st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=40)),
                                  st.one_of(st.none(), st.binary(max_size=200)),
                                  st.integers(0, 10**7), st.integers(1, 10**6)),
                        min_size=1, max_size=40),
       codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
       base_offset=st.integers(0, 2**62))
def test_round_trip_property(records: list[tuple[bytes | None, bytes | None, int, int]],
                             codec: str, base_offset: int) -> None:
    built = []
    for magic in (2, 3):
        builder = kcodec.BatchBuilder(magic=magic, compression=codec, base_offset=base_offset)
        offset = base_offset
        for key, value, delta, gap in records:
            builder.append(value, key=key, timestamp=NOW + delta, offset=offset)
            offset += gap
        built.append(builder.build())
    assert content(built[0]) == content(built[1])
    assert kcodec.convert(built[1], magic=2) == built[0]


def test_malformed_headers_are_corrupt() -> None:
    builder = kcodec.BatchBuilder(magic=3)
    builder.append(b"v", timestamp=NOW)
    data = bytearray(builder.build())
    short = data[:43]
    short[8:12] = struct.pack(">i", 31)
    with pytest.raises(CorruptRecordError, match="minimum allowed overhead 44"):
        list(kcodec.read_batches(bytes(short), allow_magic3=True, validate_crc=False))
    unterminated = data[:41] + b"\xff" * 12
    unterminated[8:12] = struct.pack(">i", len(unterminated) - 12)
    with pytest.raises(CorruptRecordError, match="varints") as info:
        list(kcodec.read_batches(bytes(unterminated), allow_magic3=True, validate_crc=False))
    assert info.value.position is not None and info.value.position >= 41
    data[21] |= 0x01  # attribute bit 8 on ordinary records: not a headers-first region
    with pytest.raises(InvalidRecordError):
        list(next(kcodec.read_batches(bytes(data), allow_magic3=True, validate_crc=False)))


def test_measured_savings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kcodec.cli import main
    from kcodec.segments import write_partition
    batches = []
    for b in range(3):
        builder = kcodec.BatchBuilder(compression="lz4", base_offset=b * 100)
        for i in range(100):
            builder.append(b'{"n": %d}' % i, timestamp=NOW + i * 10)
        batches.append(builder.build())
    savings = measure(b"".join(batches))
    assert (savings.batches, savings.records) == (3, 300)
    assert savings.header_bytes_saved == 3 * 10  # deltas 99 and 990: two-byte varints
    assert savings.v2_uncompressed - savings.v3_uncompressed == 30 + 300
    assert 0 < savings.v2_compressed - savings.v3_compressed
    write_partition(tmp_path / "t-0", batches)
    assert main(["stats", "--kip931", "--json", str(tmp_path)]) == 0
    overall = json.loads(capsys.readouterr().out)["overall"]
    assert overall["header_bytes_saved_per_batch"] == 10.0
    assert overall["record_bytes_saved_per_record"] == 1.0


def only_batch(data: bytes) -> kcodec.RecordBatch:
    (batch,) = kcodec.read_batches(data, allow_magic3=True)
    assert isinstance(batch, kcodec.RecordBatch)
    return batch


def headers_first_pair(codec: str, count: int = 300) -> tuple[bytes, bytes]:
    built = []
    for headers_first in (False, True):
        builder = kcodec.BatchBuilder(magic=3, compression=codec, base_offset=7,
                                      headers_first=headers_first)
        for i in range(count):
            builder.append(None if i % 11 == 0 else b"value %d " % i * (i % 40),
                           key=None if i % 7 == 0 else b"key-%d" % i, timestamp=NOW + i,
                           headers=[("h", b"%d" % i), ("n", None)] if i % 3 else ())
        built.append(builder.build())
    return built[0], built[1]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_headers_first_reads_as_ordinary_records(codec: str) -> None:
    plain, first = headers_first_pair(codec)
    batch = only_batch(first)
    assert batch.attributes & 0x100 and batch.is_valid()
    assert content(first) == content(plain)
    assert scan(batch) == scan(only_batch(plain))
    meta = scan(batch)[14]
    assert (meta.offset, meta.key, meta.value_size) == (21, None, len(b"value 14 " * 14))
    assert kcodec.convert(first, magic=2) == kcodec.convert(plain, magic=2)


@pytest.mark.parametrize("codec", ["gzip", "zstd", "lz4", "snappy"])
def test_headers_first_scan_decompresses_only_the_metadata(codec: str) -> None:
    _, first = headers_first_pair(codec, 2000)
    batch = only_batch(first)
    section = batch.buffer[batch.header_size:]
    whole = kcodec.codecs.decompress(codec, section)
    prefix = decompress_prefix(codec, section, 1 << 16)
    assert 1 << 16 <= len(prefix) < len(whole) // 4 and whole.startswith(prefix)
    assert len(scan(batch)) == 2000


@pytest.mark.parametrize("codec", ["none", "gzip", "lz4", "zstd"])
def test_columns_of_magic_3(codec: str) -> None:
    pytest.importorskip("pyarrow")
    plain, first = headers_first_pair(codec)
    reference = kcodec.BatchBuilder(compression=codec, base_offset=7)
    for r in next(kcodec.read_batches(plain, allow_magic3=True)):
        reference.append(r.value, key=r.key, timestamp=r.timestamp, headers=r.headers)
    expected = kcodec.decode_arrow(reference.build() * 2, include_headers=True)
    scan_columns = ["offset", "timestamp", "key", "headers"]
    for data in (plain * 2, first * 2):
        for threads in (1, 2):
            table = kcodec.decode_arrow(data, include_headers=True, allow_magic3=True,
                                        threads=threads)
            assert table.equals(expected)
            viewed = kcodec.decode_arrow(data, include_headers=True, allow_magic3=True,
                                         threads=threads, binary_view=True)
            viewed.validate(full=True)
            assert viewed.cast(expected.schema).equals(expected)
            scanned = kcodec.decode_arrow(data, columns=scan_columns, allow_magic3=True,
                                          threads=threads)
            assert scanned.equals(expected.select(scan_columns))
    magics = kcodec.decode_columns(first, columns=["magic"], allow_magic3=True)["magic"]
    assert set(magics.tolist()) == {3}
    with pytest.raises(CorruptRecordError, match="Invalid magic"):
        kcodec.decode_columns(first)


def test_malformed_headers_first_regions() -> None:
    from kcodec._headers_first import from_headers_first, scan_metadata
    plain, first = headers_first_pair("none", 5)
    (batch,) = kcodec.read_batches(first, allow_magic3=True)
    region = bytes(batch.buffer[batch.header_size:])
    for broken in (region[:-1], region + b"x", b"\x7f" + region[1:], b"\xff" * 6):
        with pytest.raises(InvalidRecordError):
            from_headers_first(broken, 5, False, False)
    with pytest.raises(InvalidRecordError):
        from_headers_first(region, 6, False, False)
    with pytest.raises(InvalidRecordError):
        scan_metadata(region[:20], 5, False, False, 0, 0, False, 0)
    with pytest.raises(ValueError, match="magic-3 experiment"):
        kcodec.BatchBuilder(headers_first=True)


def headers_first_claiming(codec: str, meta_length: int, stream_size: int) -> bytes:
    """A one-record headers-first batch whose compressed section starts with the varint
    ``meta_length`` and then holds ``stream_size`` zero bytes."""
    payload = zigzag(meta_length) + bytes(stream_size)
    section = kcodec.codecs.compress(codec, payload)
    header = bytearray(41)
    struct.pack_into(">qiib", header, 0, 0, 0, -1, 3)
    struct.pack_into(">hqhii", header, 21, 0x180 | {"gzip": 1, "zstd": 4}[codec], -1, -1, -1, 1)
    data = header + zigzag(0) + zigzag(NOW) + zigzag(0) + section
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">I", data, 17, kcodec.crc32c(bytes(data[21:])))
    return bytes(data)


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_scan_decompresses_within_the_limit(codec: str) -> None:
    """A meta block claiming more than the decompression limit stops the scan (and the
    columns without values) at the limit, as reading the records does."""
    from kcodec.errors import DecompressionLimitError
    data = headers_first_claiming(codec, 8 << 20, 4 << 20)
    batch = only_batch(data)
    section = batch.buffer[batch.header_size:]
    with pytest.raises(DecompressionLimitError):
        decompress_prefix(codec, section, 8 << 20, max_size=1 << 20)
    assert len(decompress_prefix(codec, section, 1000, max_size=1 << 20)) == 1000
    with pytest.raises(DecompressionLimitError) as info:
        scan(batch, max_decompressed_size=1 << 20)
    assert info.value.position == batch.header_size
    with pytest.raises(DecompressionLimitError):
        kcodec.decode_columns(data, columns=["offset", "key"], allow_magic3=True,
                              max_decompressed_size=1 << 20)
    default = kcodec.codecs.get_max_decompressed_size()
    kcodec.codecs.set_max_decompressed_size(1 << 20)
    try:
        for read in (lambda: scan(batch), batch.records):
            with pytest.raises(DecompressionLimitError):
                read()
    finally:
        kcodec.codecs.set_max_decompressed_size(default)


def test_scans_agree_with_the_records() -> None:
    """Errors of a scan name the batch's records section; any negative value length is a
    null value; a gzip section of two members is read whole."""
    import gzip
    _, first = headers_first_pair("none", 3)
    broken = bytearray(first)
    broken[only_batch(first).header_size] = 0x01   # metaLength -1
    struct.pack_into(">I", broken, 17, kcodec.crc32c(bytes(broken[21:])))
    batch = only_batch(bytes(broken))
    for read in (batch.records, lambda: scan(batch)):
        with pytest.raises(InvalidRecordError) as info:
            read()
        assert info.value.position == batch.header_size
    builder = kcodec.BatchBuilder(magic=3, headers_first=True)
    builder.append(None, key=b"k", timestamp=NOW)
    data = bytearray(builder.build())
    at = data.index(b"\x02k\x01") + 2   # the value length, -1
    data[at] = 0x7F                     # -64
    struct.pack_into(">I", data, 17, kcodec.crc32c(bytes(data[21:])))
    batch = only_batch(bytes(data))
    assert batch.records()[0].value is None and scan(batch)[0].value_size == -1
    _, first = headers_first_pair("none", 30)
    batch = only_batch(first)
    region = bytes(batch.buffer[batch.header_size:])
    members = gzip.compress(region[:50]) + gzip.compress(region[50:])
    two = bytearray(first[:batch.header_size]) + members
    struct.pack_into(">h", two, 21, batch.attributes | 1)
    struct.pack_into(">i", two, 8, len(two) - 12)
    struct.pack_into(">I", two, 17, kcodec.crc32c(bytes(two[21:])))
    assert scan(only_batch(bytes(two))) == scan(batch)


def three_ways(data: bytes, batch: kcodec.RecordBatch, **options: Any) -> list[KcodecError]:
    """What the records, the columns without values and a scan raise."""
    errors = []
    for read in (batch.records, lambda: scan(batch),
                 lambda: kcodec.decode_columns(data, columns=["offset", "key"], allow_magic3=True,
                                               **options)):
        with pytest.raises(KcodecError) as info:
            read()
        errors.append(info.value)
    return errors


def test_magic_3_errors_name_their_bytes_as_the_records_do() -> None:
    one = kcodec.BatchBuilder(magic=3)
    one.append(b"v", timestamp=NOW)
    first = one.build()
    negative = bytearray(first)
    struct.pack_into(">i", negative, 37, -1)   # recordsCount, at byte 37 in magic 3
    data = first + resealed(negative)
    batch = list(kcodec.read_batches(data, allow_magic3=True))[1]
    assert isinstance(batch, kcodec.RecordBatch)
    for error in three_ways(data, batch):
        assert "record count -1" in str(error) and error.position == len(first) + 37
    # an uncompressed headers-first region: the broken record's byte, not the section's
    builder = kcodec.BatchBuilder(magic=3, headers_first=True)
    for i in range(6):
        builder.append(b"value-%d" % i, key=b"key-%d" % i, timestamp=NOW + i)
    broken = bytearray(builder.build())
    broken[bytes(broken).index(b"\x0akey-4")] = 0x7E
    data = resealed(broken)
    batch = only_batch(data)
    rows, *others = three_ways(data, batch)
    assert rows.position is not None and batch.header_size < rows.position < len(data)
    assert "records region" not in str(rows)
    assert [(type(e), e.position) for e in others] == [(type(rows), rows.position)] * 2
    unknown = bytearray(builder.build())
    unknown[22] |= 6   # codec id 6, in the attributes' low byte
    data = resealed(unknown)
    for error in three_ways(data, only_batch(data)):
        assert isinstance(error, UnsupportedCompressionTypeError) and error.position == 21


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_a_cut_headers_first_stream_is_the_codecs_error_every_way(codec: str) -> None:
    builder = kcodec.BatchBuilder(magic=3, compression=codec, headers_first=True)
    for i in range(200):
        builder.append(b"value-%d" % i * 20, key=b"key-%d" % i, timestamp=NOW + i)
    full = builder.build()
    header = only_batch(full).header_size
    data = resealed(full[:header + 20])
    errors = three_ways(data, only_batch(data))
    assert len({(type(e), e.error_code, e.position) for e in errors}) == 1, errors


def test_scans_check_the_count_and_strictness_as_the_records() -> None:
    builder = kcodec.BatchBuilder(magic=3, headers_first=True)
    builder.append(b"v", key=b"k", timestamp=NOW)
    builder.append(b"w", key=b"k", timestamp=NOW)
    built = builder.build()
    negative = bytearray(built)
    struct.pack_into(">i", negative, 37, -1)
    data = resealed(negative)
    for error in three_ways(data, only_batch(data)):
        assert "record count -1" in str(error) and error.position == 37
    header = only_batch(built).header_size
    region = built[header:]   # metaLength, then the first entry's timestampDelta (00)
    lax = resealed(built[:header] + bytes([region[0] + 2]) + b"\x80\x00" + region[2:])
    assert len(scan(only_batch(lax))) == 2
    (strict,) = kcodec.read_batches(lax, allow_magic3=True, strict=True)
    assert isinstance(strict, kcodec.RecordBatch)
    for error in three_ways(lax, strict, strict=True):
        assert "not minimal" in str(error)


def test_a_scan_checks_every_entry_before_making_any() -> None:
    """A count far past the meta block's entries fails before a record's metadata is made
    (12 000 five-byte entries of zeros here: none is made)."""
    import tracemalloc
    meta = bytes(60_000)
    header = bytearray(41)
    struct.pack_into(">qiib", header, 0, 0, 0, -1, 3)
    struct.pack_into(">hqhii", header, 21, 0x180, -1, -1, -1, 2**31 - 1)
    data = resealed(header + zigzag(0) + zigzag(NOW) + zigzag(0) + zigzag(len(meta)) + meta)
    batch = only_batch(data)
    tracemalloc.start()
    try:
        with pytest.raises(InvalidRecordError, match="ends inside"):
            scan(batch)
        assert tracemalloc.get_traced_memory()[1] < 100_000
    finally:
        tracemalloc.stop()


def test_a_scan_times_log_append_time_records_with_the_batchs_time() -> None:
    builder = kcodec.BatchBuilder(magic=3, headers_first=True,
                                  timestamp_type=kcodec.TimestampType.LOG_APPEND_TIME,
                                  log_append_time=NOW + 9999)
    for i in range(3):
        builder.append(b"v%d" % i, key=b"k", timestamp=NOW + i)
    batch = only_batch(builder.build())
    assert [m.timestamp for m in scan(batch)] == [r.timestamp for r in batch.records()] == [
        NOW + 9999] * 3
