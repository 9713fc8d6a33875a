"""Timing helpers shared by the benchmarks: interleaved rounds, medians, ratio tables."""

from __future__ import annotations

import json
import os
import statistics
import struct
import time
from collections.abc import Callable
from typing import Any

Timings = dict[str, list[float]]
# (case, implementation, median seconds, peer's time over kcodec's, rate)
Row = tuple[str, str, float, float | None, str]


def sample_value(size: int, seed: int = 0) -> bytes:
    """A JSON-like event padded to ``size`` bytes."""
    body = json.dumps({"user": f"user-{seed % 97:03d}", "event": "page_view", "page": "/checkout",
                       "ts": 1700000000000 + seed, "agent": "Mozilla/5.0 (X11; Linux x86_64)",
                       "pad": ""})
    text = body[:-2] + "x" * max(0, size - len(body)) + '"}'
    return text.encode()[:size]


def sample_records(count: int, value_size: int) -> list[tuple[bytes, bytes, int]]:
    """(16-byte key, value, timestamp) triples."""
    return [(os.urandom(8).hex().encode(), sample_value(value_size, i), 1700000000000 + i)
            for i in range(count)]


def lz4_blocks(frame: memoryview) -> tuple[list[memoryview], list[memoryview]]:
    """The compressed and the stored blocks of a Kafka LZ4 frame (7-byte header, no
    checksums)."""
    pos = 7
    compressed: list[memoryview] = []
    stored: list[memoryview] = []
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        if word == 0:
            return compressed, stored
        size = word & 0x7FFFFFFF
        (stored if word & 0x80000000 else compressed).append(frame[pos + 4:pos + 4 + size])
        pos += 4 + size


def xerial_blocks(stream: memoryview) -> list[memoryview]:
    """The raw snappy blocks of an xerial stream (16-byte header, no concatenation)."""
    pos = 16
    blocks = []
    while pos < len(stream):
        (length,) = struct.unpack_from(">i", stream, pos)
        blocks.append(stream[pos + 4:pos + 4 + length])
        pos += 4 + length
    return blocks


def interleaved(contenders: dict[str, Callable[[], object]], rounds: int,
                min_seconds: float = 0.02) -> dict[str, float]:
    """Median seconds per call of each contender, measured round-robin so that the noise of
    a shared machine falls on all of them alike."""
    loops: dict[str, int] = {}
    for name, fn in contenders.items():
        fn()  # warm up
        n, start = 1, time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        loops[name] = max(1, int(min_seconds / max(elapsed, 1e-9)))
    samples: Timings = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            n = loops[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - start) / n)
    return {name: statistics.median(values) for name, values in samples.items()}


def measure(case: str, contenders: dict[str, Callable[[], Any]], rounds: int, quick: bool,
            records: int) -> tuple[list[Row], dict[str, float]]:
    """The rows of one case against "kcodec" (kafka-python left out when quick), and its
    medians; other kcodec contenders ("kcodec, ...") are shown without a ratio."""
    if quick:
        contenders.pop("kafka-python", None)
    medians = interleaved(contenders, rounds)
    rows = [(case, name, seconds,
             None if name.startswith("kcodec") else seconds / medians["kcodec"],
             f"{records / seconds / 1e6:.2f} M rec/s") for name, seconds in medians.items()]
    return rows, medians


def print_table(title: str, rows: list[Row]) -> None:
    """rows: (case, contender, seconds per op, ratio vs kcodec or None, unit-rate text)."""
    print(f"\n{title}")
    print(f"{'case':<28} {'implementation':<14} {'median':>11} {'rate':>16} {'kcodec is':>11}")
    for case, name, seconds, ratio, rate in rows:
        speed = "" if ratio is None else f"{ratio:.2f}x"
        print(f"{case:<28} {name:<14} {seconds * 1e6:>9.1f}us {rate:>16} {speed:>11}")


# ---- kcodec and the peers, as each one is used by its own clients -------------------------

Records = list[tuple[bytes, bytes, int]]


def read_kcodec(data: bytes) -> None:
    """kcodec's row reader (CRC checked), touching every value."""
    import kcodec
    for batch in kcodec.read_batches(data):
        for r in batch:
            r.value


def build_kcodec(records: Records, compression: str = "none", level: int | None = None,
                 magic: int = 2) -> bytes:
    import kcodec
    builder = kcodec.BatchBuilder(magic=magic, compression=compression, level=level)
    for key, value, ts in records:
        builder.append(value, key=key, timestamp=ts)
    return builder.build()


def read_aiokafka(data: bytes) -> None:
    """aiokafka's Cython reader, checking the CRC as its consumer does (check_crcs)."""
    from aiokafka.record._crecords import DefaultRecordBatch
    batch = DefaultRecordBatch(data)
    if not batch.validate_crc():
        raise ValueError("crc")
    for r in batch:
        r.value


def read_kafka_python(data: bytes) -> None:
    from kafka.record.default_records import DefaultRecordBatch
    batch = DefaultRecordBatch(data)
    if not batch.validate_crc():
        raise ValueError("crc")
    for r in batch:
        r.value


def build_aiokafka(records: Records, codec_id: int = 0) -> bytearray:
    from aiokafka.record._crecords import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(2, codec_id, 0, -1, -1, -1, 1 << 30)
    for i, (key, value, ts) in enumerate(records):
        builder.append(i, ts, key, value, [])
    return builder.build()


def build_kafka_python(records: Records, codec_id: int = 0) -> bytearray:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec_id,
                                        is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 30)
    for i, (key, value, ts) in enumerate(records):
        builder.append(i, timestamp=ts, key=key, value=value, headers=[])
    return builder.build()
