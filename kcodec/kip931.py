"""KIP-931's magic 3 beyond plain reading: scans of headers-first batches that leave the
values compressed, and what magic 3 would save against magic 2 on real data.

For the savings, every magic-2 batch is written again by kcodec twice, as magic 2 and as magic 3 (the
same records, header fields and codec), so that the difference is the format's alone and
not that of another compressor; once uncompressed and once with the batch's own codec.
The KIP estimated about 10 bytes a batch and 1 byte a record.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kcodec._batch import RecordBatch, read_batches
from kcodec._builder import empty_batch
from kcodec._headers_first import RecordMetadata, meta_prefix, metadata, scan_metadata
from kcodec.constants import RECORD_BATCH_OVERHEAD as HEADER_SIZE
from kcodec.constants import Compression, TimestampType
from kcodec.convert import rebuild
from kcodec.errors import KcodecError

#: Magic-3 attribute bits: records without their attributes byte (KIP-931), and kcodec's
#: headers-first layout (FORMAT.md §8.3).
NO_RECORD_ATTRIBUTES = 0x80
HEADERS_FIRST = 0x100


def scan(batch: RecordBatch, max_decompressed_size: int | None = None) -> list[RecordMetadata]:
    """Offsets, timestamps, keys, headers and value sizes of a batch's records.

    For a headers-first magic-3 batch (FORMAT.md §8.3) only the meta block is read: of a
    gzip or zstd batch, only the prefix of the stream that holds it is decompressed, within
    ``max_decompressed_size`` (None: kcodec.codecs' global limit). Any other batch is
    decoded whole (what a validating scan of magic 2 has to do)."""
    if not (batch.magic == 3 and batch.attributes & HEADERS_FIRST):
        return [metadata(r.offset, r.timestamp, r.key, r.headers,
                         -1 if r.value is None else len(r.value))
                for r in batch.records()]
    batch.check_record_count()
    if not batch.record_count:
        return []
    log_append = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    try:
        # (``compression`` refuses ids 6 and 7 at the attributes, as every reader does)
        region = meta_prefix(batch.compression, batch.buffer[batch.header_size:],
                             max_decompressed_size)
        return scan_metadata(region, batch.record_count,
                             not batch.attributes & NO_RECORD_ATTRIBUTES, batch.strict,
                             batch.base_offset, batch.base_timestamp, log_append,
                             batch.max_timestamp,
                             -1 if batch.compression_id else batch.position + batch.header_size)
    except KcodecError as exc:
        if exc.position is None:
            exc.position = batch.position + batch.header_size
        raise


@dataclasses.dataclass
class Savings:
    """Totals over the magic-2 batches measured (legacy entries are skipped): bytes as
    magic 2 and magic 3, uncompressed and with each batch's own codec, and the headers'
    share of the difference."""

    batches: int = 0
    records: int = 0
    v2_uncompressed: int = 0
    v3_uncompressed: int = 0
    v2_compressed: int = 0
    v3_compressed: int = 0
    header_bytes_saved: int = 0

    def add(self, other: Savings) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    def report(self) -> dict[str, Any]:
        """The totals with the savings per batch and per record, as JSON-ready numbers."""
        saved = self.v2_uncompressed - self.v3_uncompressed
        saved_stored = self.v2_compressed - self.v3_compressed
        return {**dataclasses.asdict(self),
                "saved_uncompressed": saved, "saved_compressed": saved_stored,
                "header_bytes_saved_per_batch": _ratio(self.header_bytes_saved, self.batches),
                "record_bytes_saved_per_record": _ratio(saved - self.header_bytes_saved,
                                                        self.records),
                "saved_per_batch_compressed": _ratio(saved_stored, self.batches),
                "saved_percent_uncompressed": _ratio(100 * saved, self.v2_uncompressed),
                "saved_percent_compressed": _ratio(100 * saved_stored, self.v2_compressed)}


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 2) if whole else None


def measure(data: Any) -> Savings:
    """The savings over every magic-2 batch in ``data`` (CRCs checked)."""
    total = Savings()
    for batch in read_batches(data):
        if isinstance(batch, RecordBatch):
            total.add(measure_batch(batch))
    return total


def measure_batch(batch: RecordBatch) -> Savings:
    if batch.record_count == 0:
        empty = [empty_batch(base_offset=batch.base_offset, last_offset=batch.last_offset,
                             max_timestamp=batch.max_timestamp,
                             delete_horizon_ms=batch.delete_horizon_ms, magic=magic)
                 for magic in (2, 3)]
        size2, size3 = len(empty[0]), len(empty[1])
        return Savings(1, 0, size2, size3, size2, size3, size2 - size3)
    records = batch.records()
    codec = batch.compression
    if codec == Compression.PLUGGABLE:  # magic 3 carries no plugin: compared uncompressed
        codec = Compression.NONE
    plain = [rebuild(batch, magic, Compression.NONE, records=records) for magic in (2, 3)]
    stored = [len(b) for b in plain] if codec == Compression.NONE else [
        len(rebuild(batch, magic, codec, records=records)) for magic in (2, 3)]
    (written,) = read_batches(plain[1], allow_magic3=True)
    assert isinstance(written, RecordBatch)
    return Savings(1, len(records), len(plain[0]), len(plain[1]), stored[0], stored[1],
                   HEADER_SIZE - written.header_size)


__all__ = ["RecordMetadata", "Savings", "measure", "measure_batch", "scan"]
