from collections.abc import Sequence
from typing import Any, final

COLUMN_GROUPS: dict[str, int]

def release_spare_buffers() -> int: ...
def decompressed_size_range(compression_id: int, section: Any) -> tuple[int, int, int]: ...

@final
class _Chunk:
    """Decoded columns not yet handed to numpy (decode_first_part)."""

def decode_chunk(
    entries: Sequence[Any],
    want: int,
    *,
    strict: bool = False,
    offsets: tuple[int, int] = ...,
    timestamps: tuple[int, int] = ...,
    max_decompressed_size: int | None = None,
    validate_crc: bool = False,
    views: bool = False,
    arrow: bool = False,
) -> dict[str, Any]: ...
def decode_first_part(
    entries: Sequence[Any],
    want: int,
    room_for: Sequence[Any],
    *,
    strict: bool = False,
    offsets: tuple[int, int] = ...,
    timestamps: tuple[int, int] = ...,
    max_decompressed_size: int | None = None,
    validate_crc: bool = False,
) -> _Chunk: ...
def views_length(views: Any) -> int: ...
def gather_views(
    columns: list[tuple[Any, Any, Any, Any, int]], sources: list[tuple[int, int, Any]], n: int
) -> None: ...
def join_parts(first: _Chunk, parts: list[Any], threads: int) -> dict[str, Any]: ...
