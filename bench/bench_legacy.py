"""Magic 0 and 1 message sets, and conversion, against the peers.

Reading and writing 1000 legacy messages (16-byte keys, 100 B values), plain and as one gzip
or lz4 wrapper, with kcodec, kafka-python and aiokafka (which reads and writes magic 0/1
but not magic-0 LZ4), kcodec writing at the peers' levels (PEER_LEVELS); kcodec.decode_columns on the same input (its ratio against aiokafka's
reader, or kafka-python's without aiokafka); kcodec.convert throughput between magic 2
and magics 1 and 0; decode_columns and decode_arrow with two threads against one, on
100 magic-1 wrappers of 1000 such records each (gzip, lz4) and on 100 000 plain messages;
and 100 000 records in small wrappers of 10 (gzip, lz4), decode_columns with one and two
threads against aiokafka's reader.

    python bench/bench_legacy.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Records, build_kcodec, interleaved, print_table, read_kcodec, sample_records  # noqa: E402

import kcodec  # noqa: E402

CODEC_IDS = {"none": 0, "gzip": 1, "lz4": 3}
# Builds are compared doing each peer's work: gzip at their level 9 (Kafka's default is 6);
# lz4 as LZ4 HC level 8 against aiokafka's HC 9 and in fast mode (Kafka's level 9, its
# default) against kafka-python's (python-lz4's fast mode), as in bench_codecs.
PEER_LEVELS = {"none": None, "gzip": 9, "lz4": 8}
#: the kcodec contender each peer's build is compared with, where it is not "kcodec"
MATCHED = {("kafka-python", "lz4"): "kcodec, Kafka's level"}


def entries(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        size = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        out.append(data[pos:pos + size])
        pos += size
    return out


def aiokafka_build(records: Records, magic: int, codec: str) -> bytearray:
    from aiokafka.record._crecords import LegacyRecordBatchBuilder
    builder = LegacyRecordBatchBuilder(magic, CODEC_IDS[codec], 1 << 30)
    for i, (key, value, ts) in enumerate(records):
        builder.append(i, ts, key, value)
    return builder.build()


def aiokafka_read(parts: list[bytes], magic: int) -> None:
    from aiokafka.record._crecords import LegacyRecordBatch
    for part in parts:
        entry = LegacyRecordBatch(part, magic)
        entry.validate_crc()
        for r in entry:
            r.value


def kafka_python_build(records: Records, magic: int, codec: str) -> bytearray:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    builder = LegacyRecordBatchBuilder(magic, CODEC_IDS[codec], 1 << 30)
    for i, (key, value, ts) in enumerate(records):
        builder.append(i, ts, key, value)
    return builder.build()


def kafka_python_read(parts: list[bytes], magic: int) -> None:
    from kafka.record.legacy_records import LegacyRecordBatch
    for part in parts:
        entry = LegacyRecordBatch(part, magic)
        entry.validate_crc()
        for r in entry:
            r.value


def thread_scaling(rounds: int) -> list[tuple[str, float, float]]:
    """(case, seconds with one thread, seconds with two) of legacy input 100 000 records
    long: 100 magic-1 wrappers, or plain messages."""
    records = sample_records(1000, 100)
    out = []
    for codec, wrappers in (("gzip", 100), ("lz4", 100), ("none", 1)):
        data = b"".join(build_kcodec(records, codec, magic=1) for _ in range(wrappers))
        if codec == "none":   # 100 000 plain messages
            data *= 100
        for name in ("decode_columns", "decode_arrow"):
            if name == "decode_arrow" and not _has_pyarrow():
                continue
            decode = getattr(kcodec, name)
            medians = interleaved({"1": lambda: decode(data, threads=1),
                                   "2": lambda: decode(data, threads=2)}, rounds)
            out.append((f"m1 {codec} {name}", medians["1"], medians["2"]))
    return out


def small_wrappers(rounds: int) -> list[tuple[str, float, float, float]]:
    """(codec, seconds of decode_columns with one thread and with two, seconds of aiokafka's
    reader) of 100 000 records in magic-1 wrappers of 10, as producers that send at once
    wrote them: what a wrapper costs besides its messages weighs a hundred times as much."""
    records = sample_records(10, 100)
    out = []
    for codec in ("gzip", "lz4"):
        data = b"".join(build_kcodec(records, codec, magic=1) for _ in range(10_000))
        parts = entries(data)
        medians = interleaved({"1": lambda: kcodec.decode_columns(data),
                               "2": lambda: kcodec.decode_columns(data, threads=2),
                               "aiokafka": lambda: aiokafka_read(parts, 1)}, rounds)
        out.append((codec, medians["1"], medians["2"], medians["aiokafka"]))
    return out


def _has_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    records = sample_records(1000, 100)
    rows = []
    for magic in (0, 1):
        for codec in CODEC_IDS:
            data = build_kcodec(records, codec, magic=magic)
            parts = entries(data)
            case = f"m{magic} {codec}"
            read = {"kcodec": lambda: read_kcodec(data),
                    "kafka-python": lambda: kafka_python_read(parts, magic),
                    "kcodec columns": lambda: kcodec.decode_columns(data)}
            build = {"kcodec": lambda: build_kcodec(records, codec, PEER_LEVELS[codec], magic),
                     "kafka-python": lambda: kafka_python_build(records, magic, codec)}
            if PEER_LEVELS[codec] is not None:
                build["kcodec, Kafka's level"] = lambda: build_kcodec(records, codec,
                                                                      magic=magic)
            if not (magic == 0 and codec == "lz4"):  # aiokafka has no magic-0 LZ4
                read["aiokafka"] = lambda: aiokafka_read(parts, magic)
                build["aiokafka"] = lambda: aiokafka_build(records, magic, codec)
            for op, contenders in (("read", read), ("build", build)):
                medians = interleaved(contenders, rounds)
                columns = medians.pop("kcodec columns", None)
                for name, seconds in medians.items():
                    ratio = None if name.startswith("kcodec") else \
                        seconds / medians[MATCHED.get((name, codec), "kcodec")] \
                        if op == "build" else seconds / medians["kcodec"]
                    rows.append((f"{op} {case}", name, seconds, ratio,
                                 f"{1000 / seconds / 1e6:.2f} M rec/s"))
                if columns is not None:
                    peer = medians.get("aiokafka", medians["kafka-python"])
                    rows.append((f"columns {case}", "kcodec", columns, peer / columns,
                                 f"{1000 / columns / 1e6:.2f} M rec/s"))
    v2 = kcodec.BatchBuilder(compression="lz4")
    for key, value, ts in records:
        v2.append(value, key=key, timestamp=ts)
    v2_data = v2.build()
    v1_data = kcodec.convert(v2_data, magic=1)
    conversions = {
        "2 -> 1 (lz4)": lambda: kcodec.convert(v2_data, magic=1),
        "2 -> 0 (lz4)": lambda: kcodec.convert(v2_data, magic=0, on_loss="ignore"),
        "1 -> 2 (lz4)": lambda: kcodec.convert(v1_data, magic=2),
        "2 -> 2 lz4 -> zstd": lambda: kcodec.convert(v2_data, magic=2, compression="zstd"),
    }
    medians = interleaved(conversions, rounds)
    for name, seconds in medians.items():
        rows.append((f"convert {name}", "kcodec", seconds, None,
                     f"{1000 / seconds / 1e6:.2f} M rec/s"))
    print(f"kcodec {kcodec.__version__}: 1000 messages, 16 B keys, 100 B values, "
          f"{rounds} interleaved rounds, medians")
    print_table("magic 0 and 1; conversion", rows)
    print("\n100 000 records, magic 1       1 thread   2 threads   2 vs 1")
    for case, one, two in thread_scaling(rounds):
        print(f"{case:<28} {one * 1e3:>8.2f}ms {two * 1e3:>9.2f}ms {one / two:>7.2f}x")
    print("\n100 000 records in wrappers of 10   1 thread   2 threads   aiokafka   vs aiokafka")
    for codec, one, two, peer in small_wrappers(rounds):
        print(f"m1 {codec} decode_columns{'':<19} {one * 1e3:>8.2f}ms {two * 1e3:>9.2f}ms "
              f"{peer * 1e3:>8.2f}ms {peer / one:>11.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
