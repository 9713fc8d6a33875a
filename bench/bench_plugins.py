"""Pluggable compression (codec id 5).

1. snappy as a plugin against built-in snappy: building and reading batches of 1000
   records (100 B and 1 KiB values). KIP-984 claims plugins cost at most 3%.
2. zstd with a trained dictionary (examples/zstd-dict) against plain zstd at the same
   level, for order events of ~100 B, ~300 B and ~1 KiB in batches of 1, 10 and 100
   records: stored size (whole batches, headers included) and MB/s per core.

    python bench/bench_plugins.py [--rounds N] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "zstd-dict"))
from common import interleaved, sample_records  # noqa: E402
from kcodec_zstd_dict import train  # noqa: E402

import kcodec  # noqa: E402
from kcodec import codecs, plugins  # noqa: E402

ITEMS = ["book", "lamp", "chair", "desk", "mug", "pen", "bag", "phone case", "monitor", "cable"]
CITIES = ["Berlin", "Lyon", "Utrecht", "Austin", "Recife", "Osaka", "Pune", "Durban"]


def order_event(rng: random.Random, size_class: int) -> bytes:
    """An order event of about ``size_class`` bytes (100, 300 or 1000)."""
    event: dict[str, object] = {
        "id": f"{rng.getrandbits(40):010x}", "customer": f"c-{rng.randrange(50000):05d}",
        "item": rng.choice(ITEMS), "qty": rng.randint(1, 5),
        "cents": rng.randrange(199, 19999)}
    if size_class >= 300:
        event.update({"status": rng.choice(["created", "paid", "shipped", "delivered"]),
                      "country": rng.choice(["DE", "FR", "NL", "US", "BR", "JP", "IN"]),
                      "city": rng.choice(CITIES), "session": f"{rng.getrandbits(64):016x}",
                      "channel": rng.choice(["web", "ios", "android"]),
                      "ts": 1_767_225_600_000 + rng.randrange(10**9)})
    if size_class >= 1000:
        event["lines"] = [{"sku": f"SKU-{rng.randrange(10**6):06d}", "item": rng.choice(ITEMS),
                           "qty": rng.randint(1, 3), "cents": rng.randrange(199, 9999),
                           "warehouse": rng.choice(CITIES)} for _ in range(6)]
        event["shipping"] = {"street": f"{rng.randrange(1, 300)} {rng.choice(CITIES)} Road",
                             "method": rng.choice(["standard", "express"]),
                             "carrier": rng.choice(["DHL", "UPS", "PostNL"])}
    return json.dumps(event).encode()


def build(values: list[bytes], **options: object) -> bytes:
    builder = kcodec.BatchBuilder(**options)  # type: ignore[arg-type]
    for i, value in enumerate(values):
        builder.append(value, key=b"c-%05d" % (i % 50000), timestamp=1_767_225_600_000 + i)
    return builder.build()


def read(data: bytes) -> None:
    for batch in kcodec.read_batches(data):
        batch.records()


def snappy_overhead(rounds: int, count: int) -> None:
    plugins.register("kafka-snappy", plugins.BuiltinCodec("snappy"), replace=True)
    print(f"snappy as a plugin vs built-in snappy ({count} records a batch; {rounds} rounds "
          "of built-in, plugin, plugin, built-in; medians; codec = the codec call on the "
          "records region, batch = building or reading the whole batch)")
    print(f"{'values':<8} {'step':<18} {'built-in':>11} {'plugin':>11} {'plugin costs':>13}")
    for size in (100, 1024):
        values = [v for _, v, _ in sample_records(count, size)]
        builtin = build(values, compression="snappy")
        pluggable = build(values, compression="pluggable", plugin="kafka-snappy")
        region = memoryview(build(values))[61:]
        stream = memoryview(builtin)[61:]
        steps = {
            "codec compress": (lambda: codecs.compress_to_scratch("snappy", region),
                               lambda: codecs.compress_to_scratch("pluggable", region,
                                                                  plugin="kafka-snappy")),
            "codec decompress": (lambda: codecs.decompress_to_scratch("snappy", stream),
                                 lambda: codecs.decompress_to_scratch("pluggable", stream,
                                                                      plugin="kafka-snappy")),
            "batch build": (lambda: build(values, compression="snappy"),
                            lambda: build(values, compression="pluggable",
                                          plugin="kafka-snappy")),
            "batch read": (lambda: read(builtin), lambda: read(pluggable)),
        }
        for step, (plain, plugged) in steps.items():
            base, plugin, ratio = paired(plain, plugged, rounds)
            print(f"{size:<8} {step:<18} {base * 1e6:>9.1f}us {plugin * 1e6:>9.1f}us "
                  f"{ratio - 1:>+12.1%}")


def paired(first: Callable[[], object], second: Callable[[], object],
           rounds: int) -> tuple[float, float, float]:
    """Median seconds of each, and the median over rounds of second/first, each round
    timing first, second, second, first back to back (the machine's drift cancels)."""
    loops = max(1, int(0.03 / _seconds(first)))
    firsts, seconds, ratios = [], [], []
    for _ in range(rounds):
        a1, b1, b2, a2 = (_seconds(f, loops) for f in (first, second, second, first))
        firsts.append((a1 + a2) / 2)
        seconds.append((b1 + b2) / 2)
        ratios.append((b1 + b2) / (a1 + a2))
    return statistics.median(firsts), statistics.median(seconds), statistics.median(ratios)


def _seconds(fn: Callable[[], object], loops: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def dictionary_study(rounds: int, batches: int) -> None:
    rng = random.Random(7)
    print(f"\nzstd with a trained dictionary vs plain zstd, level 3 ({rounds} rounds, medians; "
          "sizes are whole batches; MB/s of record bytes per core)")
    print(f"{'values':<8} {'records':>7} {'raw B':>7} {'zstd B':>7} {'dict B':>7} "
          f"{'zstd ratio':>10} {'dict ratio':>10} {'zstd c/d MB/s':>14} {'dict c/d MB/s':>14}")
    for size_class in (100, 300, 1000):
        codec = train([order_event(rng, size_class) for _ in range(4000)], 16 * 1024)
        plugins.register(codec.name, codec, replace=True)
        for per_batch in (1, 10, 100):
            groups = [[order_event(rng, size_class) for _ in range(per_batch)]
                      for _ in range(batches)]
            raw = [build(g) for g in groups]
            plain = [build(g, compression="zstd", level=3) for g in groups]
            dict_ = [build(g, compression="pluggable", plugin=codec.name, level=3)
                     for g in groups]
            record_bytes = sum(len(b) - 61 for b in raw)
            times = interleaved({
                "zstd c": lambda: [build(g, compression="zstd", level=3) for g in groups],
                "dict c": lambda: [build(g, compression="pluggable", plugin=codec.name, level=3)
                                   for g in groups],
                "zstd d": lambda: [read(b) for b in plain],
                "dict d": lambda: [read(b) for b in dict_]}, rounds)
            mb = {k: record_bytes / v / 1e6 for k, v in times.items()}
            raw_b, plain_b, dict_b = (sum(map(len, x)) // batches for x in (raw, plain, dict_))
            print(f"{f'~{size_class}':<8} {per_batch:>7} {raw_b:>7} {plain_b:>7} {dict_b:>7} "
                  f"{raw_b / plain_b:>10.2f} {raw_b / dict_b:>10.2f} "
                  f"{mb['zstd c']:>6.0f}/{mb['zstd d']:<7.0f} {mb['dict c']:>6.0f}/{mb['dict d']:<7.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="a fast pass, for the tests")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    print(f"kcodec {kcodec.__version__}")
    snappy_overhead(rounds if args.quick else 3 * rounds, 100 if args.quick else 1000)
    dictionary_study(rounds, 5 if args.quick else 50)


if __name__ == "__main__":
    main()
