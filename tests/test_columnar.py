"""Columnar decoding equals the row API, on every vector, real segment and generated input."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import ControlType
from kcodec.errors import CompressionError, DecompressionLimitError, InvalidRecordError, KcodecError

from .conftest import UNDER_ASAN, VECTORS, real_segments

TS = 1700000000000


def rows(data: bytes, include_control: bool = False) -> list[tuple[Any, ...]]:
    out = []
    for entry in kcodec.read_batches(data):
        if entry.is_control and not include_control:
            continue
        for r in entry:
            out.append((r.offset, r.timestamp, r.key, r.value, r.headers))
    return out


def column_rows(cols: dict[str, Any]) -> list[tuple[Any, ...]]:
    out = []
    for i in range(cols["count"]):
        def span(name: str, j: int) -> bytes | None:
            if not cols[f"{name}_valid"][j]:
                return None
            lo, hi = cols[f"{name}_offsets"][j], cols[f"{name}_offsets"][j + 1]
            return bytes(cols[f"{name}_data"][lo:hi])
        headers = []
        for h in range(cols["header_offsets"][i], cols["header_offsets"][i + 1]):
            lo, hi = cols["header_key_offsets"][h], cols["header_key_offsets"][h + 1]
            key = cols["header_key_data"][lo:hi].tobytes().decode("utf-8", "replace")
            headers.append((key, span("header_value", h)))
        value = span("value", i) if "value_valid" in cols else None   # (a scan: None)
        out.append((int(cols["offset"][i]), int(cols["timestamp"][i]), span("key", i), value,
                    headers))
    return out


def chunked_rows(chunks: Any) -> list[tuple[Any, ...]]:
    """The rows of iter_columns' chunks, one after another."""
    return [row for chunk in chunks for row in column_rows(chunk)]


def arrow_rows(table: Any) -> list[tuple[Any, ...]]:
    out = []
    for row in table.to_pylist():
        ts = row["timestamp"]
        millis = None if ts is None else round(ts.timestamp() * 1000)
        out.append((row["offset"], millis, row["key"], row["value"],
                    [(h["key"], h["value"]) for h in row["headers"]]))
    return out


def views(data: Any, **options: Any) -> Any:
    """decode_arrow with binary_view columns, checked against Arrow's own validation."""
    table = kcodec.decode_arrow(data, binary_view=True, **options)
    table.validate(full=True)
    return table


def readable(name: str) -> bool:
    try:
        rows(VECTORS[name])
        return True
    except KcodecError:
        return False


GOOD_VECTORS = sorted(name for name in VECTORS if readable(name))


@pytest.mark.parametrize("name", GOOD_VECTORS)
def test_vectors_equal_the_row_api(name: str) -> None:
    data = VECTORS[name]
    expected = rows(data)
    assert column_rows(kcodec.decode_columns(data, include_headers=True)) == expected
    assert chunked_rows(kcodec.iter_columns(data, include_headers=True, chunk_records=7)
                        ) == expected
    assert arrow_rows(kcodec.decode_arrow(data, include_headers=True)) == expected
    assert arrow_rows(views(data, include_headers=True)) == expected


@pytest.mark.parametrize("path", real_segments(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_segments_equal_the_row_api(path: Any) -> None:
    data = path.read_bytes()
    expected = rows(data)
    assert column_rows(kcodec.decode_columns(data, include_headers=True)) == expected
    assert column_rows(kcodec.decode_columns(data, include_headers=True, threads=2)) == expected
    assert chunked_rows(kcodec.iter_columns(data, include_headers=True, threads=2,
                                            chunk_records=100)) == expected
    assert arrow_rows(views(data, include_headers=True)) == expected


@pytest.mark.parametrize("name", sorted(set(VECTORS) - set(GOOD_VECTORS)))
def test_bad_vectors_raise_what_the_row_api_raises(name: str) -> None:
    with pytest.raises(KcodecError) as ordinary:
        rows(VECTORS[name])
    for decode in (kcodec.decode_columns, kcodec.decode_arrow):
        with pytest.raises(KcodecError) as caught:
            decode(VECTORS[name], include_headers=True)
        assert (type(caught.value), str(caught.value)) == (type(ordinary.value),
                                                           str(ordinary.value))


records_strategy = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=200)),
              st.integers(-1, 2**42),
              st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=10))),
                       max_size=3)),
    min_size=1, max_size=40)


def log_of_batches(batches: list[tuple[list[Any], str]]) -> bytes:
    """A log of consecutive batches, each of the given (key, value, timestamp, headers)
    records and codec."""
    data = b""
    offset = 0
    for records, codec in batches:
        builder = kcodec.BatchBuilder(compression=codec, base_offset=offset)
        for key, value, ts, headers in records:
            builder.append(value, key=key, timestamp=ts, headers=headers)
        data += builder.build()
        offset = builder.next_offset
    return data


@settings(max_examples=80, deadline=None)
@given(st.lists(records_strategy, min_size=1, max_size=5),
       st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]), st.integers(1, 3))
def test_generated_batches(batches: list[list[Any]], codec: str, threads: int) -> None:
    data = log_of_batches([(records, codec) for records in batches])
    expected = rows(data)
    got = kcodec.decode_columns(data, include_headers=True, metadata=True, threads=threads)
    assert column_rows(got) == expected
    assert got["compression"].tolist() == [kcodec.Compression.parse(codec)] * len(expected)
    assert chunked_rows(kcodec.iter_columns(data, include_headers=True, threads=threads,
                                            chunk_records=7)) == expected
    assert arrow_rows(kcodec.decode_arrow(data, include_headers=True, threads=threads,
                                          chunk_records=7)) == expected
    assert arrow_rows(views(data, include_headers=True, threads=threads,
                            chunk_records=7)) == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(records_strategy,
                          st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"])),
                min_size=1, max_size=8),
       st.sampled_from([1, 2]))
def test_generated_logs_of_mixed_codecs(batches: list[tuple[list[Any], str]],
                                        threads: int) -> None:
    """Batches of every codec in one log: queued frames, batches decompressed at once and
    uncompressed ones decode in order, in every layout."""
    data = log_of_batches(batches)
    expected = rows(data)
    got = kcodec.decode_columns(data, include_headers=True, threads=threads)
    assert column_rows(got) == expected
    assert arrow_rows(kcodec.decode_arrow(data, include_headers=True, threads=threads)) == expected
    assert arrow_rows(views(data, include_headers=True, threads=threads)) == expected


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["gzip", "snappy", "lz4", "zstd"]),
       st.lists(st.binary(max_size=300), min_size=1, max_size=20),
       st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=3),
       st.one_of(st.none(), st.integers(0, 1 << 16)), st.sampled_from([1, 2]))
def test_damaged_compressed_batches_fail_or_decode_as_rows_do(
        codec: str, values: list[bytes], changes: list[tuple[int, int]], cut: int | None,
        threads: int) -> None:
    """A batch whose compressed section is damaged (bytes changed, or cut short) and whose
    CRC still matches, twice over: the columns hold what the rows hold, or decoding fails
    with the row reader's error at its position."""
    from kcodec import codecs
    plain = _batch_of_values(0, values)
    section = bytearray(codecs.compress(codec, plain[61:]))
    for at, byte in changes:
        section[at % len(section)] = byte
    if cut is not None:
        section = section[:cut % (len(section) + 1)]
    batch = _batch_of_section(plain[:61], bytes(section), codec, len(values), 0)
    log = batch + batch
    try:
        expected: Any = [(r.offset, r.key, r.value) for b in kcodec.read_batches(log) for r in b]
    except KcodecError as error:
        expected = (type(error), error.position)
    try:
        got = kcodec.decode_columns(log, threads=threads)
        values_got = [bytes(got["value_data"][got["value_offsets"][i]:got["value_offsets"][i + 1]])
                      if got["value_valid"][i] else None for i in range(got["count"])]
        keys_got = [bytes(got["key_data"][got["key_offsets"][i]:got["key_offsets"][i + 1]])
                    if got["key_valid"][i] else None for i in range(got["count"])]
        result: Any = list(zip(got["offset"].tolist(), keys_got, values_got))
    except KcodecError as error:
        result = (type(error), error.position)
    assert result == expected


def transactional_log() -> bytes:
    """pid 1 commits offsets 0-1, pid 2 aborts 2-3, plain data at 6."""
    def data(pid: int, base: int) -> bytes:
        b = kcodec.BatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0,
                                base_sequence=0, is_transactional=True)
        b.append(b"p%d-a" % pid, timestamp=TS)
        b.append(b"p%d-b" % pid, timestamp=TS)
        return b.build()
    def marker(kind: ControlType, pid: int, offset: int) -> bytes:
        return kcodec.BatchBuilder.end_txn_marker(kind, producer_id=pid, producer_epoch=0,
                                                  coordinator_epoch=0, base_offset=offset,
                                                  timestamp=TS)
    plain = kcodec.BatchBuilder(base_offset=6)
    plain.append(b"plain", timestamp=TS)
    return (data(1, 0) + data(2, 2) + marker(ControlType.COMMIT, 1, 4)
            + marker(ControlType.ABORT, 2, 5) + plain.build())


def test_control_records_and_read_committed() -> None:
    log = transactional_log()

    def values(cols: dict[str, Any]) -> list[bytes]:
        offsets, data = cols["value_offsets"], cols["value_data"]
        return [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(cols["count"])]
    assert values(kcodec.decode_columns(log)) == [b"p1-a", b"p1-b", b"p2-a", b"p2-b", b"plain"]
    committed = kcodec.decode_columns(log, aborted_transactions=[(2, 2)])
    assert values(committed) == [b"p1-a", b"p1-b", b"plain"]
    with_control = kcodec.decode_columns(log, include_control=True, metadata=True)
    assert with_control["count"] == 7 and with_control["is_control"].sum() == 2


def test_select_batches_as_a_consumer_reads() -> None:
    """select_batches picks what a consumer reads: no control batches unless asked for,
    no aborted transactional batches given the aborted list, no batch wholly outside the
    ranges (whose bounds may lie past int64); and it takes nothing but framed entries."""
    log = transactional_log()

    def picked(**options: Any) -> list[int]:
        return [b.base_offset for b in kcodec.columnar.select_batches(
            kcodec.read_batches(log), **options)]
    assert picked() == [0, 2, 6]
    assert picked(include_control=True) == [0, 2, 4, 5, 6]
    assert picked(aborted_transactions=[(2, 2)]) == [0, 6]
    assert picked(aborted_transactions=[(2, 2)], include_control=True) == [0, 4, 5, 6]
    assert picked(offsets=(2, 2**64)) == [2, 6]
    assert picked(offsets=(-(2**70), 2)) == [0]
    assert picked(timestamps=(TS + 1, 2**64)) == []
    with pytest.raises(TypeError, match="read_batches"):
        list(kcodec.columnar.select_batches([b"not a batch"]))  # type: ignore[list-item]


def test_batches_left_out_are_checked_as_a_consumer_checks_them() -> None:
    """Control batches and aborted transactional batches are left out, but a consumer
    receives them and checks their CRCs: so does the decoder (the row reader's error, for
    the first bad batch). A batch outside the offset range is not read at all. Control
    records asked for are checked as the row reader checks them."""
    log = transactional_log()
    position = {b.base_offset: b.position for b in kcodec.read_batches(log)}

    def damaged(*bases: int) -> bytes:
        out = bytearray(log)
        for base in bases:
            out[position[base] + 40] ^= 1   # in the batch's max timestamp, under its CRC
        return bytes(out)

    def fails_as_rows(data: bytes, at: int, **options: Any) -> None:
        with pytest.raises(kcodec.errors.ChecksumError) as ordinary:
            list(kcodec.read_batches(data))
        assert ordinary.value.position == at
        for threads in (1, 2):
            for decode in (kcodec.decode_columns, kcodec.decode_arrow):
                with pytest.raises(kcodec.errors.ChecksumError) as caught:
                    decode(data, threads=threads, **options)
                assert str(caught.value) == str(ordinary.value)
    fails_as_rows(damaged(2), position[2], aborted_transactions=[(2, 2)])
    fails_as_rows(damaged(4), position[4])
    fails_as_rows(damaged(5), position[5], aborted_transactions=[(2, 2)])
    fails_as_rows(damaged(0, 4), 0)
    unchecked = kcodec.decode_columns(damaged(2, 4, 5), aborted_transactions=[(2, 2)],
                                      validate_crc=False)
    assert unchecked["count"] == 3
    assert kcodec.decode_columns(damaged(0, 2), offsets=(6, 7))["count"] == 1
    bad_marker = bytearray(log)
    bad_marker[position[4] + 66] = 0xFF   # its control key's version, negative
    bad_marker[position[4] + 17:position[4] + 21] = kcodec.crc32c(
        bytes(bad_marker[position[4] + 21:position[5]])).to_bytes(4, "big")
    with pytest.raises(kcodec.errors.InvalidRecordError) as ordinary:
        [r for b in kcodec.read_batches(bytes(bad_marker)) for r in b]
    with pytest.raises(kcodec.errors.InvalidRecordError) as caught:
        kcodec.decode_columns(bytes(bad_marker), include_control=True)
    assert str(caught.value) == str(ordinary.value)
    assert kcodec.decode_columns(bytes(bad_marker))["count"] == 5


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_views_of_small_compressed_batches_share_an_arena(codec: str) -> None:
    """The decompressed records of small batches share buffers (a buffer each cost more
    than decoding the batch): LZ4 and snappy ones are decompressed into one buffer a run of
    them, gzip and zstd ones copied into arenas; the views point there, among batches that
    keep buffers of their own (large ones) or point into the input (uncompressed ones),
    from one thread and two, and outlive the decode."""
    log = bytearray()
    base = 0
    for b in range(400):
        count = 1 + b % 7
        compression = "none" if b % 50 == 7 else codec
        builder = kcodec.BatchBuilder(base_offset=base, compression=compression)
        for i in range(count if b % 100 != 3 else 300):   # every hundredth: ~100 KiB
            value = None if i % 5 == 4 else b"v%d-%d " % (base + i, b) * (1 + i % 40)
            builder.append(value, key=b"key-%d" % i * (i % 3), timestamp=TS + i,
                           headers=[("h", b"%d" % i)] if i % 2 else [])
            base += 1
        log += builder.build()
    data = bytes(log)
    expected = rows(data)
    for threads in (1, 2):
        table = views(data, include_headers=True, threads=threads)
        assert arrow_rows(table) == expected
        # a few arenas, a buffer for each large batch, the input: not one buffer a batch
        for chunk in table.column("value").chunks:
            assert len(chunk.buffers()) < 40
    del data, log
    for _ in range(3):   # the pool's spares taken and written again
        views(mixed_log(), include_headers=True)
    assert arrow_rows(table) == expected


def test_many_small_batches_start_no_garbage_collection() -> None:
    """Batches are not tracked by the garbage collector (they can form no cycle), so a log
    of many small batches, held as a list of entries while it is decoded, starts no
    collection: each used to traverse every batch held."""
    import gc
    log = b"".join(_batch_of(i, 1, 20) for i in range(20000))
    assert not gc.is_tracked(next(iter(kcodec.read_batches(log))))
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])
    gc.callbacks.append(count)
    try:
        cols = kcodec.decode_columns(log)
        table = kcodec.decode_arrow(log, binary_view=True)
    finally:
        gc.callbacks.remove(count)
    assert cols["count"] == table.num_rows == 20000
    assert collections == []


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_ranges_and_projection(codec: str) -> None:
    """Also where a compressed batch's values are moved into place, past records left out."""
    builder = kcodec.BatchBuilder(compression=codec)
    for i in range(100):
        builder.append(b"v%d" % i * (i % 7), key=b"k%d" % i, timestamp=TS + i)
    data = builder.build()
    cols = kcodec.decode_columns(data, offsets=(10, 20), timestamps=(TS + 15, TS + 100),
                                 include_headers=True)
    assert cols["offset"].tolist() == list(range(15, 20))
    assert column_rows(cols) == [(i, TS + i, b"k%d" % i, b"v%d" % i * (i % 7), [])
                                 for i in range(15, 20)]
    scan = kcodec.decode_columns(data, columns=["offset", "timestamp", "key"])
    assert "value_data" not in scan and scan["key_data"].tobytes().startswith(b"k0k1k2")
    table = kcodec.decode_arrow(data, columns=["offset", "value"], topic="t")
    assert table.column_names == ["offset", "value"]
    assert table.column("value").to_pylist() == [b"v%d" % i * (i % 7) for i in range(100)]
    with pytest.raises(ValueError):
        kcodec.decode_columns(data, columns=["nope"])


@pytest.mark.parametrize("magic,codec", [(0, "none"), (0, "gzip"), (0, "lz4"), (1, "none"),
                                         (1, "gzip"), (1, "snappy"), (1, "lz4")])
def test_legacy_ranges(magic: int, codec: str) -> None:
    """A legacy wrapper's offset is its last record's: records before a range's end are
    kept even when the wrapper's offset lies past it."""
    builder = kcodec.BatchBuilder(magic=magic, compression=codec, base_offset=5)
    for i in range(5):
        builder.append(b"v%d" % i, key=b"k%d" % i, timestamp=TS + i)
    data = builder.build()
    everything = rows(data)
    for lo, hi in [(0, 7), (6, 8), (9, 100), (0, 100), (10, 20), (0, 5)]:
        cols = kcodec.decode_columns(data, offsets=(lo, hi), include_headers=True)
        assert column_rows(cols) == [r for r in everything if lo <= r[0] < hi], (lo, hi)
    if magic == 1:
        cols = kcodec.decode_columns(data, timestamps=(TS + 3, TS + 100))
        assert cols["offset"].tolist() == [8, 9]
        assert kcodec.decode_columns(data, timestamps=(TS + 5, TS + 100))["count"] == 0


def _legacy_wrapper(inner: bytes, last_offset: int, value: bytes | None = None) -> bytes:
    """A magic-1 gzip wrapper (CreateTime) around the message set ``inner``: its value one
    gzip member, or ``value`` when given."""
    import gzip
    import struct
    import zlib
    value = gzip.compress(inner) if value is None else value
    body = struct.pack(">bbqii", 1, 1, TS, -1, len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", last_offset, len(message)) + message


def test_legacy_inner_crcs_checked_in_the_decoding_pass() -> None:
    builder = kcodec.BatchBuilder(magic=1)
    for i in range(4):
        builder.append(b"value %d" % i, key=b"k", timestamp=TS)
    inner = bytearray(builder.build())
    inner[-1] ^= 1   # the last inner message's value: its CRC no longer matches
    data = _legacy_wrapper(bytes(inner), 103)
    with pytest.raises(kcodec.errors.ChecksumError) as caught:
        kcodec.decode_columns(data)
    assert caught.value.position == 0
    with pytest.raises(kcodec.errors.ChecksumError):
        kcodec.decode_arrow(data)
    cols = kcodec.decode_columns(data, validate_crc=False, include_headers=True)
    assert cols["offset"].tolist() == [100, 101, 102, 103]
    assert column_rows(cols) == [(r.offset, r.timestamp, r.key, r.value, r.headers)
                                 for b in kcodec.read_batches(data, validate_crc=False)
                                 for r in b]
    outer = bytearray(_legacy_wrapper(bytes(builder.build()), 103))
    outer[-1] ^= 1   # the gzip trailer: the wrapper's own CRC fails first
    with pytest.raises(kcodec.errors.ChecksumError):
        kcodec.decode_columns(outer)


@pytest.mark.parametrize("shape", ["one member", "two members", "trailing bytes", "large"])
def test_legacy_gzip_wrappers_of_every_member_shape(shape: str) -> None:
    """A small wrapper of one gzip member is inflated in one call (by the columnar decoder
    from C, also when it is over 1 KiB but inflates to at most 16 KiB), any other by the
    full path: rows and columns read the same records either way, and stop at the same
    limit."""
    import gzip
    import random
    builder = kcodec.BatchBuilder(magic=1)
    for i in range(20):
        value = random.Random(i).randbytes(100) if shape == "large" else b"value %d" % i
        builder.append(value, key=b"k", timestamp=TS)
    inner = builder.build()
    half = sum(entry.size for entry in list(kcodec.read_batches(inner))[:10])
    value = {"one member": gzip.compress(inner),
             "two members": gzip.compress(inner[:half]) + gzip.compress(inner[half:]),
             "trailing bytes": gzip.compress(inner) + b"GARBAGE",
             "large": gzip.compress(inner, 1)}[shape]
    assert (len(value) < 1024) == (shape != "large")   # (what the row reader gives zlib)
    data = _legacy_wrapper(inner, 119, value)
    cols = kcodec.decode_columns(data, include_headers=True)
    assert column_rows(cols) == [(r.offset, r.timestamp, r.key, r.value, r.headers)
                                 for b in kcodec.read_batches(data) for r in b]
    assert cols["offset"].tolist() == list(range(100, 120))
    for read in (kcodec.decode_columns,
                 lambda d, **kw: [list(b) for b in kcodec.read_batches(d, **kw)]):
        read(data, max_decompressed_size=len(inner))
        with pytest.raises(DecompressionLimitError) as caught:
            read(data, max_decompressed_size=len(inner) - 1)
        assert caught.value.position == 0


def _wrapper_of(magic: int, codec: str, inner: bytes, last_offset: int) -> bytes:
    """A legacy wrapper (CreateTime, null key) of the message set ``inner``, compressed."""
    import struct
    import zlib
    value = kcodec.compress(codec, inner, magic=magic)
    body = (struct.pack(">bb", magic, int(kcodec.Compression.parse(codec)))
            + (struct.pack(">q", TS) if magic else b"") + struct.pack(">ii", -1, len(value))
            + value)
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", last_offset, len(message)) + message


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["lz4", "snappy"])
def test_small_legacy_wrappers_decoded_in_one_pass_keep_every_verdict(codec: str,
                                                                     magic: int) -> None:
    """Small LZ4 and snappy wrappers are queued with the entries around them and
    decompressed in the run's pass, without the GIL; a wrapper that pass cannot decide (a
    bad CRC, an inner message's too, a limit) is given the ordinary path's verdict, which
    is the row reader's."""
    def messages(base: int) -> bytes:   # (magic 1 wrappers: inner offsets from 0)
        builder = kcodec.BatchBuilder(magic=magic, base_offset=base if magic == 0 else 0)
        for i in range(10):
            builder.append(b"value %d" % (base + i), key=b"k", timestamp=TS + i)
        return builder.build()
    wrappers = [_wrapper_of(magic, codec, messages(base), base + 9) for base in range(0, 100, 10)]
    plain = kcodec.BatchBuilder(magic=magic, base_offset=100)
    plain.append(b"plain", timestamp=TS)
    log = b"".join(wrappers[:5]) + plain.build() + b"".join(wrappers[5:])
    expected = rows(log)
    assert [r[0] for r in expected] == list(range(101))[:50] + [100] + list(range(50, 100))
    for threads in (1, 2):
        assert column_rows(kcodec.decode_columns(log, include_headers=True,
                                                 threads=threads)) == expected
        assert arrow_rows(views(log, include_headers=True, threads=threads)) == expected
    before = b"".join(wrappers[:3])
    inner = bytearray(messages(30))
    inner[-1] ^= 1   # the last inner message's value: its CRC no longer matches
    wrapper_crc = bytearray(wrappers[3])
    wrapper_crc[-1] ^= 1
    for bad in [_wrapper_of(magic, codec, bytes(inner), 39), bytes(wrapper_crc)]:
        with pytest.raises(KcodecError) as ordinary:
            rows(before + bad + wrappers[4])
        for threads in (1, 2):
            with pytest.raises(KcodecError) as caught:
                kcodec.decode_columns(before + bad + wrappers[4], threads=threads)
            assert (type(caught.value), str(caught.value)) == (type(ordinary.value),
                                                               str(ordinary.value))
    most = max(len(messages(base)) for base in range(0, 100, 10))
    assert kcodec.decode_columns(log, max_decompressed_size=most)["count"] == 101
    with pytest.raises(DecompressionLimitError) as rows_limit:
        [r for b in kcodec.read_batches(log, max_decompressed_size=most - 1) for r in b]
    with pytest.raises(DecompressionLimitError) as limit:
        kcodec.decode_columns(log, max_decompressed_size=most - 1)
    assert rows_limit.value.position is not None and rows_limit.value.position > 0
    assert limit.value.position == rows_limit.value.position


def test_plain_legacy_runs_fail_where_read_batches_does() -> None:
    """Plain legacy messages framed as runs (no object each) raise what read_batches
    raises, at the same positions, and stop at a partial last message as it does."""
    builder = kcodec.BatchBuilder(magic=1)
    for i in range(50):
        builder.append(b"value %d" % i, key=b"k%d" % i, timestamp=TS + i)
    data = builder.build()
    entries = list(kcodec.read_batches(data))

    def error_of(decode: Any, data: bytes) -> tuple[type, str, int | None]:
        with pytest.raises(KcodecError) as caught:
            decode(data)
        return type(caught.value), str(caught.value), caught.value.position

    bad_crc = bytearray(data)
    bad_crc[entries[37].position + entries[37].size - 1] ^= 1
    expected = error_of(lambda d: list(kcodec.read_batches(d)), bytes(bad_crc))
    assert expected[0] is kcodec.errors.ChecksumError and expected[2] == entries[37].position
    assert error_of(kcodec.decode_columns, bytes(bad_crc)) == expected
    assert kcodec.decode_columns(bytes(bad_crc), validate_crc=False)["count"] == 50
    key_past_end = bytearray(data)
    at = entries[20].position + 12 + 4 + 1 + 1 + 8   # its key length
    key_past_end[at:at + 4] = (1000).to_bytes(4, "big")
    expected = error_of(lambda d: list(kcodec.read_batches(d, validate_crc=False)),
                        bytes(key_past_end))
    assert expected[0] is kcodec.errors.CorruptRecordError and expected[2] == entries[20].position
    assert error_of(kcodec.decode_columns, bytes(key_past_end)) == expected
    assert kcodec.decode_columns(data[:-5])["offset"].tolist() == list(range(49))


def test_long_stretches_of_plain_legacy_messages() -> None:
    """Stretches of plain messages longer than one run (1024 messages) around a wrapper,
    decoded whole, by threads, and within ranges."""
    log = mixed_log([(1, "none")] * 50 + [(0, "lz4")] + [(0, "none")] * 40)
    from kcodec._batch import read_entries_for_columns
    from kcodec._legacy import LegacyRun
    runs = [e.count for e in read_entries_for_columns(log) if type(e) is LegacyRun]
    assert runs == [1024, 476, 1024, 176]
    expected = rows(log)
    assert len(expected) == 91 * 30
    for threads in (1, 2, 3):
        assert column_rows(kcodec.decode_columns(log, threads=threads,
                                                 include_headers=True)) == expected
        assert arrow_rows(kcodec.decode_arrow(log, threads=threads, include_headers=True,
                                              offsets=(1000, 1700))) == expected[1000:1700]
    chunks = list(kcodec.iter_arrow(log, chunk_records=1000, include_headers=True))
    assert len(chunks) == 3   # runs are split among chunks whole, as batches are
    assert sum((arrow_rows(c) for c in chunks), []) == expected


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_wrappers_weigh_what_their_offsets_say(magic: int) -> None:
    """A wrapper's record count is known only once decompressed; its offset (its last
    record's) past the entry before says how many it holds, so chunks stay about
    chunk_records long and threads get equal shares."""
    from kcodec._batch import read_entries_for_columns
    from kcodec._groups import entry_groups
    log = mixed_log([(magic, "lz4")] * 20)   # 20 wrappers of 30 records
    chunks = [len(c) for c in kcodec.iter_arrow(log, chunk_records=100)]
    assert sum(chunks) == 600 and max(chunks) <= 100 + 30
    entries = list(read_entries_for_columns(log))
    assert [len(group) for group in entry_groups(entries, 2)] == [10, 10]
    # offsets that do not grow say nothing (a wrapper repeated): one record each
    repeated = mixed_log([(magic, "gzip")]) * 3
    assert [len(c) for c in kcodec.iter_arrow(repeated, chunk_records=2)] == [60, 30]


def test_iter_arrow_frames_its_input_as_it_goes() -> None:
    """A stream frames a window of batches at a time (a chunk's for each thread, each
    thread framing a stretch of it), so what precedes input that cannot be framed arrives
    before the error, as read_batches yields it. A window ends with the entry that fills
    it."""
    from kcodec._groups import entry_windows
    log = b"".join(_batch_of(base, 10, 20) for base in range(0, 500, 10))
    unframable = (500).to_bytes(8, "big") + (5).to_bytes(4, "big") + b"\0" * 5
    for threads in (1, 2):
        stream = kcodec.iter_arrow(log + unframable, chunk_records=100, threads=threads)
        chunks = []
        with pytest.raises(kcodec.errors.CorruptRecordError) as caught:
            for chunk in stream:
                chunks.append(chunk.num_rows)
        # (the last window is shared among the threads too, cut where its bytes are)
        assert chunks[:4] == [100] * 4 and sum(chunks[4:]) == 100
        assert len(chunks) == (5 if threads == 1 else 6)
        assert caught.value.position == len(log)
    big = _batch_of(500, 250, 20)
    assert [len(c) for c in kcodec.iter_arrow(log[:len(log) // 2] + big, chunk_records=100)
            ] == [100, 100, 300]
    batches = list(kcodec.read_batches(log))
    assert [len(w) for w in entry_windows(iter(batches), 25)] == [3] * 16 + [2]


def test_iter_columns_streams_the_columns_of_decode_columns() -> None:
    """iter_columns yields decode_columns' arrays chunk by chunk (whole batches, about
    chunk_records records each), every column of a chunk its own arrays (offsets from 0);
    joined they are decode_columns' columns, with one thread or several, which decode
    chunks of their own. What precedes input that cannot be framed arrives before the
    error."""
    log = b"".join(_batch_of(base, 10, 20) for base in range(0, 500, 10))
    whole = kcodec.decode_columns(log, include_headers=True, metadata=True)
    for threads in (1, 2, 3):
        chunks = list(kcodec.iter_columns(log, chunk_records=100, threads=threads,
                                          include_headers=True, metadata=True))
        assert sum(chunk["count"] for chunk in chunks) == 500
        assert max(chunk["count"] for chunk in chunks) <= 100
        for name, column in whole.items():
            if name == "count":
                continue
            if name.endswith("_offsets"):   # each chunk's from 0
                assert all(chunk[name][0] == 0 for chunk in chunks)
                parts = [chunks[0][name]] + [
                    chunk[name][1:] + sum(int(c[name][-1]) for c in chunks[:i])
                    for i, chunk in enumerate(chunks[1:], 1)]
            else:
                parts = [chunk[name] for chunk in chunks]
            assert np.array_equal(np.concatenate(parts), column), name
    unframable = (500).to_bytes(8, "big") + (5).to_bytes(4, "big") + b"\0" * 5
    for threads in (1, 2):
        counts = []
        with pytest.raises(kcodec.errors.CorruptRecordError) as caught:
            for chunk in kcodec.iter_columns(log + unframable, chunk_records=100,
                                             threads=threads):
                counts.append(chunk["count"])
        assert sum(counts) == 500 and caught.value.position == len(log)
    assert list(kcodec.iter_columns(b"")) == []


def test_plain_batches_are_framed_in_runs() -> None:
    """Consecutive plain v2 batches, and small compressed ones the columnar decoder queues
    as frames, are framed as one BatchRun (up to run_records records): a larger compressed
    batch, a control or transactional one, or one with a negative count, is framed on its
    own. A run's batches are read_batches' batches."""
    import random

    from kcodec._batch import BatchRun, read_entries_for_columns
    plain = [_batch_of(base, 10, 20) for base in range(0, 100, 10)]
    lz4 = kcodec.BatchBuilder(base_offset=100, compression="lz4")
    lz4.append(b"x", timestamp=TS)
    negative = bytearray(_batch_of(110, 10, 20))
    negative[57:61] = b"\xff" * 4
    large = kcodec.BatchBuilder(base_offset=200, compression="lz4")
    for i in range(200):
        large.append(random.Random(i).randbytes(100), timestamp=TS)
    log = (b"".join(plain[:7]) + lz4.build() + bytes(negative) + b"".join(plain[7:])
           + large.build())
    log += transactional_log()
    entries = list(read_entries_for_columns(log, run_records=50))
    kinds = [(type(e).__name__, len(e) if type(e) is BatchRun else 1) for e in entries]
    assert kinds == [("BatchRun", 5), ("BatchRun", 3), ("RecordBatch", 1), ("BatchRun", 3),
                     ("RecordBatch", 1)] + [("RecordBatch", 1)] * 4 + [("BatchRun", 1)]
    rows_of = list(kcodec.read_batches(log, validate_crc=False))
    framed = [b for e in entries
              for b in ([e[i] for i in range(len(e))] if isinstance(e, BatchRun) else [e])]
    assert [(b.position, b.size, b.base_offset, b.crc) for b in framed] == [
        (b.position, b.size, b.base_offset, b.crc) for b in rows_of]
    first = entries[0]
    assert isinstance(first, BatchRun)
    assert (first.position, first.size, first.records, first.base_offset, first.last_offset) == (
        0, sum(map(len, plain[:5])), 50, 0, 49)
    with pytest.raises(IndexError):
        first[5]
    with pytest.raises(TypeError):
        BatchRun()
    assert [type(e).__name__ for e in read_entries_for_columns(log, run_records=0)].count(
        "BatchRun") == 0


@pytest.mark.parametrize("threads", [1, 2])
def test_thousands_of_small_plain_batches_in_every_layout(threads: int) -> None:
    """Runs of plain batches span several passes without the GIL (of up to 1024 batches):
    every layout lands every record, with a damaged batch in a later pass failing at its
    position."""
    log = bytearray(b"".join(_batch_of(base, 1 + base % 3, 30) for base in range(0, 6000, 3)))
    expected = rows(bytes(log))
    assert column_rows(kcodec.decode_columns(bytes(log), include_headers=True,
                                             threads=threads)) == expected
    for binary_view in (False, True):
        table = kcodec.decode_arrow(bytes(log), include_headers=True, threads=threads,
                                    binary_view=binary_view)
        assert arrow_rows(table) == expected
    late = next(b for b in kcodec.read_batches(bytes(log)) if b.base_offset == 4500)
    log[late.position + 70] ^= 1
    with pytest.raises(kcodec.errors.ChecksumError) as caught:
        kcodec.decode_columns(bytes(log), threads=threads)
    assert caught.value.position == late.position


def test_a_run_skips_batches_outside_the_ranges_unread() -> None:
    """Of a run, batches outside the offset or timestamp ranges are skipped one by one, their
    CRCs unchecked, as a RecordBatch is; a damaged batch in range fails at its position."""
    log = bytearray(b"".join(_batch_of(base, 10, 20) for base in range(0, 100, 10)))
    third = 2 * (len(log) // 10)
    log[third + 70] ^= 1   # a value of offsets 20-29
    for threads in (1, 2):
        cols = kcodec.decode_columns(bytes(log), offsets=(30, 60), threads=threads)
        assert list(cols["offset"]) == list(range(30, 60))
        assert kcodec.decode_columns(bytes(log), offsets=(0, 20), threads=threads)["count"] == 20
        with pytest.raises(kcodec.errors.ChecksumError) as caught:
            kcodec.decode_columns(bytes(log), offsets=(25, 60), threads=threads)
        assert caught.value.position == third
    with pytest.raises(kcodec.errors.ChecksumError):   # every batch reaches timestamp 1009
        kcodec.decode_columns(bytes(log), timestamps=(1000 + 9, 2**63))
    assert kcodec.decode_columns(bytes(log), timestamps=(1000 + 10, 2**63))["count"] == 0
    from kcodec._batch import read_entries_for_columns
    assert list(kcodec.columnar.select_batches(read_entries_for_columns(bytes(log)),
                                               offsets=(200, 300))) == []


def test_thread_and_chunk_counts_below_one_are_refused() -> None:
    log = _batch_of(0, 5, 10)
    for bad in (0, -2):
        with pytest.raises(ValueError, match="threads must be 1 or more"):
            kcodec.decode_columns(log, threads=bad)
        with pytest.raises(ValueError, match="threads must be 1 or more"):
            kcodec.decode_arrow(log, threads=bad)
        with pytest.raises(ValueError, match="chunk_records must be 1 or more"):
            next(kcodec.iter_arrow(log, chunk_records=bad))
        with pytest.raises(ValueError, match="threads must be 1 or more"):
            next(kcodec.iter_columns(log, threads=bad))
        with pytest.raises(ValueError, match="chunk_records must be 1 or more"):
            next(kcodec.iter_columns(log, chunk_records=bad))


def test_arrow_schema_is_sparks() -> None:
    import pyarrow as pa
    table = kcodec.decode_arrow(VECTORS["v2_one"], topic="events", partition=4,
                                include_headers=True, metadata=True)
    assert table.schema.field("key").type == pa.binary()
    assert table.schema.field("topic").type == pa.string()
    assert table.schema.field("partition").type == pa.int32()
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("timestampType").type == pa.int32()
    assert table.column("topic").to_pylist() == ["events"]
    assert table.column("headers").to_pylist() == [[{"key": "h", "value": b"1"}]]
    empty = kcodec.decode_arrow(b"", topic="t")
    assert empty.num_rows == 0 and "value" in empty.column_names


def test_errors_carry_positions() -> None:
    bad = bytearray(VECTORS["v2_two_nullkey"])
    bad[57:61] = (3).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError):
        kcodec.decode_columns(bad, validate_crc=False)
    negative = bytearray(_batch_of(0, 2, 10) + _batch_of(2, 2, 10))
    at = len(_batch_of(0, 2, 10))
    negative[at + 57:at + 61] = b"\xff" * 4   # (the record count: rows name its byte)
    negative[at + 17:at + 21] = kcodec.crc32c(bytes(negative[at + 21:])).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError) as ordinary:
        rows(bytes(negative))
    with pytest.raises(InvalidRecordError) as caught:
        kcodec.decode_columns(bytes(negative), validate_crc=False)
    assert caught.value.position == ordinary.value.position == at + 57
    with pytest.raises(CompressionError):
        kcodec.decode_columns(VECTORS["L05_lz4_bad_hc"])


@pytest.mark.parametrize("magic,codec", [(2, "none"), (2, "lz4"), (2, "zstd"), (2, "gzip"),
                                         (1, "none"), (1, "gzip")])
def test_timestamps_past_arrows_microseconds_are_refused(magic: int, codec: str) -> None:
    """A timestamp Kafka takes (any int64 of milliseconds) that Arrow's microsecond
    timestamps cannot hold fails decode_arrow with INVALID_TIMESTAMP at its record (a
    compressed batch's or wrapper's first byte), as Spark's own conversion fails, rather
    than wrap; decode_columns, in milliseconds, gives it, and a range that leaves the
    record out decodes the rest."""
    edge = (2**63 - 1) // 1000   # the last millisecond whose microseconds fit
    before = _batch_of(0, 3, 10)
    for far in (edge + 1, 2**62, 2**63 - 1):
        builder = kcodec.BatchBuilder(compression=codec, magic=magic, base_offset=3)
        builder.append(b"a", timestamp=edge)
        builder.append(b"b", timestamp=far)
        log = before + builder.build()
        assert kcodec.decode_columns(log)["timestamp"].tolist() == [1000, 1001, 1002, edge, far]
        # the second record of the batch: a v2 record's first byte (the first record is its
        # length varint and 7 more), a plain magic-1 message's (the first is 35 bytes), or
        # the compressed batch's or wrapper's
        second = (len(before) + 61 + 8 if (magic, codec) == (2, "none")
                  else len(before) + 35 if (magic, codec) == (1, "none") else len(before))
        for binary_view in (False, True):
            with pytest.raises(kcodec.errors.InvalidTimestampError) as caught:
                kcodec.decode_arrow(log, binary_view=binary_view)
            assert caught.value.position == second and caught.value.error_code == 32
        assert kcodec.decode_arrow(log, offsets=(0, 4)).num_rows == 4
    if (magic, codec) == (2, "none"):   # far back: a base timestamp no builder writes
        past = bytearray(log)
        past[len(before) + 27:len(before) + 35] = (-(edge + 1) & (2**64 - 1)).to_bytes(8, "big")
        past[len(before) + 17:len(before) + 21] = kcodec.crc32c(
            bytes(past[len(before) + 21:])).to_bytes(4, "big")
        assert kcodec.decode_columns(bytes(past))["timestamp"].tolist()[3] == -(edge + 1)
        with pytest.raises(kcodec.errors.InvalidTimestampError) as caught:
            kcodec.decode_arrow(bytes(past))
        assert caught.value.position == len(before) + 61


def test_columns_are_numpy_and_own_their_memory() -> None:
    cols = kcodec.decode_columns(VECTORS["v2_two_nullkey"])
    assert isinstance(cols["offset"], np.ndarray) and cols["offset"].dtype == np.int64
    value_data = cols["value_data"]
    del cols
    assert value_data.tobytes() == b"a"


def test_spare_column_buffers_are_reused_and_can_be_released() -> None:
    from kcodec.columnar import release_spare_buffers
    log = b"".join(_batch_of(base, 200, 300) for base in range(0, 2000, 200))
    release_spare_buffers()
    first = kcodec.decode_columns(log)
    first_values = first["value_data"].ctypes.data
    expected = {name: array.copy() for name, array in first.items() if name != "count"}
    del first
    again = kcodec.decode_columns(log)   # same shape: the freed buffers are filled again
    assert again["value_data"].ctypes.data == first_values or UNDER_ASAN   # (moved by realloc)
    assert all(np.array_equal(again[name], array) for name, array in expected.items())
    del again
    assert release_spare_buffers() > 0
    assert release_spare_buffers() == 0


def _address(buffer: Any) -> int:
    return int(np.frombuffer(buffer.window(1), dtype=np.uint8).ctypes.data)


def test_the_decompression_pool_gives_the_newest_spare_that_fits() -> None:
    """A request takes the spare given back last that it leaves less than half empty, of
    whatever size class, else the one given back last that is large enough."""
    from kcodec._scratch import ScratchBuffer
    from kcodec.columnar import release_spare_buffers

    def given_back(*sizes: int) -> list[int]:   # (into an empty pool)
        release_spare_buffers()
        buffers = [ScratchBuffer(size) for size in sizes]
        addresses = [_address(b) for b in buffers]
        while buffers:   # given back in this order
            del buffers[0]
        return addresses

    fit, large = given_back(20_000, 1 << 20)
    assert _address(ScratchBuffer(20_000)) == fit   # not the newer, larger one
    fit, large = given_back(20_000, 1 << 20)
    assert _address(ScratchBuffer(100_000)) == large
    older, newer = given_back(20_000, 30_000)
    assert _address(ScratchBuffer(18_000)) == newer
    in_class, next_class = given_back(25_000, 35_000)   # 16-32 KiB, 32-64 KiB
    first = ScratchBuffer(20_000)
    assert _address(first) == next_class
    assert _address(ScratchBuffer(20_000)) == in_class
    release_spare_buffers()


def test_the_decompression_pool_stays_bounded_under_churn() -> None:
    """Buffers of every size made, written and dropped in any order: the pool keeps at most
    its bounds and frees what it kept when released."""
    import random

    from kcodec._scratch import ScratchBuffer
    from kcodec.columnar import release_spare_buffers
    release_spare_buffers()
    noise = random.Random(7)
    live: list[Any] = []
    for _ in range(4000):
        if live and noise.random() < 0.5:
            del live[noise.randrange(len(live))]
            continue
        size = noise.choice([1, 5000, 16384, 20_000, 70_000, 1 << 20, 5 << 20, 17 << 20])
        buffer = ScratchBuffer(size)
        buffer.window(size)[-1:] = b"x"
        live.append(buffer)
    live.clear()
    assert 0 < release_spare_buffers() <= 256 << 20
    assert release_spare_buffers() == 0


def _fresh_pages(decode: Any) -> int:
    """Pages first touched (minor page faults) while ``decode()`` runs and its result goes."""
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    decode()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def _fresh_pages_in_turn(decode: Any, small: bytes, large: bytes) -> tuple[int, int]:
    """The fresh pages of decoding ``small`` and then ``large``, after three such rounds
    (in which the pools come to hold spares of both shapes): the fewest of three more
    rounds, as what a decode keeps touching afresh shows in every round, and what the
    process around it does now and then (its allocator growing a heap) in one."""
    for _ in range(3):
        decode(small)
        decode(large)
    rounds = [(_fresh_pages(lambda: decode(small)), _fresh_pages(lambda: decode(large)))
              for _ in range(3)]
    return min(r[0] for r in rounds), min(r[1] for r in rounds)


def _copies(value_size: int, copies: int, codec: str = "none") -> bytes:
    """One batch of 1000 records with values of ``value_size`` bytes (half of each
    random, so that they compress as real ones do), ``copies`` times."""
    import random
    noise = random.Random(value_size)
    batch = kcodec.BatchBuilder(compression=codec)
    for i in range(1000):
        half = value_size // 2
        value = noise.randbytes(half) + bytes([i % 251]) * (value_size - half)
        batch.append(value, key=b"k%d" % i, timestamp=TS)
    return batch.build() * copies


@pytest.fixture
def empty_pools() -> Any:
    """The spare buffers' pools empty before and after the test (some hold hundreds of MB)."""
    from kcodec.columnar import release_spare_buffers
    release_spare_buffers()
    yield
    release_spare_buffers()


counts_fresh_pages = pytest.mark.skipif(
    sys.platform != "linux" or UNDER_ASAN,
    reason="counts Linux's minor page faults, of glibc's allocator")


@counts_fresh_pages
@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_a_decode_near_the_pools_bound_reuses_its_memory(codec: str, empty_pools: None) -> None:
    """~290 MB of columns, under the column pool's 512 MiB: the next decode of that shape
    fills the same pages (columns reserved for a whole decode take what they ask for, a
    buffer doubled past its use is cut when given back, and columns a decode leaves empty
    take no spares), even after a decode of other columns."""
    log = _copies(1024, 280, codec)
    _fresh_pages(lambda: kcodec.decode_columns(log))
    kcodec.decode_columns(log[:len(log) // 280], include_headers=True, metadata=True)
    assert _fresh_pages(lambda: kcodec.decode_columns(log)) < 100   # of ~70 000 pages


@counts_fresh_pages
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_inputs_of_two_shapes_in_turn_reuse_their_memory(codec: str,
                                                         empty_pools: None) -> None:
    """Values are guessed as the records' bytes (of compressed batches, as their framing
    states them) less what was not values last time, not as last time's bytes per record:
    decodes of 100-byte and 1 KiB values in turn each find spares of their size (zstd's,
    whose frames state less, a spare a little smaller than its guess)."""
    small, large = _copies(100, 100, codec), _copies(1024, 40, codec)
    small_pages, large_pages = _fresh_pages_in_turn(kcodec.decode_columns, small, large)
    assert small_pages < 100
    assert large_pages < 100


@counts_fresh_pages
def test_zstd_inputs_that_compress_differently_in_turn_reuse_their_memory(
        empty_pools: None) -> None:
    """zstd frames as Kafka writes them state no decompressed size: a batch is guessed at
    the inflation of the last zstd batch decoded, which for inputs in turn whose values
    compress ~2x and ~50x is far short. Once a decode's first batches show it, the value
    column takes a spare holding the rest rather than growing onto fresh pages."""
    small = _copies(100, 100, "zstd")
    builder = kcodec.BatchBuilder(compression="zstd")
    for i in range(1000):
        builder.append(bytes([i % 251]) * 512 + b"%d" % i * 128, key=b"k%d" % i, timestamp=TS)
    large = builder.build() * 40
    small_pages, large_pages = _fresh_pages_in_turn(kcodec.decode_columns, small, large)
    assert small_pages < 100
    # (its first batch, guessed short, may still grow the column; its 40 MB of values are
    # ~10 000 pages)
    assert large_pages < 1000


@counts_fresh_pages
@pytest.mark.parametrize("codec", ["snappy", "lz4", "zstd"])
def test_binary_views_of_two_shapes_in_turn_reuse_their_memory(codec: str,
                                                               empty_pools: None) -> None:
    """The decompressed records views keep are sized by what the batches' framing states,
    so those of 100-byte and 1 KiB values in turn each find spares of their size."""
    pytest.importorskip("pyarrow")
    small, large = _copies(100, 100, codec), _copies(1024, 40, codec)
    small_pages, large_pages = _fresh_pages_in_turn(
        lambda log: kcodec.decode_arrow(log, binary_view=True), small, large)
    assert small_pages < 100
    assert large_pages < 100


@counts_fresh_pages
def test_decodes_in_both_layouts_in_turn_reuse_their_memory(empty_pools: None) -> None:
    """A decode to binary views, which has no offsets columns, leaves the sizes they took
    last time for the next decode in the binary layout."""
    pytest.importorskip("pyarrow")
    log = _copies(1024, 100)
    for _ in range(2):
        kcodec.decode_columns(log)
        kcodec.decode_arrow(log, binary_view=True)
    assert _fresh_pages(lambda: kcodec.decode_columns(log)) < 100


@counts_fresh_pages
def test_binary_views_of_many_batches_reuse_their_decompressed_records(
        empty_pools: None) -> None:
    """Views keep each compressed batch's records (1000 batches of ~110 kB here); when the
    table goes they return to the decompression pool, and the next decode of that shape
    fills them, even after a decode of other columns."""
    pytest.importorskip("pyarrow")
    log = _copies(100, 1000, "lz4")
    first = _fresh_pages(lambda: kcodec.decode_arrow(log, binary_view=True))
    kcodec.decode_arrow(log, binary_view=True)   # its spares settle to their sizes
    kcodec.decode_columns(log[:len(log) // 1000], include_headers=True, metadata=True)
    # (pyarrow's and Python's own objects may take a few fresh pages)
    assert _fresh_pages(lambda: kcodec.decode_arrow(log, binary_view=True)) < first / 50


def test_huge_values_do_not_inflate_the_next_decode() -> None:
    """Columns are reserved from the bytes per record of the last decode, bounded by what
    the input can hold: after two 8 MiB values, 50 000 small records reserve no 400 GB."""
    huge = kcodec.BatchBuilder()
    for _ in range(2):
        huge.append(b"\x00" * (8 << 20), key=b"k" * (1 << 20), timestamp=TS)
    assert kcodec.decode_columns(huge.build())["count"] == 2
    small = b"".join(_batch_of(base, 1000, 4) for base in range(0, 50_000, 1000))
    cols = kcodec.decode_columns(small)
    assert cols["count"] == 50_000 and len(cols["value_data"]) == 200_000


def test_crc_checked_in_the_decoding_pass() -> None:
    log = bytearray(b"".join(_batch_of(base, 10, 20) for base in range(0, 50, 10)))
    log[-2] ^= 1   # the last value's last byte (the header count follows)
    with pytest.raises(kcodec.errors.ChecksumError) as caught:
        kcodec.decode_columns(log)
    assert caught.value.position == 4 * (len(log) // 5)
    assert kcodec.decode_columns(log, validate_crc=False)["count"] == 50


def _batch_of(base: int, count: int, value_size: int) -> bytes:
    builder = kcodec.BatchBuilder(base_offset=base)
    for i in range(count):
        builder.append(bytes([i % 251]) * value_size, key=b"k%d" % i, timestamp=1000 + i)
    return builder.build()


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_large_values_into_a_large_column(codec: str) -> None:
    """Past 8 MiB of values, values of 512 bytes and more are copied with streaming stores
    (whole cache lines only), short ones with fixed-size moves: sizes around the line
    length and every move's size, at every alignment, land intact, from one thread and
    two."""
    sizes = [512, 513, 575, 576, 640, 1000, 1024, 4095, 4097, 511, 0, 77,
             1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129]
    builder_values: list[bytes] = []
    log = bytearray()
    base = 0
    while sum(map(len, builder_values)) < 12 << 20:
        builder = kcodec.BatchBuilder(base_offset=base, compression=codec)
        for i in range(200):
            size = sizes[(base + i) % len(sizes)]
            value = bytes((base + i + j) % 251 for j in range(size % 251)) * (size // 251 + 1)
            builder.append(value[:size], key=b"k", timestamp=TS)
            builder_values.append(value[:size])
        log += builder.build()
        base += 200
    for threads in (1, 2):
        cols = kcodec.decode_columns(bytes(log), columns=["value"], threads=threads)
        offsets, data = cols["value_offsets"], cols["value_data"]
        assert cols["count"] == len(builder_values)
        assert data.tobytes() == b"".join(builder_values)
        assert [int(offsets[i + 1] - offsets[i]) for i in range(len(builder_values))] == [
            len(v) for v in builder_values]


def test_threads_join_a_large_part_with_streaming_stores() -> None:
    """Two threads' parts of compressed batches are joined by copying the second part's
    values after the first's, pieces of 8 MiB and more with streaming stores (whole lines,
    the ends with ordinary ones): the joined values are the records' values, at an odd
    alignment."""
    values = [bytes((i + j) % 251 for j in range(251)) * 4 + b"%d" % i for i in range(3000)]
    log = bytearray()
    for base in range(0, 14 * len(values), len(values)):
        builder = kcodec.BatchBuilder(base_offset=base, compression="lz4")
        for value in values:
            builder.append(value, key=b"k", timestamp=TS)
        log += builder.build()
    cols = kcodec.decode_columns(bytes(log), columns=["value"], threads=2)
    # the second part is copied in a piece per thread, each past 8 MiB
    assert cols["value_data"].nbytes > 40 << 20
    assert cols["value_data"].tobytes() == b"".join(values) * 14
    lengths = np.diff(cols["value_offsets"])
    assert lengths.tolist() == [len(v) for v in values] * 14


MIXED = [(2, "none"), (1, "none"), (2, "lz4"), (0, "gzip"), (2, "snappy"), (1, "snappy"),
         (2, "zstd"), (2, "gzip"), (0, "none"), (2, "none")]


def mixed_log(kinds: list[tuple[int, str]] = MIXED) -> bytes:
    """v2 batches of every codec and legacy messages (magic 0 and 1, plain and wrapped),
    with nulls, short (inlined) and long keys and values, and headers."""
    log = bytearray()
    base = 0
    for magic, codec in kinds:
        builder = kcodec.BatchBuilder(compression=codec, base_offset=base, magic=magic)
        for i in range(30):
            value = None if i % 7 == 3 else b"v%d-" % (base + i) * (i % 5 * 9)
            key = None if i % 4 == 1 else b"key %d" % i * (i % 3 * 4)
            headers = [("h", b"%d" % i)] if magic == 2 and i % 2 else []
            builder.append(value, key=key, timestamp=TS + i, headers=headers)
        log += builder.build()
        base += 30
    return bytes(log)


def assert_same_columns(got: dict[str, Any], expected: dict[str, Any]) -> None:
    assert got.keys() == expected.keys()
    assert got["count"] == expected["count"]
    for name in expected.keys() - {"count"}:
        assert got[name].dtype == expected[name].dtype, name
        assert np.array_equal(got[name], expected[name]), name


# with a legacy message of each magic, and a compressed batch
MOSTLY_UNCOMPRESSED = [(2, "none"), (1, "none"), (2, "none"), (2, "lz4"), (2, "none"),
                       (0, "none"), (2, "none"), (2, "none")]


@pytest.mark.parametrize("threads", [2, 3, 8])
@pytest.mark.parametrize("columns", [None, ["value"], ["key", "offset"], ["offset"]])
@pytest.mark.parametrize("compressed, small", [(False, False), (False, True), (True, False)])
def test_threads_join_to_the_columns_of_one(threads: int, columns: list[str] | None,
                                            compressed: bool, small: bool,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts decoded by several threads give exactly the arrays one thread gives: mostly
    uncompressed v2 batches of records that are not small as views copied once into the
    joined columns; mostly compressed input, or small records, with the first part decoded
    into them and the others appended."""
    from kcodec import columnar
    from kcodec._columns import join_parts
    joined = []

    def counted_join(*args: Any) -> Any:
        joined.append(True)
        return join_parts(*args)

    monkeypatch.setattr(columnar, "join_parts", counted_join)
    # the log's records are small: gathered only when no record counts as small
    monkeypatch.setattr(columnar, "GATHER_FROM_RECORD_BYTES", 1000 if small else 0)
    log = mixed_log([kind for kind in MIXED if kind[1] != "none"] if compressed
                    else MOSTLY_UNCOMPRESSED)
    options: dict[str, Any] = {"include_headers": True, "metadata": True, "columns": columns}
    assert_same_columns(kcodec.decode_columns(log, threads=threads, **options),
                        kcodec.decode_columns(log, **options))
    assert joined == ([True] if compressed or small else [])


def test_threads_join_parts_with_and_without_views(monkeypatch: pytest.MonkeyPatch) -> None:
    """A part whose buffers views cannot reach (past 2 GiB) is decoded with copied values
    instead, and joins the parts decoded as views."""
    from kcodec import columnar
    from kcodec._columns import decode_chunk
    parts = []

    def views_for_all_parts_but_the_first(group: Any, want: int, **options: Any) -> Any:
        parts.append(options.get("views", False))
        if options.get("views") and group[0].base_offset == 0:
            raise OverflowError("binary views reach 2 GiB")
        return decode_chunk(group, want, **options)

    log = mixed_log(MOSTLY_UNCOMPRESSED)
    expected = kcodec.decode_columns(log, include_headers=True)
    monkeypatch.setattr(columnar, "GATHER_FROM_RECORD_BYTES", 0)   # its records are small
    monkeypatch.setattr(columnar, "decode_chunk", views_for_all_parts_but_the_first)
    assert_same_columns(kcodec.decode_columns(log, include_headers=True, threads=4), expected)
    assert parts.count(False) == 1 and parts.count(True) >= 3


def test_threads_get_a_share_of_records_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decode gives each thread it uses RECORDS_A_THREAD records at least: a smaller input
    is decoded on fewer threads than asked for, in as many parts (decode_columns) or
    chunks of records (decode_arrow); iter_arrow's chunks, when asked smaller, keep their
    size and are shared among fewer threads. Legacy wrappers whose record counts are
    unknown are split as asked."""
    from kcodec import columnar
    from kcodec._workers import run_all
    used: list[tuple[int, int]] = []   # (parts, threads) of each run_all

    def counted_run_all(work: Any, items: Any, threads: int) -> Any:
        used.append((len(items), threads))
        return run_all(work, items, threads)

    monkeypatch.setattr(columnar, "run_all", counted_run_all)
    monkeypatch.setattr(columnar, "RECORDS_A_THREAD", 2200)
    batches = []
    for base in range(0, 11000, 1100):   # ten batches of 1100 records, each framed alone
        builder = kcodec.BatchBuilder(base_offset=base)
        for i in range(1100):
            builder.append(b"v%04d" % i, timestamp=TS)
        batches.append(builder.build())
    expected = rows(b"".join(batches))
    for count, threads, parts in ((3, 2, 1), (5, 4, 2), (10, 4, 4), (10, 8, 5)):
        log, records = b"".join(batches[:count]), 1100 * count
        assert column_rows(kcodec.decode_columns(log, threads=threads,
                                                 include_headers=True)) == expected[:records]
        table = kcodec.decode_arrow(log, threads=threads, include_headers=True)
        assert arrow_rows(table) == expected[:records]
        assert len(table.to_batches()) == parts
    used.clear()
    chunks = list(kcodec.iter_arrow(b"".join(batches), chunk_records=1100, threads=2))
    assert [batch.num_rows for batch in chunks] == [1100] * 10
    assert used == [(2, 1)] * 5   # windows of 2200 records: one thread's share
    # legacy wrappers whose offsets do not grow (as in a produce request) leave their record
    # counts unknown until decompressed: they are split as asked
    wrapper = kcodec.BatchBuilder(magic=1, compression="lz4")
    for i in range(50):
        wrapper.append(b"v%02d" % i, timestamp=TS)
    table = kcodec.decode_arrow(wrapper.build() * 4, threads=2)
    assert table.num_rows == 200 and len(table.to_batches()) == 2


LEGACY = [(1, "none"), (0, "gzip"), (1, "lz4"), (0, "none"), (1, "snappy"), (0, "lz4"),
          (1, "gzip"), (0, "snappy"), (1, "none")]


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads_decode_legacy_entries_as_one(threads: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain legacy messages (decoded in runs) and wrappers (their inner messages walked
    without the GIL) split among threads give what one thread gives, in every layout;
    their values are copied even as views, so decode_columns joins the parts in place."""
    from kcodec import columnar
    from kcodec._columns import join_parts
    joined = []

    def counted_join(*args: Any) -> Any:
        joined.append(True)
        return join_parts(*args)

    monkeypatch.setattr(columnar, "join_parts", counted_join)
    monkeypatch.setattr(columnar, "GATHER_FROM_RECORD_BYTES", 0)   # as if records were large
    log = mixed_log(LEGACY)
    options: dict[str, Any] = {"include_headers": True, "metadata": True}
    assert_same_columns(kcodec.decode_columns(log, threads=threads, **options),
                        kcodec.decode_columns(log, **options))
    assert joined == [True]
    expected = rows(log)
    assert arrow_rows(kcodec.decode_arrow(log, threads=threads, include_headers=True)) == expected
    assert arrow_rows(views(log, threads=threads, include_headers=True)) == expected
    assert arrow_rows(kcodec.decode_arrow(log, threads=threads, include_headers=True,
                                          offsets=(45, 200))) == expected[45:200]


def test_gathering_refuses_views_outside_their_buffers() -> None:
    from kcodec._columns import decode_chunk, gather_views
    builder = kcodec.BatchBuilder()
    builder.append(b"a value longer than twelve bytes", key=None, timestamp=TS)
    entries = list(kcodec.read_batches(builder.build()))
    chunk = decode_chunk(entries, kcodec.columnar._want(["value"]), views=True)
    offsets = np.empty(1, np.int64)
    data = np.empty(32, np.uint8)
    gather_views([(chunk["value_views"], chunk["value_data"], offsets, data, 100)],
                 chunk["view_sources"], 1)
    assert data.tobytes() == b"a value longer than twelve bytes" and offsets[0] == 132
    for broken in ([], [(address, 10, owner) for address, _, owner in chunk["view_sources"]]):
        with pytest.raises(ValueError, match="record 0 points outside"):
            gather_views([(chunk["value_views"], chunk["value_data"], offsets, data, 0)],
                         broken, 1)
    with pytest.raises(ValueError, match="record 0 points outside"):   # no room
        gather_views([(chunk["value_views"], chunk["value_data"], offsets, data[:31], 0)],
                     chunk["view_sources"], 1)


def test_binary_views_point_into_the_input_and_the_decompressed_batches() -> None:
    """Values of uncompressed batches stay in the caller's buffer (batches side by side
    share one Arrow buffer), compressed batches' in their decompressed records; values of 12
    bytes or fewer are inlined and legacy messages' values are copied into buffer 0."""
    pa = pytest.importorskip("pyarrow")
    def batch(codec: str, base: int, magic: int = 2) -> bytes:
        builder = kcodec.BatchBuilder(compression=codec, base_offset=base, magic=magic)
        builder.append(b"short", key=b"k", timestamp=TS)
        builder.append(b"a value longer than twelve bytes %d" % base, key=None, timestamp=TS)
        builder.append(None, key=b"a key longer than twelve bytes", timestamp=TS)
        return builder.build()
    log = bytearray(batch("none", 0) + batch("none", 3) + batch("lz4", 6) + batch("none", 9, 1))
    table = kcodec.decode_arrow(log, binary_view=True)
    table.validate(full=True)
    assert table.schema.field("key").type == pa.binary_view()
    assert table.cast(kcodec.decode_arrow(log).schema).equals(kcodec.decode_arrow(log))
    (values,) = table.column("value").chunks
    _, _, copied, input_region, decompressed = values.buffers()
    address = np.frombuffer(log, dtype=np.uint8).ctypes.data
    assert address <= input_region.address < address + len(log)
    assert input_region.address + input_region.size <= address + len(log)
    assert b"longer than twelve bytes 3" in input_region.to_pybytes()
    assert b"longer than twelve bytes 6" in decompressed.to_pybytes()
    assert copied.to_pybytes() == b"a value longer than twelve bytes 9"
    with pytest.raises(BufferError):
        log.extend(b"x")   # the table holds the input, as the batches did
    del values, input_region, decompressed, copied, table
    log.extend(b"x")


def test_empty_input_with_binary_views() -> None:
    pa = pytest.importorskip("pyarrow")
    table = kcodec.decode_arrow(b"", binary_view=True)
    assert table.num_rows == 0 and table.schema.field("value").type == pa.binary_view()


def _compressed_batch_of_records(codec: str, header: bytes, records: bytes, count: int,
                                 base_offset: int = 0) -> bytes:
    """``header`` (an uncompressed v2 batch's first 61 bytes) made a batch of the (possibly
    malformed) records region ``records`` compressed with ``codec``."""
    from kcodec import codecs
    return _batch_of_section(header, codecs.compress(codec, records), codec, count, base_offset)


def _batch_of_section(header: bytes, section: bytes, codec: str, count: int,
                      base_offset: int) -> bytes:
    """``header`` (an uncompressed v2 batch's first 61 bytes) made a batch of the records
    section ``section``, compressed with ``codec``, of ``count`` records."""
    batch = bytearray(header) + section
    batch[0:8] = base_offset.to_bytes(8, "big")
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    batch[22] |= int(kcodec.Compression[codec.upper()])
    batch[57:61] = count.to_bytes(4, "big")
    batch[17:21] = kcodec.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


LAYOUTS = ["binary", "views", "scan"]


def _decode(log: bytes, layout: str, **options: Any) -> Any:
    """decode_columns (binary), decode_arrow with binary views, or a scan without values."""
    if layout == "views":
        return kcodec.decode_arrow(log, binary_view=True, **options)
    if layout == "scan":
        return kcodec.decode_columns(log, columns=["offset", "timestamp", "key", "headers"],
                                     **options)
    return kcodec.decode_columns(log, **options)


@pytest.mark.parametrize("count", [8000, 16000])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd"])
def test_batches_decoded_block_by_block_keep_every_verdict(codec: str, layout: str,
                                                          count: int) -> None:
    """LZ4, snappy and zstd batches are decoded as each block (of zstd, 512 KiB window) is
    decompressed (without views, from a buffer that drops the records decoded past 512 KiB,
    or for snappy's values straight in the value column); a zstd frame framed to at most
    4 MiB is decompressed in one call by libzstd from C instead. A batch that goes wrong
    part way is undone and given the ordinary verdict, and the batches before it are
    intact."""
    good = _batch_of(0, count, 300)   # 16 000: 5 MiB of records, ~80 LZ4 (~160 snappy) blocks
    header, records = good[:61], good[61:]
    compressed_good = _compressed_batch_of_records(codec, header, records, count)
    assert column_rows(kcodec.decode_columns(compressed_good, include_headers=True)) == (
        column_rows(kcodec.decode_columns(good, include_headers=True)))
    if layout == "views":
        assert _decode(compressed_good, layout).column("value").to_pylist() == [
            bytes([i % 251]) * 300 for i in range(count)]
    if layout == "scan":
        scan = _decode(compressed_good, layout)
        assert column_rows(scan) == column_rows(_decode(good, layout))
    damaged = bytearray(records)
    at = 0
    for _ in range(count * 15 // 16):   # to a record in a late block
        length, after = kcodec.decode_varint(records, at)
        at = after + length
    damaged[at] = damaged[at] & 0x80 | (damaged[at] + 2) & 0x7F   # its length, 1 more
    empty = bytearray(records)
    empty[at:at + 2] = b"\0\0"   # its length 0, then a record of length 0 too
    for bad in [_compressed_batch_of_records(codec, header, bytes(damaged), count, count),
                _compressed_batch_of_records(codec, header, bytes(empty), count, count),
                _compressed_batch_of_records(codec, header, records, count + 1, count),
                _compressed_batch_of_records(codec, header, records + b"\0\0", count, count),
                _compressed_batch_of_records(codec, header, records, 2**31 - 1, count)]:
        with pytest.raises(InvalidRecordError) as caught:
            _decode(compressed_good + bad, layout)
        assert caught.value.position == len(compressed_good)
    truncated = bytearray(compressed_good[:-9])   # the stream loses its last bytes
    truncated[8:12] = (len(truncated) - 12).to_bytes(4, "big")
    truncated[17:21] = kcodec.crc32c(bytes(truncated[21:])).to_bytes(4, "big")
    with pytest.raises(KcodecError) as ordinary:   # the row reader's verdict
        [r for b in kcodec.read_batches(bytes(truncated)) for r in b]
    with pytest.raises(type(ordinary.value)):
        _decode(bytes(truncated), layout)
    # the limit counts every byte decompressed, also those decoded and dropped on the way,
    # and each batch's alone (not the values of the batches before it in the same column)
    assert _decode(compressed_good * 2, layout, max_decompressed_size=len(records))
    with pytest.raises(DecompressionLimitError):
        _decode(compressed_good, layout, max_decompressed_size=len(records) - 1)
    with pytest.raises(DecompressionLimitError):
        _decode(good + compressed_good, layout, max_decompressed_size=len(records) - 1)


def _lz4_batch_of_blocks(header: bytes, records: bytes, count: int, base_offset: int) -> bytes:
    """An LZ4 batch whose frame holds ``records`` as a block kcodec's decoder decides and a
    last block of 15 literals it leaves to liblz4 (which decodes it)."""
    import cramjam

    from kcodec import _frames
    first = bytes(cramjam.lz4.compress_block(records[:-15], store_size=False))
    last = b"\xf0\x00" + records[-15:]   # (a literal length that ends where the input does)
    descriptor = b"\x60\x40"
    frame = (b"\x04\x22\x4d\x18" + descriptor
             + bytes([_frames.lz4_header_checksum(descriptor, 2)])
             + b"".join(len(b).to_bytes(4, "little") + b for b in (first, last)) + b"\0" * 4)
    return _batch_of_section(header, frame, "lz4", count, base_offset)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd"])
def test_small_frames_decoded_in_one_pass_keep_every_verdict(codec: str, layout: str) -> None:
    """Small LZ4, snappy and zstd batches are queued with the uncompressed ones around them
    and decompressed in one pass without the GIL (with binary views, into one buffer the
    views share); a batch that pass cannot decide (a block only the library decides, a
    damaged record, a limit) is undone and given the ordinary verdict, and the batches
    before and after it are decoded as ever."""
    plain = [_batch_of(base, 10, 50) for base in range(0, 100, 10)]
    small = [_compressed_batch_of_records(codec, b[:61], b[61:], 10, base)
             for base, b in zip(range(0, 100, 10), plain)]
    assert all(len(b) < 2000 for b in small)
    mixed = b"".join(small[i] if i % 3 else plain[i] for i in range(10))
    expected = column_rows(kcodec.decode_columns(b"".join(plain), include_headers=True))
    for threads in (1, 2):
        assert column_rows(kcodec.decode_columns(b"".join(small), include_headers=True,
                                                 threads=threads)) == expected
        assert column_rows(kcodec.decode_columns(mixed, include_headers=True,
                                                 threads=threads)) == expected
    if layout == "scan":
        assert column_rows(_decode(mixed, layout)) == column_rows(
            _decode(b"".join(plain), layout))
    if layout == "views":
        for threads in (1, 2):
            table = views(mixed, include_headers=True, threads=threads)
            assert arrow_rows(table) == expected
            for chunk in table.column("value").chunks:
                # validity, views, copied values: then the input and the frames' buffer
                assert len(chunk.buffers()) <= 5
    header, records = plain[5][:61], plain[5][61:]
    if codec == "lz4":   # a batch in the middle that only liblz4 decides
        undecided = _lz4_batch_of_blocks(header, records, 10, 50)
        log = b"".join(small[:5]) + undecided + b"".join(small[6:])
        assert column_rows(kcodec.decode_columns(log, include_headers=True)) == expected
        if layout == "scan":
            assert column_rows(_decode(log, layout)) == column_rows(
                _decode(b"".join(plain), layout))
        if layout == "views":
            assert arrow_rows(views(log, include_headers=True)) == expected
    damaged = bytearray(records)
    damaged[0] += 2   # the first record's length, 1 more
    before = b"".join(small[:5])
    for bad in [_compressed_batch_of_records(codec, header, bytes(damaged), 10, 50),
                _compressed_batch_of_records(codec, header, records, 11, 50),
                _compressed_batch_of_records(codec, header, records + b"\0\0", 10, 50)]:
        with pytest.raises(InvalidRecordError) as invalid:
            _decode(before + bad + b"".join(small[6:]), layout)
        assert invalid.value.position == len(before)
    corrupt = bytearray(small[5])
    corrupt[-12:-4] = b"\xff" * 8   # the frame's last bytes
    corrupt[17:21] = kcodec.crc32c(bytes(corrupt[21:])).to_bytes(4, "big")
    with pytest.raises(KcodecError) as ordinary:
        [r for b in kcodec.read_batches(before + bytes(corrupt)) for r in b]
    with pytest.raises(type(ordinary.value)) as same:
        _decode(before + bytes(corrupt), layout)
    assert same.value.position == ordinary.value.position
    crc = bytearray(small[5])
    crc[-1] ^= 1
    with pytest.raises(kcodec.errors.ChecksumError) as mismatch:
        _decode(before + bytes(crc), layout)
    assert mismatch.value.position == len(before)
    most = max(len(b) - 61 for b in plain)
    assert _decode(mixed, layout, max_decompressed_size=most)
    with pytest.raises(DecompressionLimitError) as rows_limit:
        [r for b in kcodec.read_batches(mixed, max_decompressed_size=most - 1) for r in b]
    with pytest.raises(DecompressionLimitError) as limit:
        _decode(mixed, layout, max_decompressed_size=most - 1)
    assert limit.value.position == rows_limit.value.position == len(plain[0]) + 61


def test_small_zstd_frames_of_every_kind_without_the_gil() -> None:
    """libzstd is called without the GIL through python-zstandard's CFFI backend (cffi
    comes with kcodec), with contexts kept from decode to decode (until the spare buffers
    are released). Small zstd batches decode as the row reader reads them whether
    their frame states its content size or not (zstd-jni's does not) and with a content
    checksum; a frame whose framing allows more than one call takes (1 MiB), a damaged
    checksum, and concatenated frames are left to the ordinary path, which decides them."""
    import zstandard

    from kcodec import _libzstd
    assert _libzstd.available()
    plain = [_batch_of(base, 10, 50) for base in range(0, 40, 10)]
    sized, unsized, checked = (zstandard.ZstdCompressor(write_content_size=size,
                                                        write_checksum=checksum)
                               for size, checksum in [(True, False), (False, False),
                                                      (False, True)])

    def batch(header: bytes, section: bytes, count: int, base: int) -> bytes:   # zstd's
        return _batch_of_section(header, section, "zstd", count, base)
    zeros = _batch_of_values(40, [bytes(2000)] * 600)   # 1.2 MB of records, a few KB zstd
    compressors = [sized, unsized, checked, unsized]
    batches = [batch(b[:61], c.compress(b[61:]), 10, base)
               for base, b, c in zip(range(0, 40, 10), plain, compressors)]
    twice = bytes(plain[0][61:])
    batches.append(batch(zeros[:61], unsized.compress(zeros[61:]), 600, 40))
    batches.append(batch(plain[0][:61], sized.compress(twice[:100]) +
                         sized.compress(twice[100:]), 10, 640))
    log = b"".join(batches)
    assert all(b.size < 16384 for b in kcodec.read_batches(log))
    expected = rows(log)
    for threads in (1, 2, 1):   # (decompression contexts kept, freed, and made again)
        assert column_rows(kcodec.decode_columns(log, include_headers=True,
                                                 threads=threads)) == expected
        assert arrow_rows(views(log, include_headers=True, threads=threads)) == expected
        kcodec.columnar.release_spare_buffers()
    damaged = bytearray(batch(plain[1][:61], checked.compress(plain[1][61:]), 10, 10))
    damaged[-1] ^= 1   # the content checksum
    damaged[17:21] = kcodec.crc32c(bytes(damaged[21:])).to_bytes(4, "big")
    with pytest.raises(CompressionError) as ordinary:
        rows(batches[0] + bytes(damaged))
    with pytest.raises(CompressionError) as caught:
        kcodec.decode_columns(batches[0] + bytes(damaged))
    assert (str(caught.value), caught.value.position) == (str(ordinary.value),
                                                          ordinary.value.position)


def _zstd_frame(descriptor: bytes, kind: int, size: int, content: bytes,
                last: bool = True) -> bytes:
    """A zstd frame made by hand: the magic number, ``descriptor`` (the rest of the frame
    header) and one block of ``kind`` (0 raw, 1 RLE) and ``size``, the last one unless not
    ``last``."""
    header = last | kind << 1 | size << 3
    return b"\x28\xb5\x2f\xfd" + descriptor + header.to_bytes(3, "little") + content


# frame header descriptors: two that state no content size but a window, one that states it
_UNSIZED_2MIB, _UNSIZED_1KIB = bytes([0, 11 << 3]), bytes([0, 0])
_SIZED_200K = b"\xa0" + (200_000).to_bytes(4, "little")
_EMPTY_LAST_BLOCK = b"\x01\x00\x00"


@pytest.mark.parametrize("frame, accepted", [
    (_zstd_frame(_UNSIZED_2MIB, 1, 100_000, b"x"), True),
    (_zstd_frame(_UNSIZED_2MIB, 1, 200_000, b"x"), False),      # past 128 KiB
    (_zstd_frame(_UNSIZED_1KIB, 0, 1000, bytes(1000)), True),
    (_zstd_frame(_UNSIZED_1KIB, 0, 2000, bytes(2000)), False),  # past the 1 KiB window
    (_zstd_frame(_SIZED_200K, 1, 200_000, b"x"), True),         # the one-call decoder's
    (_zstd_frame(_SIZED_200K, 1, 100_000, b"x"), False),        # short of its size
    (_zstd_frame(_SIZED_200K, 1, 100_000, b"x", last=False) + _EMPTY_LAST_BLOCK, False),
])
def test_zstd_blocks_are_decided_as_python_zstandard_decides(frame: bytes,
                                                             accepted: bool) -> None:
    """A zstd block decompresses to at most the frame's block size (its window, and never
    more than 128 KiB: RFC 8878, 3.1.1.2.3). libzstd's streaming decoder, which Java's
    reader and python-zstandard's decompressor use, refuses a block past it, but hands a
    frame that states its content size to its one-call decoder, which does not: kcodec
    decides each frame as python-zstandard's decompressor does, in rows and in every
    columnar layout, whichever path decompresses it."""
    import zstandard

    from kcodec import codecs
    try:
        peer: bytes | None = zstandard.ZstdDecompressor().decompress(frame,
                                                                     max_output_size=1 << 22)
    except zstandard.ZstdError:
        peer = None
    assert (peer is not None) == accepted
    if accepted:
        assert codecs.decompress("zstd", frame) == peer
    else:
        with pytest.raises(CompressionError, match="corrupt zstd data"):
            codecs.decompress("zstd", frame)
    log = _batch_of_section(_batch_of(0, 1, 10)[:61], frame, "zstd", 1, 0)
    with pytest.raises(KcodecError) as ordinary:
        rows(log)
    assert isinstance(ordinary.value, CompressionError) != accepted
    for layout in LAYOUTS:
        for threads in (1, 2):
            with pytest.raises(KcodecError) as caught:
                _decode(log, layout, threads=threads)
            assert (type(caught.value), str(caught.value), caught.value.position) == (
                type(ordinary.value), str(ordinary.value), ordinary.value.position)


@pytest.mark.parametrize("values", [10, 1000])
def test_truncated_zstd_batches_fail_as_rows_fail(values: int) -> None:
    """A zstd batch whose section ends inside its frame (a small one, queued; a large one,
    read a window at a time) fails in every layout with the row reader's error, at its
    position, after the batch before it."""
    import random
    rng = random.Random(values)
    plain = _batch_of_values(10, [rng.randbytes(100) for _ in range(values)])
    from kcodec import codecs
    section = codecs.compress("zstd", plain[61:])
    before = _compressed_batch_of_records("zstd", plain[:61], plain[61:], values, 0)
    for cut in (len(section) // 2, len(section) - 3):
        log = before + _batch_of_section(plain[:61], section[:cut], "zstd", values, values)
        with pytest.raises(CompressionError) as ordinary:
            rows(log)
        assert ordinary.value.position == len(before) + 61   # (its records section)
        for layout in LAYOUTS:
            for threads in (1, 2):
                with pytest.raises(CompressionError) as caught:
                    _decode(log, layout, threads=threads)
                assert (str(caught.value), caught.value.position) == (
                    str(ordinary.value), ordinary.value.position)


def _gzip_member(data: bytes, name: bytes = b"") -> bytes:
    """One gzip member of ``data`` (with a file name in its header when given)."""
    import gzip
    import io
    out = io.BytesIO()
    with gzip.GzipFile(filename=name.decode(), mode="wb", fileobj=out, mtime=0) as member:
        member.write(data)
    return out.getvalue()


def test_small_gzip_batches_of_every_kind_without_the_gil() -> None:
    """zlib is called without the GIL through the functions of the library the zlib module
    uses, with streams kept from decode to decode (until the spare buffers are released).
    Small gzip batches decode as the row reader reads them, whatever the member's header
    holds; several members, bytes after the member (which Java ignores), a member that
    inflates past what its trailer states or past 16 KiB when it is 1 KiB or more (left to
    cramjam) are left to the ordinary path, which decides them."""
    import random

    from kcodec import _libz
    assert _libz.available()
    rng = random.Random(38)
    plain = [_batch_of(base, 10, 50) for base in range(0, 40, 10)]
    records = [bytes(b[61:]) for b in plain]
    sections = [_gzip_member(records[0]), _gzip_member(records[1], name=b"records.bin"),
                _gzip_member(records[2][:200]) + _gzip_member(records[2][200:]),
                _gzip_member(records[3]) + b"\x00\x00 after"]
    batches = [_batch_of_section(b[:61], section, "gzip", 10, base)
               for base, b, section in zip(range(0, 40, 10), plain, sections)]

    def letters(n: int) -> bytes:   # (2 bits a byte: gzip takes them to about a quarter)
        return bytes(rng.choice(b"acgt") for _ in range(n))
    queued = _batch_of_values(40, [letters(400) for _ in range(20)])    # ~8 KB, ~2 KB gzip
    larger = _batch_of_values(60, [letters(600) for _ in range(30)])    # ~18 KB, ~5 KB
    zeros = _batch_of_values(90, [bytes(2000)] * 600)   # 1.2 MB of records, a few KB gzip
    batches += [_batch_of_section(b[:61], _gzip_member(bytes(b[61:])), "gzip", n, base)
                for b, n, base in [(queued, 20, 40), (larger, 30, 60), (zeros, 600, 90)]]
    log = b"".join(batches)
    assert [1024 < b.size < 16384 for b in kcodec.read_batches(log)][-3:] == [True] * 3
    expected = rows(log)
    for threads in (1, 2, 1):   # (streams kept, freed, and made again)
        assert column_rows(kcodec.decode_columns(log, include_headers=True,
                                                 threads=threads)) == expected
        assert arrow_rows(views(log, include_headers=True, threads=threads)) == expected
        kcodec.columnar.release_spare_buffers()


@pytest.mark.parametrize("damage", ["trailer crc", "trailer size", "truncated", "limit"])
def test_small_gzip_batches_fail_as_rows_fail(damage: str) -> None:
    """A small gzip batch whose member is damaged (its trailer's CRC-32 or size, cut short)
    or that inflates past the limit fails in every layout with the row reader's error, at
    its position, after the batch before it."""
    plain = _batch_of(10, 10, 50)
    section = bytearray(_gzip_member(bytes(plain[61:])))
    first = _batch_of(0, 5, 50)   # (within the limit)
    before = _compressed_batch_of_records("gzip", first[:61], first[61:], 5, 0)
    limit = None
    if damage == "trailer crc":
        section[-8] ^= 1
    elif damage == "trailer size":
        section[-4] -= 1
    elif damage == "truncated":
        section = section[:-9]
    else:
        limit = len(plain) - 61 - 1
    log = before + _batch_of_section(plain[:61], bytes(section), "gzip", 10, 10)
    error = DecompressionLimitError if damage == "limit" else CompressionError
    with pytest.raises(error) as ordinary:
        list(r for b in kcodec.read_batches(log, max_decompressed_size=limit) for r in b)
    assert ordinary.value.position == len(before) + 61   # (its records section)
    for layout in LAYOUTS:
        for threads in (1, 2):
            with pytest.raises(error) as caught:
                _decode(log, layout, threads=threads, max_decompressed_size=limit)
            assert (str(caught.value), caught.value.position) == (
                str(ordinary.value), ordinary.value.position), (layout, threads)


@pytest.mark.parametrize("per_batch", [10, 100])
def test_many_small_frames_are_decoded_a_few_megabytes_at_a_time(per_batch: int) -> None:
    """Queued frames are decoded once they hold 4 MiB or number 1024: with binary views,
    each such pass's frames share a buffer of their own, so none grows past what a view's
    offset reaches."""
    import random
    rng = random.Random(5)
    log = b"".join(_compressed_batch_of_records(
        "lz4", b[:61], b[61:], per_batch, base) for base in range(0, 50_000, per_batch)
        for b in [_batch_of_values(base, [rng.randbytes(100) for _ in range(per_batch)])])
    assert len(log) > 5 << 20
    expected = rows(log)
    assert column_rows(kcodec.decode_columns(log, include_headers=True)) == expected
    table = views(log, include_headers=True)
    assert arrow_rows(table) == expected
    passes = 2 if per_batch == 100 else -(-5000 // 1024)   # by bytes, by frames
    assert len(table.column("value").chunks[0].buffers()) == 3 + passes   # a pass's buffer


def _batch_of_values(base: int, values: list[bytes]) -> bytes:
    builder = kcodec.BatchBuilder(base_offset=base)
    for i, value in enumerate(values):
        builder.append(value, key=b"k%d" % i, timestamp=1000 + i)
    return builder.build()


@pytest.mark.parametrize("first", ["none", "lz4", "snappy"])
@pytest.mark.parametrize("then", ["gzip", "zstd", "lz4"])
def test_the_first_bad_batch_fails_first(first: str, then: str) -> None:
    """Whatever order batches are decoded in (queued, decompressed at once, or block by
    block), the error raised is the row reader's, for the first bad batch."""
    plain = _batch_of(0, 10, 50)
    damaged = bytearray(plain[61:])
    damaged[0] += 2   # the first record's length, 1 more
    if first == "none":
        bad_first = bytearray(plain[:61]) + damaged
        bad_first[17:21] = kcodec.crc32c(bytes(bad_first[21:])).to_bytes(4, "big")
    else:
        bad_first = bytearray(_compressed_batch_of_records(first, plain[:61], bytes(damaged), 10))
    corrupt_then = bytearray(_compressed_batch_of_records(then, plain[:61], plain[61:], 10, 10))
    corrupt_then[70:78] = b"\xff" * 8   # inside the compressed data
    corrupt_then[17:21] = kcodec.crc32c(bytes(corrupt_then[21:])).to_bytes(4, "big")
    log = (_compressed_batch_of_records("lz4", plain[:61], plain[61:], 10, 20) + bytes(bad_first)
           + bytes(corrupt_then))
    with pytest.raises(KcodecError) as ordinary:
        rows(log)
    assert ordinary.value.position is not None
    assert ordinary.value.position < len(log) - len(corrupt_then)   # the first bad one's
    for threads in (1, 2):
        with pytest.raises(KcodecError) as caught:
            kcodec.decode_columns(log, threads=threads)
        assert (type(caught.value), str(caught.value)) == (type(ordinary.value),
                                                           str(ordinary.value))


@pytest.mark.parametrize("first", ["none", "lz4"])
def test_a_bad_batch_fails_before_a_bad_count_or_framing_after_it(first: str) -> None:
    """A batch whose CRC fails comes first, before a later batch's negative record count or
    input that cannot be framed (which the decoder meets before it decodes a thing)."""
    plain = _batch_of(0, 10, 50)
    bad = bytearray(plain if first == "none" else
                    _compressed_batch_of_records(first, plain[:61], plain[61:], 10))
    bad[-1] ^= 1
    negative = bytearray(_batch_of(10, 10, 50))
    negative[57:61] = b"\xff" * 4
    negative[17:21] = kcodec.crc32c(bytes(negative[21:])).to_bytes(4, "big")
    unframable = (20).to_bytes(8, "big") + (5).to_bytes(4, "big") + b"\0" * 5
    for then in (bytes(negative), unframable):
        log = _batch_of(30, 10, 50) + bytes(bad) + then
        with pytest.raises(KcodecError) as ordinary:
            rows(log)
        assert isinstance(ordinary.value, kcodec.errors.ChecksumError)
        for threads in (1, 2):
            with pytest.raises(KcodecError) as caught:
                kcodec.decode_columns(log, threads=threads)
            assert (type(caught.value), str(caught.value)) == (type(ordinary.value),
                                                               str(ordinary.value))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd"])
def test_records_longer_than_many_blocks(codec: str, layout: str) -> None:
    """A record that spans many blocks, between short ones, lands whole (also past the
    512 KiB from which decoded records are dropped)."""
    values = [b"short %d" % i for i in range(50)]
    values += [bytes(range(256)) * 4096 + b"end"]   # 1 MiB: 16 LZ4 or 32 snappy blocks
    values += [b"after %d" % i for i in range(50)]
    values += [bytes(range(255, -1, -1)) * 20480 + b"end"]   # 5 MiB
    values += [b"last %d" % i for i in range(50)]
    builder = kcodec.BatchBuilder(compression=codec)
    for value in values:
        builder.append(value, key=b"k", timestamp=TS)
    log = builder.build()
    if layout == "views":
        assert _decode(log, layout).column("value").to_pylist() == values
    elif layout == "scan":
        assert column_rows(_decode(log, layout)) == [
            (i, TS, b"k", None, []) for i in range(len(values))]
    else:
        cols = kcodec.decode_columns(log, include_headers=True)
        assert column_rows(cols) == [(i, TS, b"k", v, []) for i, v in enumerate(values)]


def test_binary_views_of_a_batch_guessed_short_point_at_its_values(empty_pools: None) -> None:
    """With views, LZ4 and zstd batches of 512 KiB and more are decompressed into a buffer in
    cache and streamed to the buffer the views keep, sized by a guess: zstd frames state no
    size, so a batch whose values compress ~15x, after one compressing ~2x, is guessed at
    a seventh of its size and the kept buffer grows (and moves) on the way."""
    pytest.importorskip("pyarrow")
    import random

    from kcodec.columnar import release_spare_buffers
    noise = random.Random(7)

    def zstd_batch(values: list[bytes], base_offset: int) -> bytes:
        builder = kcodec.BatchBuilder(compression="zstd", base_offset=base_offset)
        for value in values:
            builder.append(value, key=b"k", timestamp=TS)
        return builder.build()

    low = [noise.randbytes(512) + bytes(512) for _ in range(1000)]
    high = [noise.randbytes(64) + bytes([i % 251]) * 960 for i in range(4000)]
    log = zstd_batch(low, 0) + zstd_batch(high, 1000)
    release_spare_buffers()   # (no spare of the builders' holds the second batch)
    table = kcodec.decode_arrow(log, binary_view=True)
    assert table.column("value").to_pylist() == low + high
    assert table.column("offset").to_pylist() == list(range(5000))


def test_binary_views_of_large_lz4_and_zstd_batches_keep_every_record() -> None:
    """Views of LZ4 and zstd batches of 512 KiB and more point into the copies made as the
    records are decoded: every record's bytes are copied, those a range leaves out too, in
    one thread or two, with records of every length and headers."""
    pa = pytest.importorskip("pyarrow")
    import random
    noise = random.Random(3)
    log = b""
    values: list[bytes] = []
    headers: list[list[dict[str, Any]]] = []
    for codec in ["lz4", "zstd"]:
        for _ in range(2):
            builder = kcodec.BatchBuilder(compression=codec, base_offset=len(values))
            for i in range(1500):   # ~1.3 MB of records a batch
                value = noise.randbytes(noise.randrange(40)) + bytes([i % 251]) * noise.randrange(
                    300, 1500)
                values.append(value)
                headers.append([{"key": "h", "value": b"x" * (i % 5)}])
                builder.append(value, key=b"k%d" % i, timestamp=TS + i,
                               headers=[("h", b"x" * (i % 5))])
            log += builder.build()
    for threads in (1, 2):
        table = kcodec.decode_arrow(log, binary_view=True, include_headers=True,
                                    threads=threads)
        table.validate(full=True)
        assert table.schema.field("value").type == pa.binary_view()
        assert table.column("value").to_pylist() == values
        assert table.column("headers").to_pylist() == headers
        part = kcodec.decode_arrow(log, binary_view=True, threads=threads,
                                   offsets=(1000, 5000))
        assert part.column("value").to_pylist() == values[1000:5000]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_raw_snappy_batches(layout: str) -> None:
    """A snappy batch of one raw block, as librdkafka writes, decodes through the same
    block-by-block path; a corrupt one keeps the ordinary verdict."""
    import cramjam
    good = _batch_of(0, 500, 100)
    header, records = good[:61], good[61:]
    raw = bytearray(header) + bytes(cramjam.snappy.compress_raw(records))
    raw[22] |= int(kcodec.Compression.SNAPPY)
    raw[8:12] = (len(raw) - 12).to_bytes(4, "big")
    raw[17:21] = kcodec.crc32c(bytes(raw[21:])).to_bytes(4, "big")
    if layout == "views":
        assert _decode(bytes(raw), layout).column("value").to_pylist() == [
            bytes([i % 251]) * 100 for i in range(500)]
    elif layout == "scan":
        assert column_rows(_decode(bytes(raw), layout)) == column_rows(_decode(good, layout))
    else:
        assert column_rows(kcodec.decode_columns(bytes(raw), include_headers=True)) == (
            column_rows(kcodec.decode_columns(good, include_headers=True)))
    assert _decode(bytes(raw) * 2, layout, max_decompressed_size=len(records))
    with pytest.raises(DecompressionLimitError):
        _decode(good + bytes(raw), layout, max_decompressed_size=len(records) - 1)
    raw[-20] ^= 0xFF
    raw[17:21] = kcodec.crc32c(bytes(raw[21:])).to_bytes(4, "big")
    with pytest.raises(KcodecError) as caught:
        _decode(bytes(raw), layout)
    with pytest.raises(type(caught.value)):
        [r for b in kcodec.read_batches(bytes(raw)) for r in b]


def test_malformed_utf8_header_keys_decode_as_java_does() -> None:
    """Arrow's string columns must be valid UTF-8: malformed keys get U+FFFD, as in Java and
    the row API."""
    pytest.importorskip("pyarrow")
    builder = kcodec.BatchBuilder()
    builder.append(b"v", key=b"k", headers=[("ok", b"1")])
    builder.append(b"w", key=b"k", headers=[("ok", b"2")])
    batch = bytearray(builder.build())
    at = batch.rindex(b"ok")
    batch[at] = 0xFF   # the second record's header key: b"\xffk"
    batch[17:21] = kcodec.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    rows = [r.headers[0][0] for b in kcodec.read_batches(bytes(batch)) for r in b]
    for views in (False, True):
        table = kcodec.decode_arrow(bytes(batch), include_headers=True, binary_view=views)
        table.validate(full=True)
        keys = [h[0]["key"] for h in table.column("headers").to_pylist()]
        assert keys == rows == ["ok", "\ufffdk"]
