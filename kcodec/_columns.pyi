from collections.abc import Iterable
from typing import Any

COLUMN_GROUPS: dict[str, int]

def decode_chunk(
    entries: Iterable[Any],
    want: int,
    *,
    strict: bool = False,
    offsets: tuple[int, int] = ...,
    timestamps: tuple[int, int] = ...,
    max_decompressed_size: int | None = None,
    validate_crc: bool = False,
) -> dict[str, Any]: ...
