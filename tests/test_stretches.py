"""Threads framing a stretch of the input each (kcodec._stretches, kcodec._cuts): what they
decode is what one thread decodes, whatever the bytes at a cut look like. (The test suite
gives every thread asked for its share, however few the records: conftest.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import _stretches
from kcodec._batch import BatchRun, read_entries_for_columns
from kcodec._cuts import entry_sizes, entry_start_in

from .columnar_rows import (
    TS,
    arrow_rows,
    batch_of,
    chunked_rows,
    column_rows,
    mixed_log,
    rows,
    transactional_log,
)


def small_batches(count: int, first: int = 0) -> list[bytes]:
    """Batches of 1 to 3 records of different sizes, offsets following on."""
    return [batch_of(first + 3 * i, 1 + i % 3, 10 + i % 17) for i in range(count)]


def starts_of(batches: list[bytes]) -> list[int]:
    return [sum(map(len, batches[:i])) for i in range(len(batches) + 1)]


def nesting_log(count: int) -> bytes:
    """Batches of one record whose value is itself a whole batch, CRC and all, between
    plain ones: a cut in front of a value finds a batch there."""
    log = bytearray()
    for i in range(count):
        builder = kcodec.BatchBuilder(base_offset=2 * i)
        builder.append(batch_of(0, 1 + i % 4, 30), key=b"k", timestamp=TS + i)
        log += builder.build() + batch_of(2 * i + 1, 1, 5 + i % 9)
    return bytes(log)


def framed_positions(entries: Any) -> list[int]:
    return [batch.position for entry in entries
            for batch in ([entry[i] for i in range(len(entry))] if isinstance(entry, BatchRun)
                          else [entry])]


def test_entries_are_framed_from_a_byte_to_a_byte() -> None:
    batches = small_batches(60)
    log, starts = b"".join(batches), starts_of(batches)
    for records_a_run in (0, 4, 1024):
        # a batch starting before the stop is read whole; none starting at it or later
        reader = read_entries_for_columns(log, start=starts[5], stop=starts[40] + 1,
                                          run_records=records_a_run)
        assert framed_positions(reader) == starts[5:41]
        assert reader.valid_bytes == starts[41]
        reader = read_entries_for_columns(log, start=starts[5], stop=starts[40],
                                          run_records=records_a_run)
        assert framed_positions(reader) == starts[5:40]
        assert reader.valid_bytes == starts[40]
    reader = read_entries_for_columns(log, start=len(log))
    assert list(reader) == [] and reader.valid_bytes == len(log)
    reader = read_entries_for_columns(log[:-1], start=starts[58])   # the input ends first
    assert framed_positions(reader) == [starts[58]] and reader.valid_bytes == starts[59]
    for start in (-1, len(log) + 1):
        with pytest.raises(ValueError, match="outside the input"):
            read_entries_for_columns(log, start=start)


def test_a_cut_finds_the_next_batch_whose_crc_matches() -> None:
    batches = small_batches(10)
    log, starts = b"".join(batches), starts_of(batches)
    assert entry_start_in(log, 0, len(log)) == 0
    assert entry_start_in(log, 1, len(log)) == starts[1]
    assert entry_start_in(log, starts[1] + 1, starts[2]) == -1   # none starts in there
    damaged = bytearray(log)
    damaged[starts[1] + 70] ^= 1
    assert entry_start_in(bytes(damaged), 1, len(log)) == starts[2]
    assert entry_start_in(log[:-1], starts[9], len(log)) == -1   # the input ends in it
    nested = nesting_log(1)
    assert 0 < entry_start_in(nested, 1, len(nested)) < len(kcodec.BatchBuilder().build()) + 200
    # headers of long batches whose CRCs do not match, one after another: the search gives
    # up within its allowance of CRCs rather than taking them all, even where a batch follows
    fake = bytearray(64)
    fake[8:12] = (3 << 20).to_bytes(4, "big")
    fake[16] = 2
    many = bytes(fake) * 100 + bytes(4 << 20) + log
    assert entry_start_in(many, 0, 6400) == -1
    assert entry_start_in(many, 6400, len(many)) == 6400 + (4 << 20)


def test_sizes_of_the_first_entries() -> None:
    batches = small_batches(10)
    log = b"".join(batches)
    counts = [1 + i % 3 for i in range(10)]
    assert entry_sizes(log, 0, 64) == pytest.approx((len(log) / 10, sum(counts) / 10))
    assert entry_sizes(log, 0, 1) == (len(batches[0]), 1)
    assert entry_sizes(log[:-1], 0, 64) == pytest.approx(
        (sum(map(len, batches[:9])) / 9, sum(counts[:9]) / 9))
    assert entry_sizes(log, len(log), 64) is None
    # a plain message is a record, a wrapper the offsets it moves past the entry before
    plain = mixed_log([(1, "none")])
    assert entry_sizes(plain, 0, 64) == pytest.approx((len(plain) / 30, 1))
    wrappers = mixed_log([(0, "gzip")] * 3)   # of 30 records each
    assert entry_sizes(wrappers, 0, 64) == pytest.approx((len(wrappers) / 3, (1 + 60) / 3))
    magic3 = kcodec.BatchBuilder(magic=3)
    magic3.append(b"v")
    assert entry_sizes(log + magic3.build(), 0, 64) is None
    assert entry_sizes(log + magic3.build(), 0, 10) == pytest.approx(
        (len(log) / 10, sum(counts) / 10))


def test_a_cut_finds_a_legacy_message_whose_crc_matches() -> None:
    log = mixed_log([(1, "none"), (0, "gzip"), (0, "none")])
    starts = [entry.position for entry in kcodec.read_batches(log)]
    for before, after in zip(starts, starts[1:]):
        assert entry_start_in(log, before + 1, len(log)) == after
    damaged = bytearray(log)
    damaged[starts[1] + 20] ^= 1
    assert entry_start_in(bytes(damaged), starts[0] + 1, len(log)) == starts[2]


LOGS = {
    "small batches": lambda: b"".join(small_batches(3000)),
    "values holding batches": lambda: nesting_log(400),
    "every kind": lambda: b"".join(mixed_log() for _ in range(1))
    + b"".join(small_batches(500, 10_000)),
    "transactions": lambda: b"".join(small_batches(300)) + transactional_log(),
    "legacy": lambda: mixed_log([(1, "none")] * 20 + [(0, "lz4"), (1, "gzip")] * 5
                                + [(0, "none")] * 20),
}


@pytest.mark.parametrize("log", sorted(LOGS))
@pytest.mark.parametrize("threads", [2, 3, 5, 8])
def test_stretches_decode_what_one_thread_decodes(log: str, threads: int) -> None:
    data = LOGS[log]()
    expected = rows(data)
    assert column_rows(kcodec.decode_columns(data, include_headers=True,
                                             threads=threads)) == expected
    for chunk_records in (7, 250, 1 << 20):
        assert chunked_rows(kcodec.iter_columns(data, include_headers=True, threads=threads,
                                                chunk_records=chunk_records)) == expected
        for binary_view in (False, True):
            table = kcodec.decode_arrow(data, include_headers=True, threads=threads,
                                        chunk_records=chunk_records, binary_view=binary_view)
            assert arrow_rows(table) == expected
    with_control = kcodec.decode_arrow(data, include_control=True, threads=threads)
    assert with_control.num_rows == len(rows(data, include_control=True))
    in_range = kcodec.decode_arrow(data, offsets=(50, 900), timestamps=(TS + 2, 2**62),
                                   threads=threads, chunk_records=100)
    assert in_range.equals(kcodec.decode_arrow(data, offsets=(50, 900),
                                               timestamps=(TS + 2, 2**62)))


def test_a_batch_inside_a_value_costs_work_never_records(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    data = nesting_log(400)
    expected = rows(data)
    found: list[int] = []

    def noted(data: Any, start: int, stop: int) -> int:
        found.append(entry_start_in(data, start, stop))
        return found[-1]
    monkeypatch.setattr(_stretches, "entry_start_in", noted)
    for threads in range(2, 9):
        assert column_rows(kcodec.decode_columns(data, include_headers=True,
                                                 threads=threads)) == expected
        for chunk_records in (60, 1 << 20):
            table = kcodec.decode_arrow(data, include_headers=True, threads=threads,
                                        chunk_records=chunk_records)
            assert arrow_rows(table) == expected
    batch_starts = {batch.position for batch in kcodec.read_batches(data)}
    assert any(q not in batch_starts for q in found if q >= 0)   # some started in a value


@pytest.mark.parametrize("threads", [2, 3])
def test_the_first_error_is_raised_after_what_precedes_it(threads: int) -> None:
    batches = small_batches(400)
    log, starts = b"".join(batches), starts_of(batches)
    everything = arrow_rows(kcodec.decode_arrow(log, include_headers=True))
    damaged = bytearray(log)
    damaged[starts[300] + 70] ^= 1
    damaged[starts[350] + 70] ^= 1
    unframable = (10**6).to_bytes(8, "big") + (5).to_bytes(4, "big") + b"\0" * 5
    for bad, error, position in ((bytes(damaged), kcodec.errors.ChecksumError, starts[300]),
                                 (log + unframable, kcodec.errors.CorruptRecordError, len(log))):
        for chunk_records in (40, 1 << 20):
            got: list[Any] = []
            with pytest.raises(error) as caught:
                for chunk in kcodec.iter_arrow(bad, threads=threads, chunk_records=chunk_records,
                                               include_headers=True):
                    got.extend(arrow_rows(chunk))
            assert caught.value.position == position
            assert got == everything[:len(got)]
            got = []
            with pytest.raises(error) as caught:
                for columns in kcodec.iter_columns(bad, threads=threads,
                                                   chunk_records=chunk_records,
                                                   include_headers=True):
                    got.extend(column_rows(columns))
            assert caught.value.position == position
            assert got == everything[:len(got)]
        with pytest.raises(error) as caught:
            kcodec.decode_columns(bad, threads=threads)
        assert caught.value.position == position
    cut = log + batches[0][:-1]   # a batch cut short by the input's end is left, as Kafka does
    assert arrow_rows(kcodec.decode_arrow(cut, threads=threads, chunk_records=40,
                                          include_headers=True)) == everything
    assert column_rows(kcodec.decode_columns(cut, threads=threads,
                                             include_headers=True)) == everything


def test_a_round_its_first_batches_misjudge_stays_bounded(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Rounds are planned by the bytes a record takes in their first batches: where the
    batches after take far fewer, a stretch decodes twice its share at most, and the next
    round starts where it stopped."""
    log = b"".join(batch_of(i, 1, 10_000) for i in range(64))
    log += b"".join(batch_of(64 + 50 * i, 50, 2) for i in range(2000))
    rounds: list[int] = []

    def noted(data: Any, start: int, batches: int) -> tuple[float, float] | None:
        rounds.append(start)
        return entry_sizes(data, start, batches)
    monkeypatch.setattr(_stretches, "entry_sizes", noted)
    chunks = [chunk.num_rows for chunk in kcodec.iter_arrow(log, threads=2, chunk_records=100)]
    assert sum(chunks) == 64 + 100_000 and max(chunks) < 100 + 100 // 8 + 50
    assert len(rounds) > 10


def test_a_batch_counting_more_records_than_its_bytes_hold() -> None:
    """A round planned from a count no batch could hold is a byte long: its first stretch
    still reads that batch, and fails where one thread fails."""
    batches = small_batches(50)
    for fix_crc in (False, True):
        first = bytearray(batches[0])
        first[57:61] = (654_311_423).to_bytes(4, "big")
        if fix_crc:
            first[17:21] = kcodec.crc32c(bytes(first[21:])).to_bytes(4, "big")
        log = bytes(first) + b"".join(batches[1:])
        with pytest.raises(kcodec.errors.KcodecError) as one:
            kcodec.decode_arrow(log)
        for chunk_records in (3, 50):
            with pytest.raises(kcodec.errors.KcodecError) as caught:
                kcodec.decode_arrow(log, threads=2, chunk_records=chunk_records)
            assert str(caught.value) == str(one.value)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 300), st.booleans()),
                min_size=1, max_size=120),
       st.integers(2, 6), st.sampled_from([3, 50, 1 << 20]))
def test_generated_logs_of_small_batches(shapes: list[tuple[int, int, bool]], threads: int,
                                         chunk_records: int) -> None:
    log = bytearray()
    offset = 0
    for count, size, nests in shapes:
        builder = kcodec.BatchBuilder(base_offset=offset)
        for i in range(count):
            value = batch_of(0, 1, size) if nests else bytes([i]) * size
            builder.append(value, key=b"%d" % i, timestamp=TS + i)
        log += builder.build()
        offset = builder.next_offset
    expected = rows(bytes(log))
    assert arrow_rows(kcodec.decode_arrow(bytes(log), include_headers=True, threads=threads,
                                          chunk_records=chunk_records)) == expected
    assert column_rows(kcodec.decode_columns(bytes(log), include_headers=True,
                                             threads=threads)) == expected
