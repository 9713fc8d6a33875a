"""Reading and building uncompressed v2 batches, and CRC-32C, against the peers.

Peers, measured in the same run: kafka-python (pure Python) and aiokafka (Cython).
Every reader validates the batch CRC, as consumers do by default (check.crcs).
Ratios are "kcodec is N times faster" (peer median / kcodec median). Batches of 1000
records, and 1000 single-record batches of 100 B (as producers that send each record at
once write them; kcodec frames them from one buffer, the peers are handed each batch
already cut out, as they have no framing of their own).

    python bench/bench_records.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys

import crc32c as crc32c_package

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    Row,
    build_aiokafka,
    build_kafka_python,
    build_kcodec,
    interleaved,
    measure,
    print_table,
    read_aiokafka,
    read_kafka_python,
    read_kcodec,
    sample_records,
)

import kcodec  # noqa: E402

RECORDS_PER_BATCH = 1000
SMALL_BATCHES = 1000
TARGETS = {("read", 100): 1.5, ("read", 1024): 3.0, ("build", 100): 1.5, ("build", 1024): 3.0,
           ("crc32c", 65536): 0.9, ("crc32c", 1 << 20): 0.9}


def small_batches(rounds: int, quick: bool) -> list[Row]:
    """Reading and building SMALL_BATCHES single-record batches of 100 B values."""
    records = sample_records(SMALL_BATCHES, 100)
    parts = [build_kcodec([record]) for record in records]
    assert [bytes(build_aiokafka([record])) for record in records] == parts
    data = b"".join(parts)
    rows: list[Row] = []
    for op, contenders in (
        ("read", {"kcodec": lambda: read_kcodec(data),
                  "aiokafka": lambda: [read_aiokafka(part) for part in parts],
                  "kafka-python": lambda: [read_kafka_python(part) for part in parts]}),
        ("build", {"kcodec": lambda: [build_kcodec([record]) for record in records],
                   "aiokafka": lambda: [build_aiokafka([record]) for record in records],
                   "kafka-python": lambda: [build_kafka_python([record])
                                            for record in records]}),
    ):
        rows += measure(f"{op} {SMALL_BATCHES} x 1-record, 100 B", contenders, rounds, quick,
                        SMALL_BATCHES)[0]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="few rounds, for smoke tests")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    results: dict[tuple[str, int], float] = {}
    rows: list[Row] = []
    for value_size in (100, 1024):
        records = sample_records(RECORDS_PER_BATCH, value_size)
        data = build_kcodec(records)
        assert bytes(build_aiokafka(records)) == data  # same bytes from both builders
        for op, contenders in (
            ("read", {"kcodec": lambda: read_kcodec(data),
                      "aiokafka": lambda: read_aiokafka(data),
                      "kafka-python": lambda: read_kafka_python(data)}),
            ("build", {"kcodec": lambda: build_kcodec(records),
                       "aiokafka": lambda: build_aiokafka(records),
                       "kafka-python": lambda: build_kafka_python(records)}),
        ):
            case_rows, medians = measure(f"{op} 1000 x {value_size} B", contenders, rounds,
                                         args.quick, RECORDS_PER_BATCH)
            rows += case_rows
            results[(op, value_size)] = medians["aiokafka"] / medians["kcodec"]
    rows += small_batches(rounds, args.quick)
    for size in (65536, 1 << 20):
        blob = os.urandom(size)
        medians = interleaved({"kcodec": lambda: kcodec.crc32c(blob),
                               "crc32c": lambda: crc32c_package.crc32c(blob)}, rounds)
        for name, seconds in medians.items():
            ratio = None if name == "kcodec" else seconds / medians["kcodec"]
            rows.append((f"crc32c {size // 1024} KiB", name, seconds, ratio,
                         f"{size / seconds / 1e9:.1f} GB/s"))
        results[("crc32c", size)] = medians["crc32c"] / medians["kcodec"]
    print(f"kcodec {kcodec.__version__}, crc32c backend {kcodec.crc32c_backend()}, "
          f"{rounds} interleaved rounds, medians")
    print_table("uncompressed v2 batches of 1000 records, and single-record batches; "
                "16-byte keys", rows)
    print("\ntargets (kcodec speed / peer speed, peer = aiokafka; crc32c package for CRC)")
    for (op, size), target in TARGETS.items():
        got = results[(op, size)]
        print(f"  {op:<7} {size:>8} B  target >= {target:.1f}x  measured {got:.2f}x  "
              f"{'met' if got >= target else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
