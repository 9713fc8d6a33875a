"""Validation-style scans (offsets, timestamps, keys, headers) of compressed batches:
headers-first magic 3, which decompresses only the metadata, against magic 2, which has
to decompress everything; both through the columnar decoder without values
(decode_columns) and as Python objects (kcodec.kip931.scan).

100 batches of 1000 records, 16-byte keys, 1 KiB JSON-like values.

    python bench/bench_kip931.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import interleaved, print_table, sample_records  # noqa: E402

import kcodec  # noqa: E402
from kcodec.kip931 import scan  # noqa: E402

SCAN_COLUMNS = ["offset", "timestamp", "key", "headers"]


def build(records: list[tuple[bytes, bytes, int]], codec: str, magic: int,
          headers_first: bool = False) -> bytes:
    builder = kcodec.BatchBuilder(magic=magic, compression=codec, headers_first=headers_first)
    for key, value, timestamp in records:
        builder.append(value, key=key, timestamp=timestamp, headers=[("trace", key[:8])])
    return builder.build()


def scan_all(data: bytes) -> int:
    return sum(len(scan(batch)) for batch in kcodec.read_batches(data, allow_magic3=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds, batches = (2, 5) if args.quick else (args.rounds, 100)
    records = sample_records(1000, 1024)
    total = batches * len(records)
    rows = []
    notes = []
    for codec in ("gzip", "zstd", "lz4", "snappy"):
        v2 = build(records, codec, 2) * batches
        v3 = build(records, codec, 3, headers_first=True) * batches
        assert scan_all(v2) == scan_all(v3) == total
        medians = interleaved({
            "magic 3 h-f columns": lambda v3=v3: kcodec.decode_columns(
                v3, columns=SCAN_COLUMNS, allow_magic3=True),
            "magic 2 columns": lambda v2=v2: kcodec.decode_columns(v2, columns=SCAN_COLUMNS),
            "magic 3 h-f rows": lambda v3=v3: scan_all(v3),
            "magic 2 rows": lambda v2=v2: scan_all(v2),
        }, rounds)
        for name, seconds in medians.items():
            base = medians[name.replace("magic 2", "magic 3 h-f")]
            rows.append((f"{codec}, {total} records", name, seconds,
                         None if name.startswith("magic 3") else seconds / base,
                         f"{total / seconds / 1e6:.2f} M rec/s"))
        notes.append(f"{codec:<7} headers-first scans faster than magic 2: columns "
                     f"{medians['magic 2 columns'] / medians['magic 3 h-f columns']:.1f}x, "
                     f"rows {medians['magic 2 rows'] / medians['magic 3 h-f rows']:.1f}x; "
                     f"batch {len(v3) // batches} B vs {len(v2) // batches} B")
    print(f"kcodec {kcodec.__version__}: {batches} batches x 1000 records of 1 KiB, {rounds} "
          "interleaved rounds, medians ('kcodec is' = headers-first magic 3 is faster by, "
          "columns against columns and rows against rows)")
    print_table("validation-style scans", rows)
    print()
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
