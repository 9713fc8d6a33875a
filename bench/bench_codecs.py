"""Compressed v2 batches per codec: kcodec against the raw codec library and the peers.

For each codec, one batch of 1000 records (16-byte keys, JSON-like values of 1 KiB):
- "raw": the codec library alone decompressing the batch's payload (no framing, no records);
- kcodec: decompressing the batch as the reader does (framing, bounds, record scan), and
  reading it into Python records;
- aiokafka and kafka-python reading (CRC checked) and building at the same level (for lz4,
  kcodec builds LZ4 HC level 8 against the peers' HC 9, and Kafka's default, lz4-java's
  fast mode, is shown beside it).
Then small batches, as producers that send at once write them: 100 batches of 10 records
with 100 B values per codec, read (kcodec frames them from one buffer; the peers are handed
each batch already cut out) and built.

    python bench/bench_codecs.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import cramjam
import zstandard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    Records,
    Row,
    build_aiokafka,
    build_kafka_python,
    build_kcodec,
    interleaved,
    lz4_blocks,
    measure,
    print_table,
    read_aiokafka,
    read_kafka_python,
    read_kcodec,
    sample_records,
    xerial_blocks,
)

import kcodec  # noqa: E402

CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def raw_decompressor(codec: str, payload: memoryview) -> Callable[[], object]:
    """The codec library alone on the same payload, into a warm buffer (frame parsing done
    once, outside): cramjam's gzip, python-zstandard, and liblz4 and snappy (through
    cramjam) where kcodec decodes blocks itself."""
    out = bytearray(4 << 20)
    if codec == "gzip":
        return lambda: cramjam.gzip.decompress_into(payload, out)
    if codec == "zstd":
        dctx = zstandard.ZstdDecompressor()
        return lambda: dctx.stream_reader(payload, read_across_frames=True).readinto(out)
    if codec == "snappy":
        blocks = xerial_blocks(payload)
        return lambda: [cramjam.snappy.decompress_raw_into(b, out) for b in blocks]
    blocks, _ = lz4_blocks(payload)
    return lambda: [cramjam.lz4.decompress_block_into(b, out) for b in blocks]


def kcodec_decode_only(data: bytes) -> None:
    """Decompress and check every record (what iter() does before yielding the first)."""
    for batch in kcodec.read_batches(data):
        iter(batch)


# The batches read are written at the peers' default levels: gzip 9 (Python's gzip
# module), zstd 3; lz4 "9", which Kafka (and kcodec) take as lz4-java's fast mode and the
# peers as LZ4 HC level 9.
LEVELS = {"gzip": 9, "snappy": None, "lz4": 9, "zstd": 3}
# Builds are compared doing the same work: for lz4 kcodec writes LZ4 HC level 8 against
# aiokafka's HC 9 (the HC level nearest 9 a Kafka producer can ask for: its 9 is fast mode,
# 10 and up LZ4's optimal parser, several times the work; on these values HC 8 writes the
# bytes HC 9 writes in about the same time), and its level 9, lz4-java's fast mode, against
# kafka-python's, which is python-lz4's fast mode.
BUILD_LEVELS = {**LEVELS, "lz4": 8}
#: the kcodec contender each peer's build is compared with, where it is not "kcodec"
MATCHED = {("kafka-python", "lz4"): "kcodec, fast"}


def build_contenders(records: Records, codec: str, times: int = 1) -> dict[str, Callable[[], object]]:
    """kcodec building ``times`` batches of ``records`` at the peers' level, and for lz4
    at Kafka's default too."""
    def kcodec_at(level: int | None) -> Callable[[], object]:
        return lambda: [build_kcodec(records, codec, level) for _ in range(times)]
    contenders = {"kcodec": kcodec_at(BUILD_LEVELS[codec])}
    if BUILD_LEVELS[codec] != LEVELS[codec]:
        contenders["kcodec, fast"] = kcodec_at(LEVELS[codec])
    return contenders


SMALL_BATCHES, SMALL_RECORDS = 100, 10


def small_batches(rounds: int,
                  quick: bool) -> tuple[list[Row], list[tuple[str, float, float]]]:
    """Rows, and (codec, read vs aiokafka, build vs aiokafka), of SMALL_BATCHES batches of
    SMALL_RECORDS records with 100 B values per codec."""
    records = sample_records(SMALL_RECORDS, 100)
    total = SMALL_BATCHES * SMALL_RECORDS
    rows: list[Row] = []
    summary: list[tuple[str, float, float]] = []
    for codec in CODEC_IDS:
        parts = [build_kcodec(records, codec, LEVELS[codec]) for _ in range(SMALL_BATCHES)]
        data = b"".join(parts)
        read_rows, read = measure(f"read {codec}, {SMALL_RECORDS} a batch", {
            "kcodec": lambda: read_kcodec(data),
            "aiokafka": lambda: [read_aiokafka(part) for part in parts],
            "kafka-python": lambda: [read_kafka_python(part) for part in parts],
        }, rounds, quick, total)
        build_rows, build = measure(f"build {codec}, {SMALL_RECORDS} a batch", {
            **build_contenders(records, codec, SMALL_BATCHES),
            "aiokafka": lambda: [build_aiokafka(records, CODEC_IDS[codec])
                                 for _ in range(SMALL_BATCHES)],
        }, rounds, quick, total)
        rows += read_rows + build_rows
        summary.append((codec, read["aiokafka"] / read["kcodec"],
                        build["aiokafka"] / build["kcodec"]))
    return rows, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--value-size", type=int, default=1024)
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    records = sample_records(1000, args.value_size)
    rows = []
    summary = []
    for codec in CODEC_IDS:
        data = build_kcodec(records, codec, LEVELS[codec])
        payload = memoryview(data)[61:]
        read = interleaved({
            "raw library": raw_decompressor(codec, payload),
            "kcodec decode": lambda: kcodec_decode_only(data),
            "kcodec": lambda: read_kcodec(data),
            "aiokafka": lambda: read_aiokafka(data),
            **({} if args.quick else {"kafka-python": lambda: read_kafka_python(data)}),
        }, rounds)
        build = interleaved({
            **build_contenders(records, codec),
            "aiokafka": lambda: build_aiokafka(records, CODEC_IDS[codec]),
            **({} if args.quick else {
                "kafka-python": lambda: build_kafka_python(records, CODEC_IDS[codec])}),
        }, rounds)
        for name, seconds in read.items():
            ratio = None if name.startswith("kcodec") or name == "raw library" \
                else seconds / read["kcodec"]
            rows.append((f"read {codec}", name, seconds, ratio, f"{1000 / seconds / 1e6:.2f} M rec/s"))
        for name, seconds in build.items():
            ratio = None if name.startswith("kcodec") else \
                seconds / build[MATCHED.get((name, codec), "kcodec")]
            rows.append((f"build {codec}", name, seconds, ratio, f"{1000 / seconds / 1e6:.2f} M rec/s"))
        summary.append((codec, len(data), read["kcodec decode"] / read["raw library"] - 1,
                        read["kcodec"] / read["raw library"] - 1,
                        read["aiokafka"] / read["kcodec"], build["aiokafka"] / build["kcodec"]))
    print(f"kcodec {kcodec.__version__}: 1000 records x {args.value_size} B per batch, "
          f"{rounds} interleaved rounds, medians")
    print_table("compressed v2 batches", rows)
    print("\ncodec   batch bytes  decode over raw  read (objects) over raw  "
          "read vs aiokafka  build vs aiokafka")
    for codec, size, decode_over, read_over, read_ratio, build_ratio in summary:
        print(f"{codec:<7} {size:>11} {decode_over:>+15.0%} {read_over:>+24.0%} "
              f"{read_ratio:>16.2f}x {build_ratio:>17.2f}x")
    small_rows, small_summary = small_batches(rounds, args.quick)
    print()
    print_table(f"{SMALL_BATCHES} batches of {SMALL_RECORDS} records, 100 B values",
                small_rows)
    print("\ncodec   small batches: read vs aiokafka  build vs aiokafka")
    for codec, read_ratio, build_ratio in small_summary:
        print(f"{codec:<7} {read_ratio:>32.2f}x {build_ratio:>17.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
