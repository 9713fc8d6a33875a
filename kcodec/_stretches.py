"""Decoding a buffer of log entries on several threads, each framing its own stretch of it.

Framing finds each entry where the one before ends, so one thread framing a log of small
batches for the others leaves them waiting (a quarter of decoding single-record batches on
two threads). Here each thread takes a stretch of the input's bytes, finds where an entry
starts in it (kcodec._cuts: a batch or legacy message whose CRC matches) and frames and
decodes from there to the next stretch. A stretch's work is kept only if the stretch
before it, itself kept, ended exactly where it started: bytes that merely look like an
entry (a batch inside a value) can cost work, never change what is decoded. The input is
taken in rounds of about as many records as a round should give, stretch by stretch in
order; a round whose stretches do not join ends where the last one kept ends, and the
next starts there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from kcodec._batch import EntryReader
from kcodec._cuts import entry_sizes, entry_start_in
from kcodec._groups import entry_windows
from kcodec._workers import run_all

if TYPE_CHECKING:
    from typing_extensions import Buffer

E = TypeVar("E")
R = TypeVar("R")

# entries whose headers say how many bytes a record takes, before a round is planned
SAMPLED_ENTRIES = 64


@dataclass
class _Stretch(Generic[R]):
    start: int                 # where its first entry starts; -1: none found
    stop: int                  # no entry starting here or later is its
    end: int = -1              # where its entries end: stop or past it, else where the
                               # input ends or it was cut short
    cut_short: bool = False    # whether it stopped at as many windows as it may decode
    outputs: list[R] = field(default_factory=list)
    error: Exception | None = None   # what decoding it met, after its outputs


def decode_stretches(data: Buffer, size: int,
                     frame: Callable[[int, int], tuple[EntryReader, Iterator[E]]],
                     decode: Callable[[list[E]], R],
                     rest: Callable[[int], Iterator[R]], threads: int, window_records: int,
                     round_records: int, min_stretch_records: int,
                     min_entries: int = 0) -> Iterator[R]:
    """What ``decode`` makes of each window of about ``window_records`` records of the
    entries ``frame(start, stop)`` reads from ``data`` (``size`` bytes), in order: in
    rounds of about ``round_records`` records, each cut into stretches of
    ``min_stretch_records`` records at least, on up to ``threads`` threads. From where
    the input holds magic-3 batches, or too little is left for two stretches (or for
    ``min_entries`` entries), what ``rest(position)`` yields."""

    def run(stretch: _Stretch[R], first: bool, most_windows: int) -> _Stretch[R]:
        if not first:
            stretch.start = entry_start_in(data, stretch.start, stretch.stop)
            if stretch.start < 0:
                return stretch
        reader, entries = frame(stretch.start, stretch.stop)
        try:
            for window in entry_windows(entries, window_records):
                stretch.outputs.append(decode(window))
                if len(stretch.outputs) == most_windows:
                    stretch.cut_short = True
                    break
        except Exception as exc:   # raised by the caller, if the stretch is kept
            stretch.error = exc
        stretch.end = reader.valid_bytes
        return stretch

    position = 0
    while position < size:
        sizes = entry_sizes(data, position, SAMPLED_ENTRIES)
        if sizes is None:
            yield from rest(position)
            return
        per_entry, records_an_entry = sizes
        per_record = per_entry / records_an_entry
        end = min(size, position + max(int(round_records * per_record), 1))
        # (each stretch of one byte at least: the first then reads an entry, or fails)
        parts = min(threads, end - position,
                    int((end - position) / per_record) // max(min_stretch_records, 1))
        if parts < 2 or (size - position) / per_entry < min_entries:
            yield from rest(position)
            return
        # a stretch may decode twice its share, should the sampled entries mislead
        most_windows = 2 * -(-round_records // (parts * window_records))
        cuts = [position + (end - position) * i // parts for i in range(parts)] + [end]
        stretches = [_Stretch[R](cuts[i], cuts[i + 1]) for i in range(parts)]
        for stretch in run_all(lambda i: run(stretches[i], i == 0, most_windows), range(parts),
                               parts):
            if stretch.start < 0:
                continue   # none started in it: the next may start where the last kept ends
            if stretch.start != position:
                break
            yield from stretch.outputs
            if stretch.error is not None:
                raise stretch.error
            position = stretch.end
            if stretch.cut_short:
                break
            if position < stretch.stop:
                return   # the input ended (in an entry cut short)
