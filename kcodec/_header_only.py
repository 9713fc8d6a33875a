"""A log file's entries that Kafka's file framing takes for magic-2 batches and kcodec's
reader refuses: a magic byte of 3 to 127, or a batch shorter than the 61-byte header.

Kafka's FileLogInputStream checks only an entry's size (14 bytes or more) and that it
ends within the file; a magic byte of 2 or more makes it a DefaultFileChannelRecordBatch,
whose fields are read from the 61 bytes at its position (past its end, for a short one)
and which is valid only when 61 bytes or longer with a matching CRC. kafka-dump-log
prints such an entry's batch line and goes on; :func:`header_only` reads it the same way.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

from kcodec._crc32c import crc32c
from kcodec._java_math import java_int, java_long
from kcodec.constants import TimestampType
from kcodec.errors import CorruptRecordError, UnsupportedCompressionTypeError

_HEADER = struct.Struct(">qiibIhiqqqhii")   # DefaultRecordBatch's 61 bytes, baseOffset first
_INT32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class HeaderOnlyBatch:
    """An entry's fields as DefaultRecordBatch reads them, under RecordBatch's names."""

    position: int
    size: int
    base_offset: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    valid: bool

    @property
    def last_offset(self) -> int:
        return java_long(self.base_offset + self.last_offset_delta)

    @property
    def last_sequence(self) -> int:
        """DefaultRecordBatch.lastSequence, in Java's int arithmetic."""
        if self.base_sequence == -1:
            return -1
        if self.base_sequence > java_int(_INT32_MAX - self.last_offset_delta):
            return java_int(self.last_offset_delta - (_INT32_MAX - self.base_sequence) - 1)
        return java_int(self.base_sequence + self.last_offset_delta)

    @property
    def compression_id(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> TimestampType:
        return (TimestampType.LOG_APPEND_TIME if self.attributes & 0x08
                else TimestampType.CREATE_TIME)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & 0x40 else None

    def is_valid(self) -> bool:
        return self.valid


def header_only(log: Any, position: int, end: int) -> HeaderOnlyBatch | None:
    """The entry at ``position`` of a log file (``log``, the whole file, framed up to byte
    ``end``: kafka-dump-log's --max-bytes), read from its header alone, if Kafka's framing
    takes it for a magic-2 batch and kcodec's reader refuses it; else None. The header is
    read from the file whatever ``end``, as Kafka reads it. CorruptRecordError where
    Kafka's tool fails: a header past the file's end, or a codec id Kafka does not define."""
    view = memoryview(log)
    if position + 17 > end:
        return None
    size = int.from_bytes(view[position + 8:position + 12], "big", signed=True) + 12
    magic = int.from_bytes(view[position + 16:position + 17], "big", signed=True)
    if size < 26 or position + size > end or magic < 2 or (magic == 2 and size >= 61):
        return None
    if position + _HEADER.size > len(view):
        raise CorruptRecordError("the log ends inside a batch header", position=position)
    (base_offset, _, epoch, magic, crc, attributes, delta, base_timestamp, max_timestamp,
     producer_id, producer_epoch, base_sequence, count) = _HEADER.unpack_from(view, position)
    if attributes & 0x07 > 4:
        raise UnsupportedCompressionTypeError(f"Unknown compression type id: {attributes & 7}",
                                              position=position + 21)
    valid = size >= _HEADER.size and crc == crc32c(view[position + 21:position + size])
    return HeaderOnlyBatch(position, size, base_offset, epoch, magic, crc, attributes, delta,
                           base_timestamp, max_timestamp, producer_id, producer_epoch,
                           base_sequence, count, valid)


__all__ = ["HeaderOnlyBatch", "header_only"]
