"""Dump, verify, decode and export throughput on a generated partition (1 GiB by
default), MB/s of segment read: each figure the median of --rounds runs (3), each segment
read from its mapped file (in the page cache: the partition was just written).

    python bench/bench_segments.py [--size-mib N] [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import kcodec
from kcodec import segments
from kcodec.cli import main as cli


def batches(total_bytes: int, codec: str) -> Iterator[bytes]:
    """Batches of 1000 JSON-like events (~300 B, a random session id in each, so that they
    compress about 3:1 as real events do) until ``total_bytes`` are written."""
    offset = written = 0
    while written < total_bytes:
        builder = kcodec.BatchBuilder(compression=codec, base_offset=offset)
        for i in range(1000):
            value = (b'{"user": "u%04d", "event": "page_view", "page": "/product/%d", "session": "%s", '
                     b'"agent": "Mozilla/5.0 (X11; Linux x86_64)", "ts": %d}'
                     % ((offset + i) % 9973, i % 97, os.urandom(48).hex().encode(), offset + i))
            builder.append(value, key=b"key-%08d" % (offset + i), timestamp=1700000000000 + offset + i)
        data = builder.build()
        offset = builder.next_offset
        written += len(data)
        yield data


def timed(label: str, size: int, fn: object, rounds: int) -> None:
    """Print the median time of ``rounds`` calls of fn, and the MB/s of ``size``."""
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            fn()  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    seconds = statistics.median(times)
    print(f"{label:<40} {seconds:8.2f} s {size / seconds / 1e6:10.0f} MB/s")


def whole(directory: Path) -> None:
    """Every segment decoded at once by decode_columns from the mapped file."""
    for path in directory.glob("*.log"):
        with segments.Segment(path) as segment:
            kcodec.decode_columns(segment.data)


def chunked(directory: Path) -> int:
    """Records of every segment, decoded by iter_arrow from the mapped file."""
    records = 0
    for path in directory.glob("*.log"):
        with segments.Segment(path) as segment:
            records += sum(len(chunk) for chunk in kcodec.iter_arrow(segment.data,
                                                                    chunk_records=1 << 16))
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="16 MiB, for smoke tests")
    args = parser.parse_args()
    size_mib = 16 if args.quick else args.size_mib
    rounds = 1 if args.quick else args.rounds
    arrow = importlib.util.find_spec("pyarrow") is not None
    with tempfile.TemporaryDirectory() as tmp:
        for codec in ("none", "lz4"):
            directory = Path(tmp) / f"bench-{codec}-0"
            began = time.perf_counter()
            segments.write_partition(directory, batches(size_mib << 20, codec))
            size = sum(p.stat().st_size for p in directory.glob("*.log"))
            print(f"\n{codec}: wrote {size / 1e6:.0f} MB in {time.perf_counter() - began:.1f} s "
                  f"({len(list(directory.glob('*.log')))} segments)")
            timed("kcodec dump", size, lambda: cli(["dump", str(directory)]), rounds)
            timed("kcodec dump --deep-iteration", size,
                  lambda: cli(["dump", "--deep-iteration", str(directory)]), rounds)
            timed("kcodec verify", size, lambda: cli(["verify", str(directory)]), rounds)
            timed("decode_columns (each whole segment)", size, lambda: whole(directory),
                  rounds)
            if arrow:
                timed("iter_arrow (65536-record chunks)", size, lambda: chunked(directory),
                      rounds)
                for suffix in (".parquet", ".arrow"):
                    out = Path(tmp) / f"x{suffix}"
                    timed(f"kcodec export -o {out.name} --threads 2", size,
                          lambda: cli(["export", str(directory), "-o", str(out),
                                       "--threads", "2"]), rounds)
                    out.unlink()
            os.sync()
    return 0


if __name__ == "__main__":
    sys.exit(main())
