"""Columnar decoding equals the row API, on every vector, real segment and generated input."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import ControlType, TimestampType
from kcodec.errors import CompressionError, DecompressionLimitError, InvalidRecordError, KcodecError

from .columnar_rows import (
    TS,
    arrow_rows,
    batch_of,
    batch_of_section,
    batch_of_values,
    chunked_rows,
    column_rows,
    mixed_log,
    rows,
    transactional_batch,
    transactional_log,
    txn_marker,
    views,
)
from .conftest import VECTORS, real_segments, resealed


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
    plain = batch_of_values(0, values)
    section = bytearray(codecs.compress(codec, plain[61:]))
    for at, byte in changes:
        section[at % len(section)] = byte
    if cut is not None:
        section = section[:cut % (len(section) + 1)]
    batch = batch_of_section(plain[:61], bytes(section), codec, len(values), 0)
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
    assert picked(offsets=(2**64, 2**65)) == picked(timestamps=(2**64, 2**65)) == []
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


def test_an_abort_marker_is_the_first_key_of_a_control_batch_as_java_reads_it() -> None:
    """Java's consumer, read_committed, reads the first record's key of every control batch
    of a producer it fetches (CompletedFetch.containsAbortMarker): an ABORT there ends the
    producer's aborted transaction, an ABORT after a COMMIT does not; the keys after the
    first are not read; a first key Kafka cannot parse fails whether or not its producer
    was aborted. read_uncommitted reads no control key."""
    def control(pid: int, base: int, *keys: bytes) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0,
                                      is_transactional=True, is_control=True)
        for key in keys:
            builder.append_control_record(key, b"\x00\x00\x00\x00\x00\x00", timestamp=TS)
        return builder.build()
    abort, commit, short = b"\x00\x00\x00\x00", b"\x00\x00\x00\x01", b"\x00\x00\x00"

    def offsets(log: bytes, aborted: list[tuple[int, int]] | None) -> list[list[int]]:
        found = [[b.base_offset for b in kcodec.columnar.select_batches(
            kcodec.read_batches(log), aborted_transactions=aborted)]]
        for threads in (1, 2):
            found.append(kcodec.decode_columns(
                log, aborted_transactions=aborted, threads=threads)["offset"].tolist())
            found.append(kcodec.decode_arrow(
                log, aborted_transactions=aborted, threads=threads).column("offset").to_pylist())
        return found
    commit_first = (transactional_batch(1, 0, b"a") + control(1, 1, commit, abort)
                    + transactional_batch(1, 3, b"b"))
    assert offsets(commit_first, [(1, 0)]) == [[]] * 5
    abort_first = (transactional_batch(1, 0, b"a") + control(1, 1, abort, short)
                   + transactional_batch(1, 3, b"b"))
    assert offsets(abort_first, [(1, 0)]) == [[3]] * 5
    unparsable = (transactional_batch(1, 0, b"a") + control(1, 1, short)
                  + transactional_batch(1, 2, b"b"))
    for aborted in ([], [(2, 0)], [(1, 0)]):
        with pytest.raises(kcodec.errors.InvalidRecordError, match="at least 4 bytes"):
            kcodec.decode_columns(unparsable, aborted_transactions=aborted)
    assert offsets(unparsable, None) == [[0, 2]] * 5


def test_control_batches_are_gone_through_as_java_goes_through_them() -> None:
    """Java's consumer reads every record of a control batch it does not skip (returning
    none), and reads an only record to the batch's end: a control batch declaring one
    record with another's bytes after it fails, ending an aborted transaction or not,
    read_committed or not, as the row reader fails."""
    def marker(kind: ControlType) -> bytes:
        plain = txn_marker(kind, 7, 1)
        return resealed(plain + plain[61:])   # a second record's bytes; the count still 1
    for kind in (ControlType.ABORT, ControlType.COMMIT):
        log = transactional_batch(7, 0, b"aborted") + marker(kind) + batch_of(2, 1, 5)
        with pytest.raises(InvalidRecordError, match="records still remaining") as ordinary:
            [r for b in kcodec.read_batches(log) for r in b]
        for aborted in (None, [(7, 0)]):
            for threads in (1, 2):
                with pytest.raises(InvalidRecordError, match="records still remaining") as caught:
                    kcodec.decode_columns(log, aborted_transactions=aborted, threads=threads)
                assert caught.value.position == ordinary.value.position


def transactions_log(steps: list[tuple[str, int]]) -> tuple[bytes, list[tuple[int, int]]]:
    """A log of producers' transactional and plain batches, by ``steps`` of (what, pid):
    "data" opens or continues pid's transaction, "plain" is a plain batch, "commit" and
    "abort" end pid's open transaction (else do nothing); and the (pid, first offset) of
    each aborted transaction, as a fetch response lists them. Timestamps follow offsets."""
    log, aborted, offset = b"", [], 0
    first_of: dict[int, int] = {}   # the open transactions' first offsets
    for what, pid in steps:
        if what in ("commit", "abort"):
            if pid not in first_of:
                continue
            kind = ControlType.COMMIT if what == "commit" else ControlType.ABORT
            log += txn_marker(kind, pid, offset, timestamp=TS + offset)
            if what == "abort":
                aborted.append((pid, first_of[pid]))
            del first_of[pid]
            offset += 1
        elif what == "data":
            first_of.setdefault(pid, offset)
            log += transactional_batch(pid, offset, b"%d-%d" % (pid, offset),
                                       b"%d-%d'" % (pid, offset), timestamp=TS + offset)
            offset += 2
        else:
            plain = kcodec.BatchBuilder(base_offset=offset)
            plain.append(b"plain-%d" % offset, timestamp=TS + offset)
            log += plain.build()
            offset += 1
    return log, aborted


def read_committed_rows(log: bytes, aborted: list[tuple[int, int]], offsets: tuple[int, int],
                        earliest: int) -> list[tuple[Any, ...]]:
    """The records a read_committed consumer of the whole log receives, as Java's fetcher
    picks them, then within the ranges."""
    pending, aborting, out = sorted(aborted, key=lambda t: t[1]), set(), []
    for batch in kcodec.read_batches(log):
        while pending and pending[0][1] <= batch.last_offset:
            aborting.add(pending.pop(0)[0])
        if batch.is_control:
            if any(r.control_type is ControlType.ABORT for r in batch):
                aborting.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborting:
            continue
        out += [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch
                if offsets[0] <= r.offset < offsets[1] and r.timestamp >= earliest]
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["data", "data", "plain", "commit", "abort"]),
                          st.integers(1, 2)), min_size=1, max_size=12),
       st.integers(0, 24), st.integers(0, 40), st.integers(0, 24), st.sampled_from([1, 2]))
def test_read_committed_within_ranges(steps: list[tuple[str, int]], lo: int, length: int,
                                      from_offset: int, threads: int) -> None:
    """Transactions of several producers, committed, aborted and left open, read committed
    within offset and timestamp ranges, as Java's consumer reads the whole log."""
    log, aborted = transactions_log(steps)
    offsets, timestamps = (lo, lo + length), (TS + from_offset, 2**63)
    expected = read_committed_rows(log, aborted, offsets, TS + from_offset)
    options: dict[str, Any] = {"aborted_transactions": aborted, "offsets": offsets,
                               "timestamps": timestamps, "include_headers": True,
                               "threads": threads}
    assert column_rows(kcodec.decode_columns(log, **options)) == expected
    assert chunked_rows(kcodec.iter_columns(log, chunk_records=2, **options)) == expected
    assert arrow_rows(kcodec.decode_arrow(log, **options)) == expected


def test_read_committed_passes_batches_without_a_producer_id() -> None:
    """Java's consumer looks for aborted data only in batches with a producer id
    (``hasProducerId``): a transactional batch of producer -1 is read even when the aborted
    list names -1, as are the records of a marker of -1 (which must be well formed)."""
    no_producer = kcodec.BatchBuilder(is_transactional=True)
    no_producer.append(b"a", timestamp=TS)
    log = no_producer.build() + transactional_batch(5, 1, b"b")
    marker = kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=-1,
                                                producer_epoch=-1, coordinator_epoch=0,
                                                base_offset=2)
    aborted = [(-1, 0)]
    for threads in (1, 2):
        for data in (log, log + marker):
            assert kcodec.decode_columns(data, aborted_transactions=aborted,
                                         threads=threads)["offset"].tolist() == [0, 1]
            assert kcodec.decode_arrow(data, aborted_transactions=aborted,
                                       threads=threads).column("offset").to_pylist() == [0, 1]
    bad_marker = bytearray(marker)
    bad_marker[57:61] = (2).to_bytes(4, "big")   # a record count the records disagree with
    with pytest.raises(kcodec.errors.InvalidRecordError):
        kcodec.decode_columns(log + bytes(bad_marker), aborted_transactions=aborted,
                              validate_crc=False)


def test_an_abort_marker_outside_the_ranges_still_ends_its_transaction() -> None:
    """Ranges select records, not which transactions were aborted: pid 2 aborts offsets 2-3
    (its marker at 5) and then commits offset 7, which ranges starting past the marker
    keep, as a read_committed consumer of the whole log reads it. The marker is read, so
    its CRC is checked; a marker of a producer not aborted is not read at all."""
    log = (transactional_log() + transactional_batch(2, 7, b"p2-late", timestamp=TS + 10)
           + txn_marker(ControlType.COMMIT, 2, 8, timestamp=TS + 10))
    aborted = [(2, 2)]

    def values_of(**options: Any) -> list[list[bytes]]:
        found = []
        for threads in (1, 2):
            found.append(column_rows(kcodec.decode_columns(
                log, aborted_transactions=aborted, threads=threads, include_headers=True,
                **options)))
            found.append(arrow_rows(kcodec.decode_arrow(
                log, aborted_transactions=aborted, threads=threads, include_headers=True,
                **options)))
            found.append(chunked_rows(kcodec.iter_columns(
                log, aborted_transactions=aborted, threads=threads, chunk_records=1,
                include_headers=True, **options)))
        return [[row[3] for row in rows_found] for rows_found in found]
    assert values_of() == [[b"p1-a", b"p1-b", b"plain", b"p2-late"]] * 6
    assert values_of(offsets=(6, 2**63)) == [[b"plain", b"p2-late"]] * 6
    assert values_of(timestamps=(TS + 1, 2**63)) == [[b"p2-late"]] * 6
    assert [b.base_offset for b in kcodec.columnar.select_batches(
        kcodec.read_batches(log), aborted_transactions=aborted, offsets=(7, 2**63))] == [7]
    position = {b.base_offset: b.position for b in kcodec.read_batches(log)}
    for base in (4, 5):   # the COMMIT marker of pid 1, the ABORT marker of pid 2
        damaged = bytearray(log)
        damaged[position[base] + 40] ^= 1   # its max timestamp, under its CRC
        if base == 5:
            with pytest.raises(kcodec.errors.ChecksumError) as caught:
                kcodec.decode_columns(bytes(damaged), aborted_transactions=aborted,
                                      offsets=(7, 2**63))
            assert caught.value.position == position[5]
        else:
            assert kcodec.decode_columns(bytes(damaged), aborted_transactions=aborted,
                                         offsets=(7, 2**63))["count"] == 1


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
    log = b"".join(batch_of(i, 1, 20) for i in range(20000))
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
    # no columns: the records are counted all the same
    assert kcodec.decode_columns(data, columns=[])["count"] == 100
    assert kcodec.decode_arrow(data, columns=[]).num_rows == 100
    assert sum(len(b) for b in kcodec.iter_arrow(data, columns=[], chunk_records=30)) == 100
    # ranges no int64 lies in, past either end
    for beyond in [(2**64, 2**65), (-(2**70), -(2**65))]:
        assert kcodec.decode_columns(data, offsets=beyond)["count"] == 0
        assert kcodec.decode_arrow(data, timestamps=beyond).num_rows == 0


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


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_wrappers_as_producers_write_them(magic: int) -> None:
    """Wrappers as kafka-python's producer writes them, of offset 0 with inner offsets from
    0 (and, in magic 1, timestamp 0 over CreateTime records), say nothing of where their
    records lie: ranges filter those one by one, as read_batches yields them."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    builder = LegacyRecordBatchBuilder(magic, 1, 1 << 20)   # gzip
    for i in range(5):
        builder.append(i, TS + i, b"k%d" % i, b"v%d" % i)
    data = bytes(builder.build())
    (wrapper,) = kcodec.read_batches(data)
    assert wrapper.last_offset == 0 and wrapper.max_timestamp < TS
    everything = rows(data)
    assert [row[0] for row in everything] == list(range(5))
    for offsets, earliest in [((1, 3), None), ((3, 2**63), None), (None, TS + 3)]:
        if earliest is not None and magic == 0:
            continue   # (magic 0 has no timestamps)
        timestamps = None if earliest is None else (earliest, 2**63)
        expected = [row for row in everything
                    if (offsets is None or offsets[0] <= row[0] < offsets[1])
                    and (earliest is None or row[1] >= earliest)]
        assert 0 < len(expected) < 5
        got = kcodec.decode_columns(data, offsets=offsets, timestamps=timestamps,
                                    include_headers=True)
        assert column_rows(got) == expected
        assert arrow_rows(kcodec.decode_arrow(data, offsets=offsets, timestamps=timestamps,
                                              include_headers=True)) == expected


def _legacy_wrapper(inner: bytes, last_offset: int, value: bytes | None = None, *,
                    timestamp: int = TS, log_append: bool = False) -> bytes:
    """A magic-1 gzip wrapper (CreateTime, or LogAppendTime) around the message set
    ``inner``: its value one gzip member, or ``value`` when given."""
    import gzip
    import struct
    import zlib
    value = gzip.compress(inner) if value is None else value
    body = struct.pack(">bbqii", 1, 1 | 0x08 * log_append, timestamp, -1, len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", last_offset, len(message)) + message


@pytest.mark.parametrize("wrapper_time", [TS + 99, -3])
def test_a_log_append_time_wrapper_times_its_magic_1_messages_only(wrapper_time: int) -> None:
    """Java's deep iterator gives a LogAppendTime wrapper's timestamp to its magic-1 inner
    messages; a magic-0 one inside has no timestamp (-1), and a range that takes -1 but
    not the wrapper's time keeps it."""
    magic0 = kcodec.BatchBuilder(magic=0)
    magic0.append(b"old", key=b"a")
    magic1 = kcodec.BatchBuilder(magic=1, base_offset=1)
    magic1.append(b"new", key=b"b", timestamp=TS)
    data = _legacy_wrapper(magic0.build() + magic1.build(), 11, timestamp=wrapper_time,
                           log_append=True)
    everything = rows(data)
    assert [(row[0], row[1]) for row in everything] == [(10, -1), (11, wrapper_time)]
    assert column_rows(kcodec.decode_columns(data, include_headers=True)) == everything
    earliest = -2 if wrapper_time < -1 else TS + 100
    expected = [row for row in everything if row[1] >= earliest]
    got = kcodec.decode_columns(data, timestamps=(earliest, 2**63), include_headers=True)
    assert column_rows(got) == expected
    assert len(expected) == (1 if wrapper_time < -1 else 0)


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


def test_plain_legacy_messages_are_chunked_as_asked() -> None:
    """chunk_records holds for plain legacy messages as for batches, and the chunks before
    a damaged message arrive before its error, as read_batches yields the messages before
    it."""
    builder = kcodec.BatchBuilder(magic=1)
    for i in range(50):
        builder.append(b"value %d" % i, key=b"k%d" % i, timestamp=TS + i)
    data = builder.build()
    assert [c["count"] for c in kcodec.iter_columns(data, chunk_records=10)] == [10] * 5
    assert [len(c) for c in kcodec.iter_arrow(data, chunk_records=10)] == [10] * 5
    # threads framing stretches of the input each end a chunk where a stretch ends
    sizes = [c["count"] for c in kcodec.iter_columns(data, chunk_records=10, threads=2)]
    assert sum(sizes) == 50 and max(sizes) == 10
    entries = list(kcodec.read_batches(data))
    damaged = bytearray(data)
    damaged[entries[37].position + entries[37].size - 1] ^= 1
    offsets: list[int] = []
    with pytest.raises(kcodec.errors.ChecksumError) as caught:
        for chunk in kcodec.iter_columns(bytes(damaged), chunk_records=10):
            offsets += chunk["offset"].tolist()
    assert offsets == list(range(30)) and caught.value.position == entries[37].position


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
    log = b"".join(batch_of(base, 10, 20) for base in range(0, 500, 10))
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
    big = batch_of(500, 250, 20)
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
    log = b"".join(batch_of(base, 10, 20) for base in range(0, 500, 10))
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
    plain = [batch_of(base, 10, 20) for base in range(0, 100, 10)]
    lz4 = kcodec.BatchBuilder(base_offset=100, compression="lz4")
    lz4.append(b"x", timestamp=TS)
    negative = bytearray(batch_of(110, 10, 20))
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
    log = bytearray(b"".join(batch_of(base, 1 + base % 3, 30) for base in range(0, 6000, 3)))
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
    log = bytearray(b"".join(batch_of(base, 10, 20) for base in range(0, 100, 10)))
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
    log = batch_of(0, 5, 10)
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


def test_every_entry_point_takes_the_same_options() -> None:
    def options(function: Any) -> dict[str, inspect.Parameter]:
        return dict(list(inspect.signature(function).parameters.items())[1:])
    shared = options(kcodec.decode_columns)
    streamed = options(kcodec.iter_columns)
    assert streamed.pop("chunk_records") and streamed == shared
    assert options(kcodec.decode_arrow) == options(kcodec.iter_arrow)
    arrow = options(kcodec.iter_arrow)
    assert set(arrow) - set(shared) == {"chunk_records", "topic", "partition", "binary_view"}
    assert all(arrow[name] == parameter for name, parameter in shared.items())
    with pytest.raises(TypeError, match="thread"):
        kcodec.decode_arrow(b"", thread=2)  # type: ignore[call-arg]


@pytest.mark.parametrize("codec", [6, 7])
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_an_unknown_codec_in_data_is_the_same_error_everywhere(magic: int, codec: int) -> None:
    """Codec ids 6 and 7 met in data are Kafka's UNSUPPORTED_COMPRESSION_TYPE at the
    attributes, from the row reader and the columnar decoder alike; never the argument
    error UnknownCompressionTypeError (a ValueError)."""
    from kcodec.errors import UnknownCompressionTypeError, UnsupportedCompressionTypeError
    builder = kcodec.BatchBuilder(magic=magic, compression="gzip")
    for i in range(3):
        builder.append(b"value-%d" % i, timestamp=TS)
    data = bytearray(builder.build())
    if magic == 2:
        data[22] = data[22] & ~7 | codec
        data[17:21] = kcodec.crc32c(bytes(data[21:])).to_bytes(4, "big")
        where = 21
    else:
        data[17] = data[17] & ~7 | codec
        data[12:16] = kcodec.crc32(bytes(data[16:])).to_bytes(4, "big")
        where = 17
    (entry,) = kcodec.read_batches(bytes(data))
    attempts: list[Callable[[], object]] = [
        lambda: entry.compression, entry.records, lambda: kcodec.decode_columns(data),
        lambda: kcodec.decode_arrow(data), lambda: kcodec.decode_arrow(data, threads=2)]
    for attempt in attempts:
        with pytest.raises(UnsupportedCompressionTypeError) as caught:
            attempt()
        assert not isinstance(caught.value, UnknownCompressionTypeError)
        assert caught.value.position == where


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
    # records without headers have null ones, as Spark's Kafka source gives them
    log = mixed_log()
    headers = kcodec.decode_arrow(log, include_headers=True).column("headers").to_pylist()
    assert [h is None for h in headers] == [not row[4] for row in rows(log)]
    assert any(h is None for h in headers) and any(h for h in headers)


def test_errors_carry_positions() -> None:
    bad = bytearray(VECTORS["v2_two_nullkey"])
    bad[57:61] = (3).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError):
        kcodec.decode_columns(bad, validate_crc=False)
    negative = bytearray(batch_of(0, 2, 10) + batch_of(2, 2, 10))
    at = len(batch_of(0, 2, 10))
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
    before = batch_of(0, 3, 10)
    for far in (edge + 1, 2**62, 2**63 - 1):
        builder = kcodec.BatchBuilder(compression=codec, magic=magic, base_offset=3)
        builder.append(b"a", timestamp=edge)
        builder.append(b"b", timestamp=far)
        log = before + builder.build()
        assert kcodec.decode_columns(log)["timestamp"].tolist() == [1000, 1001, 1002, edge, far]
        # [lo, hi) keeps the greatest int64 from lo = 2**63 - 1 (and any hi past it)
        assert kcodec.decode_columns(log, timestamps=(far, 2**63))["timestamp"].tolist() == [far]
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


def test_crc_checked_in_the_decoding_pass() -> None:
    log = bytearray(b"".join(batch_of(base, 10, 20) for base in range(0, 50, 10)))
    log[-2] ^= 1   # the last value's last byte (the header count follows)
    with pytest.raises(kcodec.errors.ChecksumError) as caught:
        kcodec.decode_columns(log)
    assert caught.value.position == 4 * (len(log) // 5)
    assert kcodec.decode_columns(log, validate_crc=False)["count"] == 50


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
    expected = [r.headers[0][0] for b in kcodec.read_batches(bytes(batch)) for r in b]
    for binary_view in (False, True):
        table = kcodec.decode_arrow(bytes(batch), include_headers=True, binary_view=binary_view)
        table.validate(full=True)
        keys = [h[0]["key"] for h in table.column("headers").to_pylist()]
        assert keys == expected == ["ok", "\ufffdk"]


def test_batch_level_columns_equal_the_row_api() -> None:
    """magic, compression, producer, sequence, transaction and control columns, record by
    record, as read_batches gives them: producers' batches (a first sequence of 0),
    transactions and their markers, LogAppendTime, and legacy messages and wrappers (no
    producer: -1)."""
    log = bytearray()
    idempotent = kcodec.BatchBuilder(producer_id=1000, producer_epoch=5, base_sequence=0)
    for i in range(3):
        idempotent.append(b"i%d" % i, timestamp=TS + i)
    log += idempotent.build()
    transactional = kcodec.BatchBuilder(base_offset=3, producer_id=7, producer_epoch=2,
                                        base_sequence=40, is_transactional=True,
                                        compression="lz4")
    transactional.append(b"t", timestamp=TS)
    log += transactional.build()
    log += kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=7,
                                              producer_epoch=2, coordinator_epoch=1,
                                              base_offset=4, timestamp=TS)
    stamped = kcodec.BatchBuilder(base_offset=5, timestamp_type=TimestampType.LOG_APPEND_TIME,
                                  compression="zstd")
    stamped.append(b"s", timestamp=TS)
    log += stamped.build()
    for magic, codec, base in ((0, "none", 6), (1, "none", 8), (0, "gzip", 10), (1, "snappy", 12)):
        legacy = kcodec.BatchBuilder(magic=magic, compression=codec, base_offset=base)
        legacy.append(b"l0", key=b"k", timestamp=TS)
        legacy.append(b"l1", timestamp=TS + 1)
        log += legacy.build()
    # sequences wrap past 2**31 - 1 to 0 (DefaultRecordBatch.incrementSequence); records of
    # a batch of no producer have none (-1), not the batch's -1 plus their offset delta
    wrapping = kcodec.BatchBuilder(base_offset=14, producer_id=2000, producer_epoch=0,
                                   base_sequence=2**31 - 2)
    plain = kcodec.BatchBuilder(base_offset=18)
    for i in range(4):
        wrapping.append(b"w%d" % i, timestamp=TS + i)
        plain.append(b"p%d" % i, timestamp=TS + i)
    log += wrapping.build() + plain.build()
    for codec, base in (("none", 22), ("gzip", 24)):   # magic 1, LogAppendTime
        legacy = kcodec.BatchBuilder(magic=1, compression=codec, base_offset=base,
                                     timestamp_type=TimestampType.LOG_APPEND_TIME)
        legacy.append(b"a0", timestamp=TS)
        legacy.append(b"a1", timestamp=TS)
        log += legacy.build()
    expected = [(entry.magic, int(entry.compression), entry.producer_id, entry.producer_epoch,
                 record.sequence, entry.is_transactional, entry.is_control,
                 int(entry.timestamp_type))
                for entry in kcodec.read_batches(bytes(log)) for record in entry]
    assert [row[4] for row in expected[-12:-4]] == [2**31 - 2, 2**31 - 1, 0, 1, -1, -1, -1, -1]
    assert [row[7] for row in expected[-4:]] == [1] * 4
    names = ("magic", "compression", "producer_id", "producer_epoch", "sequence",
             "is_transactional", "is_control", "timestamp_type")
    for threads in (1, 2):
        got = kcodec.decode_columns(bytes(log), metadata=True, include_control=True,
                                    threads=threads)
        assert list(zip(*(got[name].tolist() for name in names))) == expected
        table = kcodec.decode_arrow(bytes(log), metadata=True, include_control=True,
                                    threads=threads)
        arrow_names = (*names[:-1], "timestampType")
        assert list(zip(*(table.column(name).to_pylist() for name in arrow_names))) == expected
