"""Columns own pooled memory: spare buffers are reused, bounded, and released."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import pytest

import kcodec

from .columnar_rows import TS, batch_of
from .conftest import UNDER_ASAN, VECTORS


def test_columns_are_numpy_and_own_their_memory() -> None:
    cols = kcodec.decode_columns(VECTORS["v2_two_nullkey"])
    assert isinstance(cols["offset"], np.ndarray) and cols["offset"].dtype == np.int64
    value_data = cols["value_data"]
    del cols
    assert value_data.tobytes() == b"a"


def test_spare_column_buffers_are_reused_and_can_be_released() -> None:
    from kcodec.columnar import release_spare_buffers
    log = b"".join(batch_of(base, 200, 300) for base in range(0, 2000, 200))
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


FRESH_PAGES_OF_PLAIN_LEGACY = """
import resource, kcodec
builder = kcodec.BatchBuilder(magic=1)
for i in range(1000):
    builder.append(b"v" * 100, key=b"k%d" % i, timestamp=1700000000000)
plain = builder.build() * 100
def fresh(threads):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    kcodec.decode_columns(plain, threads=threads)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
for _ in range(3):
    fresh(1), fresh(2)
print(max(fresh(threads) for threads in (1, 2, 1, 2)))
"""


@counts_fresh_pages
def test_plain_legacy_messages_reuse_their_framing() -> None:
    """The array a stretch of plain legacy messages is framed into comes from the scratch
    pool and goes back to it: decoding 100 000 of them with one thread and two in turn
    touches no fresh pages (the allocator had given ~4 MB back at every two-thread call,
    faulted in again by two threads at once, which held them to 1.1x one). In a fresh
    interpreter, whose allocator is in the state a program's is."""
    import subprocess
    out = subprocess.run([sys.executable, "-c", FRESH_PAGES_OF_PLAIN_LEGACY],
                         capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(__file__)).stdout
    assert int(out) < 100


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
    small = b"".join(batch_of(base, 1000, 4) for base in range(0, 50_000, 1000))
    cols = kcodec.decode_columns(small)
    assert cols["count"] == 50_000 and len(cols["value_data"]) == 200_000
