from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

_E = TypeVar("_E")

def select_entries(entries: Iterable[_E], include_control: bool,
                   aborted_transactions: Sequence[tuple[int, int]] | None, lo: int, hi: int,
                   earliest: int, validate_crc: bool) -> Iterator[_E]: ...
