"""Decoding on several threads: the parts they decode join into the columns of one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kcodec

from .columnar_rows import MIXED, TS, arrow_rows, column_rows, mixed_log, rows, views


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
    from kcodec._workers import run_all, run_in_order
    used: list[tuple[int, int]] = []   # (parts, threads) of each run_all or run_in_order

    def counted(run: Any) -> Any:
        def counted_run(work: Any, items: Any, threads: int) -> Any:
            used.append((len(items), threads))
            return run(work, items, threads)
        return counted_run

    monkeypatch.setattr(columnar, "run_all", counted(run_all))
    monkeypatch.setattr(columnar, "run_in_order", counted(run_in_order))
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


def test_input_written_during_a_decode_is_no_crash() -> None:
    """Another thread rewriting the input (same length, which its export allows) while
    several threads frame it gives an exception or some result, never a crash: a run of
    batches checked with the GIL held and framed without it may come out empty."""
    import sys
    import threading
    good, bad = bytearray(), bytearray()
    for k in range(300):
        plain = kcodec.BatchBuilder(base_offset=2 * k)   # framed in a run of plain batches
        plain.append(b"value", key=b"k", timestamp=TS)
        head = bytearray(plain.build())
        txn = kcodec.BatchBuilder(base_offset=2 * k + 1, producer_id=1, producer_epoch=0,
                                  base_sequence=k, is_transactional=True)   # ends the run
        txn.append(b"value", timestamp=TS)
        good += head + txn.build()
        head[57:61] = b"\xff\xff\xff\xff"   # a record count no run takes
        bad += head + txn.build()
    buf = bytearray(good)
    stop = threading.Event()

    def rewrite() -> None:
        while not stop.is_set():
            buf[:] = bad
            buf[:] = good
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        for _ in range(1000):
            try:
                kcodec.decode_columns(buf, validate_crc=False, threads=2)
            except kcodec.errors.KcodecError:
                pass
    finally:
        stop.set()
        writer.join()
        sys.setswitchinterval(interval)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_chunk_of_everything(threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """chunk_records of any size, the largest an int holds too, with any threads (and the
    rules of when threads share the work as they are, not as the tests set them)."""
    import sys
    monkeypatch.undo()
    builder = kcodec.BatchBuilder()
    for i in range(10):
        builder.append(b"v%d" % i, key=b"k", timestamp=TS + i)
    for data in (builder.build(), mixed_log()):
        expected = kcodec.decode_arrow(data)
        assert kcodec.decode_arrow(data, chunk_records=sys.maxsize,
                                   threads=threads).equals(expected)
        chunks = list(kcodec.iter_columns(data, chunk_records=sys.maxsize, threads=threads))
        assert sum(len(c["offset"]) for c in chunks) == expected.num_rows


@pytest.mark.parametrize("options", [{}, {"aborted_transactions": []}])
def test_chunks_before_bad_input_arrive_before_its_error_on_any_thread(
        options: dict[str, Any]) -> None:
    """As with one thread: a chunk decoded beside the one that fails still comes first."""
    data = bytearray()
    for base in range(0, 6000, 10):
        builder = kcodec.BatchBuilder(base_offset=base)
        for i in range(10):
            builder.append(b"v" * 20, timestamp=TS)
        data += builder.build()
    data[-1] ^= 1   # the last batch's CRC
    for threads in (1, 2):
        got: list[int] = []
        with pytest.raises(kcodec.errors.ChecksumError):
            for chunk in kcodec.iter_columns(bytes(data), chunk_records=1000, threads=threads,
                                             **options):
                got.extend(chunk["offset"].tolist())
        assert got == list(range(5000))


def test_an_input_changed_while_it_is_decoded_is_read_within_its_bounds() -> None:
    """A codec plugin that rewrites a later batch's length (as another thread may write
    into a bytearray being decoded): the batch is read at the size framing found."""
    import struct
    import zlib

    from kcodec import plugins
    data = bytearray()
    where: list[int] = []

    class Rewriting:
        def compress(self, view: Any, level: int | None) -> bytes:
            return zlib.compress(bytes(view))

        def decompress(self, view: Any, max_size: int) -> bytes:
            struct.pack_into(">i", data, where[0] + 8, 0x7FFFFF00)   # its length: 2 GiB
            data[where[0] + 70] ^= 0xFF                              # and its CRC wrong
            return zlib.decompress(bytes(view))

    plugins.register("kcodec-test-rewriting", Rewriting())
    try:
        builder = kcodec.BatchBuilder(compression="pluggable", plugin="kcodec-test-rewriting")
        builder.append(b"x" * 100, timestamp=TS)
        data += builder.build()
        for base in range(1, 50):
            builder = kcodec.BatchBuilder(base_offset=base)
            builder.append(b"v" * 100, key=b"k", timestamp=TS)
            if base == 25:
                where.append(len(data))
            data += builder.build()
        with pytest.raises(kcodec.errors.KcodecError):
            kcodec.decode_columns(data)
    finally:
        plugins.unregister("kcodec-test-rewriting")
