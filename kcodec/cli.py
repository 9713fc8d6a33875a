"""The ``kcodec`` command line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import kcodec
from kcodec import ControlType


def sample_events(count: int, start_ms: int) -> list[tuple[bytes, bytes, int, list[tuple[str, bytes]]]]:
    """JSON-like click events with keys and a trace header, as a producer would send them."""
    pages = ["/", "/cart", "/checkout", "/search", "/product/42"]
    events = []
    for i in range(count):
        user = f"user-{i % 97:03d}"
        body = {"user": user, "page": pages[i % len(pages)], "seq": i,
                "ts": start_ms + i * 7, "agent": "Mozilla/5.0 (X11; Linux x86_64)"}
        events.append((user.encode(), json.dumps(body).encode(), start_ms + i * 7,
                       [("trace-id", f"{i:016x}".encode())]))
    return events


def _batches(events: list[tuple[bytes, bytes, int, list[tuple[str, bytes]]]], batch_size: int,
             codec: str) -> tuple[bytes, int]:
    """Sample batches (plain, idempotent, transactional with COMMIT markers) in one codec."""
    out = bytearray()
    offset = markers = 0
    for n, start in enumerate(range(0, len(events), batch_size)):
        transactional = n % 3 == 2
        producer = n % 3 != 0
        builder = kcodec.BatchBuilder(compression=codec, base_offset=offset,
                                      producer_id=1000 if producer else -1,
                                      producer_epoch=0 if producer else -1,
                                      base_sequence=offset if producer else -1,
                                      is_transactional=transactional)
        for key, value, ts, headers in events[start:start + batch_size]:
            builder.append(value, key=key, timestamp=ts, headers=headers)
        out += builder.build()
        offset = builder.next_offset
        if transactional:
            out += kcodec.BatchBuilder.end_txn_marker(
                ControlType.COMMIT, producer_id=1000, producer_epoch=0, coordinator_epoch=1,
                base_offset=offset, timestamp=ts)
            offset += 1
            markers += 1
    return bytes(out), markers


def demo(args: argparse.Namespace) -> int:
    """Build sample batches in every codec, read them back, convert and validate them."""
    events = sample_events(args.records, 1_700_000_000_000)
    raw_size = sum(len(k) + len(v) for k, v, _, _ in events)
    print(f"kcodec {kcodec.__version__} demo (crc32c backend: {kcodec.crc32c_backend()})")
    print(f"{len(events)} JSON-like events, {raw_size} bytes of keys and values, "
          f"batches of {args.batch_size}")
    print(f"{'codec':<7} {'bytes':>9} {'ratio':>6} {'build ms':>9} {'read ms':>8}  records")
    plain = b""
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        began = time.perf_counter()
        data, markers = _batches(events, args.batch_size, codec)
        built = time.perf_counter() - began
        began = time.perf_counter()
        records = sum(1 for batch in kcodec.read_batches(data) for record in batch
                      if not batch.is_control)
        read = time.perf_counter() - began
        print(f"{codec:<7} {len(data):>9} {raw_size / len(data):>6.2f} {built * 1e3:>9.1f} "
              f"{read * 1e3:>8.1f}  {records} (+{markers} COMMIT markers)")
        plain = plain or data
    first = next(iter(next(kcodec.read_batches(plain))))
    print(f"first record: offset {first.offset}, key {first.key!r}, headers {first.headers!r}")
    old, report = kcodec.convert(plain, magic=1, compression="gzip", on_loss="ignore",
                                 report=True)
    print(f"for a magic-1 consumer: {len(old)} bytes of gzip wrappers; "
          f"{'; '.join(report.losses())}")
    single = next(kcodec.read_batches(plain)).buffer
    result = kcodec.validate(bytes(single), next_offset=5000, now=1_700_000_100_000,
                             config={"compression.type": "lz4"})
    print(f"validated as a broker with compression.type=lz4: offsets {result.first_offset}-"
          f"{result.last_offset}, {'rebuilt' if result.rebuilt else 'patched in place'}, "
          f"{len(result.records)} bytes")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcodec", description=kcodec.__doc__)
    parser.add_argument("--version", action="version", version=f"kcodec {kcodec.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="build and read sample Kafka record batches",
                                      description=demo.__doc__)
    demo_parser.add_argument("--records", type=int, default=10_000, help="records to generate")
    demo_parser.add_argument("--batch-size", type=int, default=500, help="records per batch")
    demo_parser.set_defaults(run=demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except kcodec.errors.KcodecError as exc:
        print(f"kcodec: error: {exc}", file=sys.stderr)
        return 1
