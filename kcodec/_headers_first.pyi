from typing import final

from typing_extensions import Buffer

@final
class RecordMetadata:
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...
    @property
    def value_size(self) -> int: ...
    def _fields(self) -> tuple[int, int, bytes | None, list[tuple[str, bytes | None]], int]: ...

def metadata(
    offset: int, timestamp: int, key: bytes | None, headers: list[tuple[str, bytes | None]],
    value_size: int,
) -> RecordMetadata: ...

def to_headers_first(records: Buffer, count: int, has_attributes: bool) -> bytes: ...
def meta_bounds(region: Buffer) -> tuple[int, int] | None: ...
def meta_prefix(codec: int, section: Buffer, max_decompressed_size: int | None = None) -> Buffer: ...
def from_headers_first(
    region: Buffer, count: int, has_attributes: bool, strict: bool, position: int = -1,
) -> bytes: ...
def scan_metadata(
    region: Buffer,
    count: int,
    has_attributes: bool,
    strict: bool,
    base_offset: int,
    base_timestamp: int,
    log_append: bool,
    max_timestamp: int,
    position: int = -1,
) -> list[RecordMetadata]: ...
