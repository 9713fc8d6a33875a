"""Columnar decoding against kcodec's own row API and aiokafka's object reader.

100 batches of 1000 records (16-byte keys, JSON-like values of 100 B and 1 KiB), per codec:
records/s of decode_columns (numpy) and decode_arrow (binary columns, and binary_view
columns that point into the input), with 1 and 2 threads (and iter_columns, whose threads'
chunks are not joined, with 2); compressed, also against the
codec library decompressing the same payloads into kept buffers of their exact size; and
two threads against one on an input ten times as large; and the same records in small
batches. Every reader checks CRCs.

    python bench/bench_columnar.py [--rounds N] [--quick] [--json FILE]

--json also writes the figures behind the summary tables, for bench/columnar_runs.py to
take the median of several runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import cramjam

# numpy's OpenBLAS threads spin on the second core after any BLAS call; this benchmark
# wants both cores for the decoders
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (  # noqa: E402
    interleaved,
    lz4_blocks,
    print_table,
    read_aiokafka,
    read_kcodec,
    sample_records,
    xerial_blocks,
)

import kcodec  # noqa: E402
from kcodec import codecs  # noqa: E402
from kcodec._scratch import ScratchBuffer  # noqa: E402
from kcodec.constants import Compression  # noqa: E402

BATCHES = 100
PER_BATCH = 1000


def make_log(codec: str, value_size: int, batches: int = BATCHES,
             per_batch: int = PER_BATCH) -> bytes:
    records = sample_records(per_batch, value_size)
    out = bytearray()
    for b in range(batches):
        builder = kcodec.BatchBuilder(compression=codec, base_offset=b * per_batch)
        for key, value, ts in records:
            builder.append(value, key=key, timestamp=ts)
        out += builder.build()
    return bytes(out)


def batch_payloads(data: bytes) -> list[tuple[Compression, memoryview, int]]:
    """(codec, compressed records section, its decompressed size) of every batch."""
    sections = [(b.compression, b.buffer[61:]) for b in kcodec.read_batches(data)]
    return [(codec, section, len(codecs.decompress(codec, section)))
            for codec, section in sections]


def raw_decompress(payloads: list[tuple[Compression, memoryview, int]]) -> list[ScratchBuffer]:
    """Every payload decompressed by the codec library into a buffer of its exact size that
    is kept, as a decoder's output is: the least any decoder producing the records pays.
    LZ4 and snappy blocks go to liblz4 and snappy (through cramjam), not to kcodec's own
    block decoders."""
    kept = []
    for codec, payload, size in payloads:
        sink = ScratchBuffer(size)
        if codec == Compression.LZ4:
            blocks, stored = lz4_blocks(payload)
            assert not stored
            for block in blocks:
                sink.commit(cramjam.lz4.decompress_block_into(block, sink.window(1 << 16),
                                                               output_len=1 << 16))
        elif codec == Compression.SNAPPY:
            for block in xerial_blocks(payload):
                window = sink.window(cramjam.snappy.decompress_raw_len(block))
                sink.commit(cramjam.snappy.decompress_raw_into(block, window))
        else:
            codecs.decompress_builtin_into(codec, payload, size, sink)
        kept.append(sink)
    return kept


def copy_scaling(rounds: int) -> float:
    """How much faster two threads copy 2 x 64 MiB than one: the machine's own ceiling for
    memory-bound work such as decoding uncompressed columns."""
    import numpy as np
    sources = [np.ones(64 << 20, dtype=np.uint8) for _ in range(2)]
    targets = [np.zeros(64 << 20, dtype=np.uint8) for _ in range(2)]

    def copy(i: int) -> None:
        np.copyto(targets[i], sources[i])

    def two() -> None:
        workers = [threading.Thread(target=copy, args=(i,)) for i in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    medians = interleaved({"one": lambda: (copy(0), copy(1)), "two": two}, rounds)
    return medians["one"] / medians["two"]


def compute_scaling(rounds: int) -> float:
    """How much faster two threads hash than one (SHA-256 of a buffer that stays in cache):
    the machine's own ceiling for work that is not memory-bound, such as inflating gzip."""
    import hashlib
    block = bytes(range(256)) * 1024

    def hash_blocks() -> None:
        for _ in range(100):
            hashlib.sha256(block).digest()   # releases the GIL

    def two() -> None:
        workers = [threading.Thread(target=hash_blocks) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    medians = interleaved({"one": lambda: (hash_blocks(), hash_blocks()), "two": two}, rounds)
    return medians["one"] / medians["two"]


def decoders(data: bytes) -> dict[str, Callable[[], object]]:
    """decode_columns, decode_arrow and decode_arrow with binary views, each with 1 and 2
    threads, and iter_columns with 2 (with 1 it decodes as decode_columns does)."""
    return {
        "columns": lambda: kcodec.decode_columns(data),
        "columns x2": lambda: kcodec.decode_columns(data, threads=2),
        "column chunks x2": lambda: list(kcodec.iter_columns(data, threads=2)),
        "arrow": lambda: kcodec.decode_arrow(data),
        "arrow x2": lambda: kcodec.decode_arrow(data, threads=2),
        "arrow views": lambda: kcodec.decode_arrow(data, binary_view=True),
        "arrow views x2": lambda: kcodec.decode_arrow(data, binary_view=True, threads=2),
    }


def two_threads(medians: dict[str, float]) -> dict[str, float]:
    """How much faster each decoder ran with two threads than with one."""
    return {"arrow": medians["arrow"] / medians["arrow x2"],
            "views": medians["arrow views"] / medians["arrow views x2"],
            "columns": medians["columns"] / medians["columns x2"],
            "chunks": medians["columns"] / medians["column chunks x2"]}


def scaling_by_size(codec: str, rounds: int) -> list[tuple[str, dict[str, float]]]:
    """Two threads against one on 100 B records, for the bench's input and one ten times as
    large: what a call costs besides decoding (handing work to the helper thread, joining
    or assembling the parts) weighs less on a larger input."""
    out = []
    for batches in (BATCHES, 10 * BATCHES):
        data = make_log(codec, 100, batches)
        out.append((f"{codec} 100 B x {batches * PER_BATCH:,}",
                    two_threads(interleaved(decoders(data), rounds))))
    return out


def small_batches(rounds: int, codecs: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The bench's 100 000 records of 100 B in batches of 1, 10 and 100 records, as
    producers that send at once write them, and in compressed batches of 10: what each
    batch costs besides its records weighs up to a thousand times as much. (records/s of
    decode_columns and of views, decode_columns against aiokafka's reader, and
    decode_arrow with two threads against one.)"""
    out = []
    total = BATCHES * PER_BATCH
    cases = [("none", 1), ("none", 10), ("none", 100)] + [(codec, 10) for codec in codecs]
    for codec, per_batch in cases:
        data = make_log(codec, 100, total // per_batch, per_batch)
        parts = [bytes(b.buffer) for b in kcodec.read_batches(data)]
        medians = interleaved({
            "columns": lambda: kcodec.decode_columns(data),
            "views": lambda: kcodec.decode_arrow(data, binary_view=True),
            "arrow": lambda: kcodec.decode_arrow(data),
            "arrow x2": lambda: kcodec.decode_arrow(data, threads=2),
            "aiokafka": lambda: aiokafka_rows(parts),
        }, rounds)
        name = f"{per_batch} a batch" if codec == "none" else f"{codec}, {per_batch} a batch"
        out.append((name, {"columns": total / medians["columns"] / 1e6,
                           "views": total / medians["views"] / 1e6,
                           "vs_aiokafka": medians["aiokafka"] / medians["columns"],
                           "x2": {"arrow": medians["arrow"] / medians["arrow x2"]}}))
    return out


def aiokafka_rows(parts: list[bytes]) -> None:
    for part in parts:
        read_aiokafka(part)


def percent(fraction: float | None) -> str:
    return "" if fraction is None else f"{fraction:+.0%}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="FILE", help="also write the summary figures here")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    total = BATCHES * PER_BATCH
    rows_out = []
    figures: dict[str, Any] = {"kcodec": kcodec.__version__, "rounds": rounds, "cases": {},
                               "by_size": {}, "small_batches": {}}
    cases = [(codec, size) for codec in ("none", "gzip", "snappy", "lz4", "zstd")
             for size in (100, 1024)]
    if args.quick:
        cases = [("none", 100), ("lz4", 1024)]
    for codec, size in cases:
        data = make_log(codec, size)
        parts = [bytes(b.buffer) for b in kcodec.read_batches(data)]
        contenders = {
            **decoders(data),
            "rows": lambda: read_kcodec(data),
            "aiokafka": lambda: aiokafka_rows(parts),
        }
        if codec != "none":
            payloads = batch_payloads(data)
            contenders["raw decompress"] = lambda: raw_decompress(payloads)
        medians = interleaved(contenders, rounds)
        for name, seconds in medians.items():
            ratio = None if name == "columns" else seconds / medians["columns"]
            rows_out.append((f"{codec} {size} B", name, seconds, ratio,
                             f"{total / seconds / 1e6:.1f} M rec/s"))
        raw = medians.get("raw decompress")
        figures["cases"][f"{codec} {size} B"] = {
            "columns": total / medians["columns"] / 1e6,
            "views": total / medians["arrow views"] / 1e6,
            "vs_aiokafka": medians["aiokafka"] / medians["columns"],
            "x2": two_threads(medians),
            "over_raw": None if raw is None else {
                "columns": medians["columns"] / raw - 1,
                "views": medians["arrow views"] / raw - 1}}
    print(f"kcodec {kcodec.__version__}: {BATCHES} batches x {PER_BATCH} records, "
          f"{rounds} interleaved rounds, medians ('kcodec is' = faster than columns by)")
    print_table("columnar decoding", rows_out)
    print("\n                M rec/s:          vs       2 threads vs 1:                 over raw:")
    print("case            columns  views  aiokafka  arrow  views  columns  chunks  columns"
          "  views")
    for case, f in figures["cases"].items():
        x2, over = f["x2"], f["over_raw"] or {}
        print(f"{case:<14} {f['columns']:>8.1f} {f['views']:>6.1f} {f['vs_aiokafka']:>8.1f}x "
              f"{x2['arrow']:>5.2f}x {x2['views']:>5.2f}x {x2['columns']:>7.2f}x "
              f"{x2['chunks']:>6.2f}x {percent(over.get('columns')):>8} "
              f"{percent(over.get('views')):>6}")
    print("\n2 threads vs 1, by input size:  arrow  views  columns  chunks")
    for codec in ["none"] if args.quick else ["none", "lz4"]:
        for case, x2 in scaling_by_size(codec, rounds):
            figures["by_size"][case] = {"x2": x2}
            print(f"{case:<30} {x2['arrow']:>5.2f}x {x2['views']:>5.2f}x "
                  f"{x2['columns']:>7.2f}x {x2['chunks']:>6.2f}x")
    print("\nsmall batches, 100 B records:  M rec/s: columns  views  vs aiokafka"
          "  arrow, 2 threads vs 1")
    for case, f in small_batches(rounds, [] if args.quick else ["gzip", "snappy", "lz4", "zstd"]):
        figures["small_batches"][case] = f
        print(f"{case:<30} {f['columns']:>15.1f} {f['views']:>6.1f} {f['vs_aiokafka']:>10.1f}x "
              f"{f['x2']['arrow']:>12.2f}x")
    figures["ceilings"] = {"copy": copy_scaling(rounds), "hash": compute_scaling(rounds)}
    print(f"\nwith 2 threads instead of 1, this machine copies memory "
          f"{figures['ceilings']['copy']:.2f}x and hashes in cache "
          f"{figures['ceilings']['hash']:.2f}x as fast")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
