"""Seed corpora for the fuzz targets: batches of every magic and codec built here, the
reference vectors and the broker-written segments of ``shared/``, each cut to one entry."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from pathlib import Path

import kcodec
from kcodec.errors import KcodecError
from kcodec.segments import split_entries

from fuzz_targets import PLUGIN

#: Inputs longer than this are left out (the runs' -max_len).
MAX_LEN = 1 << 16
#: Entries taken from each real segment (they repeat themselves; a large corpus only
#: slows a short run down).
PER_SEGMENT = 16


def built_batches() -> Iterator[bytes]:
    """Small batches of every magic and codec, with keys, null values and headers."""
    for magic in (0, 1, 2, 3):
        for codec in ("none", "gzip", "snappy", "lz4", "zstd", "pluggable"):
            if (codec == "zstd" and magic < 2) or (codec == "pluggable" and magic != 2):
                continue
            for headers_first in ((False, True) if magic == 3 else (False,)):
                builder = kcodec.BatchBuilder(
                    magic=magic, compression=codec, base_offset=7,
                    plugin=PLUGIN if codec == "pluggable" else None,
                    headers_first=headers_first)
                for i in range(3):
                    builder.append(b"value-%d" % i if i != 1 else None, key=b"k%d" % i,
                                   timestamp=1_700_000_000_000 + i,
                                   headers=[("h", b"x"), ("n", None)] if magic >= 2 else ())
                yield builder.build()
    yield kcodec.BatchBuilder.end_txn_marker(kcodec.ControlType.COMMIT, producer_id=5,
                                             producer_epoch=1, coordinator_epoch=3)
    yield kcodec.empty_batch(base_offset=3, last_offset=9, max_timestamp=1_700_000_000_000)


def shared_entries(shared: Path) -> Iterator[bytes]:
    """The reference vectors and entries spread over every real segment."""
    vectors = shared / "spec" / "vectors.txt"
    if vectors.exists():
        for line in vectors.read_text().splitlines():
            if line and not line.startswith("#"):
                yield bytes.fromhex(line.split()[1])
    for log in sorted((shared / "testdata" / "kafka-segments").glob("*/*/*.log")):
        entries = list(split_entries(log.read_bytes()))
        yield from entries[::max(1, len(entries) // PER_SEGMENT)]


def _v2_batches(entries: list[bytes]) -> Iterator[tuple[bytes, kcodec.RecordBatch]]:
    for entry in entries:
        try:
            batches = list(kcodec.read_batches(entry, allow_magic3=True))
        except KcodecError:
            continue  # the vectors of broken data
        for batch in batches:
            if isinstance(batch, kcodec.RecordBatch):
                yield entry, batch


def compressed_streams(entries: list[bytes]) -> Iterator[bytes]:
    """Each compressed records section, after the flag byte the decompress target reads
    (codec, magic 2, prefix decompression on)."""
    for entry, batch in _v2_batches(entries):
        codec = int(batch.compression)
        if codec:
            stream = entry[61:]
            if codec == 5:
                stream = stream[1 + stream[0]:]
            yield bytes([codec | 0x10 | 0x20]) + stream


def record_regions(entries: list[bytes]) -> Iterator[bytes]:
    """Each uncompressed magic-2 records section, after its record count."""
    for entry, batch in _v2_batches(entries):
        if not batch.compression and batch.magic == 2 and batch.record_count < 0x80:
            yield bytes([batch.record_count]) + entry[61:]


def _segment_input(entries: list[bytes]) -> bytes:
    """The segment target's layout: index sizes, one offset and one time index entry, log."""
    log = b"".join(entries[:4])
    index = struct.pack(">ii", 0, 0)
    times = struct.pack(">qi", 1_700_000_000_000, 0)
    return bytes([1, 1]) + index + times + log


def seed_inputs(shared: Path | None) -> dict[str, list[bytes]]:
    """Seeds per target name."""
    entries = list(built_batches())
    if shared is not None:
        entries += list(shared_entries(shared))
    entries = [e for e in entries if len(e) < MAX_LEN]
    with_flags = [bytes([1 + 2 * (i % 2)]) + e for i, e in enumerate(entries)]
    return {
        "read_batches": with_flags,
        "decompress": list(compressed_streams(entries)),
        "columns": [bytes([0x19]) + e for e in entries],
        "convert": [bytes([i % 4 | 0x1C]) + e for i, e in enumerate(entries)],
        "validate": [bytes([3]) + e for e in entries],
        "headers_first": list(record_regions(entries)) + [bytes([1]) + e for e in entries],
        "segment": [_segment_input(entries[i:i + 4]) for i in range(0, len(entries), 4)],
    }


def write_seeds(directory: Path, shared: Path | None) -> dict[str, Path]:
    """Write each target's seeds under ``directory/<target>``; returns those folders."""
    folders = {}
    for target, inputs in seed_inputs(shared).items():
        folder = directory / target
        folder.mkdir(parents=True, exist_ok=True)
        for data in inputs:
            (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
        folders[target] = folder
    return folders
