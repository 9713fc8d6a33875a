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


def demo(args: argparse.Namespace) -> int:
    """Build sample batches (plain, idempotent, transactional with a COMMIT marker) and read them."""
    start = 1_700_000_000_000
    events = sample_events(args.records, start)
    chunks = [events[i:i + args.batch_size] for i in range(0, len(events), args.batch_size)]
    out = bytearray()
    offset = 0
    began = time.perf_counter()
    for n, chunk in enumerate(chunks):
        transactional = n % 3 == 2
        builder = kcodec.BatchBuilder(base_offset=offset, producer_id=1000 if n % 3 else -1,
                                      producer_epoch=0 if n % 3 else -1,
                                      base_sequence=offset if n % 3 else -1,
                                      is_transactional=transactional)
        for key, value, ts, headers in chunk:
            builder.append(value, key=key, timestamp=ts, headers=headers)
        out += builder.build()
        offset = builder.next_offset
        if transactional:
            out += kcodec.BatchBuilder.end_txn_marker(
                ControlType.COMMIT, producer_id=1000, producer_epoch=0, coordinator_epoch=1,
                base_offset=offset, timestamp=ts)
            offset += 1
    built = time.perf_counter() - began

    began = time.perf_counter()
    batches = data_records = markers = 0
    first = last = None
    for batch in kcodec.read_batches(out):
        batches += 1
        for record in batch:
            if batch.is_control:
                markers += 1
                continue
            data_records += 1
            first = first or record
            last = record
    read = time.perf_counter() - began

    print(f"kcodec {kcodec.__version__} demo (crc32c backend: {kcodec.crc32c_backend()})")
    print(f"built {batches} batches, {len(out)} bytes: {data_records} records in batches of up to "
          f"{args.batch_size}, {markers} COMMIT markers ({built * 1e3:.1f} ms)")
    print(f"read them back, every CRC checked ({read * 1e3:.1f} ms)")
    if first is not None and last is not None:
        print(f"first record: offset {first.offset}, key {first.key!r}, value {first.value!r}")
        print(f"last record:  offset {last.offset}, headers {last.headers!r}")
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
