"""Train a dictionary from the record values of Kafka segments:

    python -m kcodec_zstd_dict train LOG_PATH OUT.zdict [--records N] [--size BYTES]

LOG_PATH is a .log file, a partition directory or a log directory. Prints the plugin name
to register the dictionary under."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from kcodec.segments import Segment
from kcodec_zstd_dict import train


def values(path: Path, limit: int) -> Iterator[bytes]:
    files = [path] if path.is_file() else sorted(path.rglob("*.log"))
    count = 0
    for file in files:
        with Segment(file) as segment:
            for batch in segment.batches():
                if batch.is_control:
                    continue
                for record in batch:
                    if record.value:
                        yield record.value
                        count += 1
                        if count == limit:
                            return


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m kcodec_zstd_dict")
    commands = parser.add_subparsers(dest="command", required=True)
    trainer = commands.add_parser("train", help="train a dictionary from segments")
    trainer.add_argument("log_path", type=Path)
    trainer.add_argument("output", type=Path)
    trainer.add_argument("--records", type=int, default=10_000, help="values to sample")
    trainer.add_argument("--size", type=int, default=16 * 1024, help="dictionary bytes")
    args = parser.parse_args()
    codec = train(values(args.log_path, args.records), args.size)
    codec.save(args.output)
    print(f"{codec.name}: {len(codec.dictionary)} bytes -> {args.output}")


if __name__ == "__main__":
    main()
