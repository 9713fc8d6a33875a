"""Kafka's names and numbers for codecs, timestamp types and control records."""

from __future__ import annotations

import enum

from kcodec.errors import UnknownCompressionTypeError


class Compression(enum.IntEnum):
    """Codec ids of attribute bits 0-2 (FORMAT.md §2.2, §7)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4
    PLUGGABLE = 5

    @classmethod
    def parse(cls, value: Compression | int | str | None) -> Compression:
        """Accept a member, an id, or a Kafka name (``"lz4"``, ``"none"``, ``"uncompressed"``);
        anything else raises UnknownCompressionTypeError (a ValueError)."""
        if value is None:
            return cls.NONE
        # one dict lookup for members, ids and lower-case names: the enum's own call
        # costs ~1 us, more than decompressing a small batch
        if isinstance(value, (int, str)):
            member = COMPRESSION_OF.get(value)
            if member is not None:
                return member
        if isinstance(value, str):
            name = value.strip().lower()
            if name == "uncompressed":
                return cls.NONE
            try:
                return cls[name.upper()]
            except KeyError:
                pass
        else:
            try:
                return cls(value)
            except ValueError:
                pass
        raise UnknownCompressionTypeError(f"Unknown compression type {value!r}")


#: The codecs by member, id and lower-case Kafka name (``"uncompressed"`` too).
COMPRESSION_OF: dict[int | str, Compression] = {
    **{member: member for member in Compression},   # (members hash as their ids)
    **{member.name.lower(): member for member in Compression},
    "uncompressed": Compression.NONE}


class TimestampType(enum.IntEnum):
    """Timestamp types as Kafka's ``TimestampType``."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(enum.IntEnum):
    """Control record types (FORMAT.md §2.8); ``UNKNOWN`` for any other id."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


#: Size of the v2 batch header; also the size of an empty batch.
RECORD_BATCH_OVERHEAD = 61
#: Offset, size and the rest of a log entry's fixed prefix common to all magics.
LOG_OVERHEAD = 12
#: ``producer_id``, ``producer_epoch`` and ``base_sequence`` of a batch without a producer.
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
