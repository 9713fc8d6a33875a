"""The README's columnar tables from several runs of bench_columnar.py.

    for i in 1 2 3 4 5 6; do python bench/bench_columnar.py --json run$i.json; done
    python bench/columnar_runs.py run*.json [--ranges]

Each figure is the median over all the runs (--ranges adds the runs' range): no run is
left out on its result. How fast this machine copied memory and hashed in cache with two
threads against one, measured in each run, is printed with the tables, so that a run whose
second core was busy shows as such.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

Figures = dict[str, Any]
Format = tuple[str, str]   # the number's format, and the unit after it

RATE: Format = ("{:.1f}", " M rec/s")
RATIO: Format = ("{:.2f}", "x")
TIMES: Format = ("{:.1f}", "x")
CHANGE: Format = ("{:+.0%}", "")


class Merge:
    """Medians over the runs of one figure at a time."""

    def __init__(self, runs: list[Figures], ranges: bool) -> None:
        self.runs = runs
        self.ranges = ranges

    def figure(self, path: tuple[str, ...], fmt: Format) -> str:
        """The median over the runs of the figure at path (keys into a run's figures)."""
        values = []
        for run in self.runs:
            value: Any = run
            for key in path:
                value = value[key]
            values.append(float(value))
        number, unit = fmt
        text = number.format(statistics.median(values)) + unit
        low, high = number.format(min(values)), number.format(max(values))
        if self.ranges and low != high:
            text += f" ({low} to {high})"
        return text


def case_label(case: str) -> str:
    """'none 1024 B' as 'uncompressed, 1 KiB'; 'lz4 100 B x 100,000' as 'lz4, 100 B,
    100 000 records'."""
    codec, rest = case.split(" ", 1)
    rest = rest.replace("1024 B", "1 KiB")
    if " x " in rest:
        size, records = rest.split(" x ")
        rest = f"{size}, {records.replace(',', ' ')} records"
    return f"{'uncompressed' if codec == 'none' else codec}, {rest}"


def batch_label(case: str) -> str:
    """'10 a batch' as '10'; 'gzip, 10 a batch' as '10, gzip'."""
    codec, _, per_batch = case.rpartition(", ")
    per_batch = per_batch.removesuffix(" a batch")
    return f"{per_batch}, {codec}" if codec else per_batch


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def rule(columns: int) -> str:
    return "|" + "---|" * columns


def tables(runs: list[Figures], ranges: bool) -> list[str]:
    merge = Merge(runs, ranges)
    decoders = ("arrow", "views", "columns", "chunks")
    out = [row(["case", "decode_columns", "decode_arrow, views", "vs aiokafka",
                "2 threads vs 1: decode_arrow", "views", "decode_columns", "iter_columns",
                "over raw decompression: decode_columns", "views"]), rule(10)]
    for case, first in runs[0]["cases"].items():
        cells = [case_label(case), merge.figure(("cases", case, "columns"), RATE),
                 merge.figure(("cases", case, "views"), RATE),
                 merge.figure(("cases", case, "vs_aiokafka"), TIMES)]
        cells += [merge.figure(("cases", case, "x2", k), RATIO) for k in decoders]
        cells += ["" if first["over_raw"] is None else
                  merge.figure(("cases", case, "over_raw", k), CHANGE)
                  for k in ("columns", "views")]
        out.append(row(cells))
    out += ["", row(["case", "decode_arrow", "views", "decode_columns", "iter_columns"]),
            rule(5)]
    for case in runs[0]["by_size"]:
        out.append(row([case_label(case)] + [merge.figure(("by_size", case, "x2", k), RATIO)
                                             for k in decoders]))
    out += ["", row(["records a batch", "decode_columns", "decode_arrow, views", "vs aiokafka",
                     "decode_arrow, 2 threads vs 1"]), rule(5)]
    for case in runs[0]["small_batches"]:
        out.append(row([batch_label(case),
                        merge.figure(("small_batches", case, "columns"), RATE),
                        merge.figure(("small_batches", case, "views"), RATE),
                        merge.figure(("small_batches", case, "vs_aiokafka"), TIMES),
                        merge.figure(("small_batches", case, "x2", "arrow"), RATIO)]))
    copies = [run["ceilings"]["copy"] for run in runs]
    hashes = [run["ceilings"]["hash"] for run in runs]
    out += ["", f"{len(runs)} runs; with two threads this machine copied memory "
                f"{min(copies):.2f}x-{max(copies):.2f}x and hashed in cache "
                f"{min(hashes):.2f}x-{max(hashes):.2f}x as fast as with one"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="files bench_columnar.py --json wrote")
    parser.add_argument("--ranges", action="store_true", help="add the runs' range")
    args = parser.parse_args()
    runs = []
    for path in args.runs:
        with open(path) as f:
            runs.append(json.load(f))
    print("\n".join(tables(runs, args.ranges)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
