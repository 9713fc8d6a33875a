from typing import Any

VALIDITY: tuple[str, ...]
BOOLEANS: tuple[str, ...]

def pack_bitmaps(chunk: dict[str, Any]) -> dict[str, Any]: ...
