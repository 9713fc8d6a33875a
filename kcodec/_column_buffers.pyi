from typing import Any

COLUMNS: tuple[tuple[str, type, int], ...]

def pooled_empty(n: int, dtype: Any) -> Any: ...
