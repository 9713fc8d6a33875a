"""Producer state snapshots (``<offset>.snapshot`` in a partition directory): each active
producer's epoch, last sequence and offset, and open transaction, as a broker saves them
(FORMAT.md §9.1), read as Kafka's ``ProducerStateManager.readSnapshot`` reads them.

Version 1 is the only one: version (int16), CRC-32C (uint32) of every byte after it, and
an int32-counted array of 46-byte entries.
"""

from __future__ import annotations

import dataclasses
import os
import struct
from pathlib import Path

from kcodec._crc32c import crc32c
from kcodec._java_math import java_int
from kcodec.errors import CorruptRecordError

SNAPSHOT_VERSION = 1
_HEAD = struct.Struct(">hIi")      # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")  # producer id, epoch, last sequence, last offset,
#                                      offset delta, timestamp, coordinator epoch,
#                                      current transaction's first offset
_INT32_MAX = (1 << 31) - 1


@dataclasses.dataclass(frozen=True)
class ProducerSnapshotEntry:
    """One producer's state. ``last_offset`` is -1 when the snapshot holds no batch of
    it; ``current_txn_first_offset`` is None when no transaction of it is open."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int | None

    @property
    def first_sequence(self) -> int:
        """The last batch's first sequence (sequences wrap past int32's largest), in
        Java's int arithmetic as Kafka computes it (DefaultRecordBatch.decrementSequence)."""
        sequence, decrement = self.last_sequence, self.offset_delta
        if sequence < decrement:
            return java_int(java_int(_INT32_MAX - java_int(decrement - sequence)) + 1)
        return java_int(sequence - decrement)


def read_producer_snapshot(path: str | os.PathLike[str]) -> list[ProducerSnapshotEntry]:
    """The entries of a producer snapshot file; CorruptRecordError (with the byte position)
    for an unknown version, a bad CRC or a short file, where Kafka discards the snapshot."""
    data = Path(path).read_bytes()
    if len(data) < _HEAD.size:
        raise CorruptRecordError(f"producer snapshot of {len(data)} bytes is shorter than "
                                 f"its {_HEAD.size}-byte header", position=0)
    version, stored, count = _HEAD.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptRecordError(f"producer snapshot version {version} is unknown", position=0)
    computed = crc32c(memoryview(data)[6:])
    if stored != computed:
        raise CorruptRecordError(f"producer snapshot CRC is not valid: stored {stored}, "
                                 f"computed {computed}", position=2)
    room = (len(data) - _HEAD.size) // _ENTRY.size
    if not 0 <= count <= room:
        raise CorruptRecordError(f"producer snapshot counts {count} entries, with room for "
                                 f"{room}", position=6)
    entries = []
    for at in range(_HEAD.size, _HEAD.size + count * _ENTRY.size, _ENTRY.size):
        pid, epoch, last_seq, last_offset, delta, timestamp, coordinator, txn_first = (
            _ENTRY.unpack_from(data, at))
        entries.append(ProducerSnapshotEntry(
            pid, epoch, last_seq, last_offset, delta, timestamp, coordinator,
            txn_first if txn_first >= 0 else None))
    return entries


__all__ = ["ProducerSnapshotEntry", "read_producer_snapshot"]
