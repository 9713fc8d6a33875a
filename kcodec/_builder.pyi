from collections.abc import Sequence
from typing import final

from typing_extensions import Buffer

from kcodec.constants import Compression, ControlType, TimestampType

@final
class BatchBuilder:
    def __init__(
        self,
        *,
        magic: int = 2,
        compression: Compression | int | str | None = ...,
        level: int | None = None,
        base_offset: int = 0,
        partition_leader_epoch: int = -1,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        is_transactional: bool = False,
        is_control: bool = False,
        timestamp_type: TimestampType | int = ...,
        log_append_time: int | None = None,
        delete_horizon_ms: int | None = None,
        plugin: str | None = None,
        max_timestamp: int | None = None,
        last_offset: int | None = None,
        headers_first: bool = False,
    ) -> None: ...
    @property
    def record_count(self) -> int: ...
    @property
    def size_in_bytes(self) -> int: ...
    @property
    def next_offset(self) -> int: ...
    def append(
        self,
        value: Buffer | None,
        key: Buffer | None = None,
        timestamp: int | None = None,
        headers: Sequence[tuple[str | Buffer, Buffer | None]] = (),
        offset: int | None = None,
    ) -> int: ...
    def size_after(
        self,
        value: Buffer | None,
        key: Buffer | None = None,
        timestamp: int | None = None,
        headers: Sequence[tuple[str | Buffer, Buffer | None]] = (),
        offset: int | None = None,
    ) -> int: ...
    def append_end_txn_marker(
        self, control_type: ControlType | int, coordinator_epoch: int, timestamp: int | None = None
    ) -> int: ...
    def append_control_record(
        self, key: Buffer | None, value: Buffer | None, timestamp: int | None = None,
        offset: int | None = None,
    ) -> int: ...
    def build(self) -> bytes: ...
    @classmethod
    def end_txn_marker(
        cls,
        control_type: ControlType | int,
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        base_offset: int = 0,
        partition_leader_epoch: int = -1,
        timestamp: int | None = None,
    ) -> bytes: ...

def empty_batch(
    *,
    base_offset: int,
    last_offset: int,
    max_timestamp: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    timestamp_type: TimestampType | int = ...,
    delete_horizon_ms: int | None = None,
    magic: int = 2,
) -> bytes: ...
