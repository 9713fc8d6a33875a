"""Helper threads for decoding groups of batches in parallel, kept from call to call.

Starting threads costs far more than handing work to running ones (about 0.8 ms for an
executor of two against 0.2 ms, measured on a 2-core virtual machine: a fifth of decoding
100 000 small records). The calling thread works too: every participant takes the next item
in order, so a helper that wakes late costs nothing but its share.

A helper serves one call at a time: a call takes idle helpers (starting more when there are
too few) and gives them back, so threads that call at once never wait on each other's
helpers. Callers and helpers signal each other through kcodec._handoff, whose waiters spin
a moment before they sleep: a helper that has just finished picks up the next call's work
at once, and a caller whose helper finishes within a few milliseconds sees it at once.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from kcodec._handoff import Signal, serve

T = TypeVar("T")
R = TypeVar("R")

# A helper spins this long for its next job before it sleeps: calls made one after another
# (a stream's windows, a loop over fetched data) find it awake. Only as many helpers as
# there are cores besides the caller's spin; any started after them sleep at once.
IDLE_SPIN = 200e-6
# A caller spins at most this long for its helpers to finish, when every participant has a
# core of its own (otherwise spinning would take a core a helper needs, and it sleeps at
# once).
JOIN_SPIN = 2e-3


def _available_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_CORES = _available_cores()


class _Helper:
    """A thread that runs the jobs posted to it, one at a time (kcodec._handoff.serve)."""

    def __init__(self, spin: float) -> None:
        self.posted = Signal()
        self.done = Signal()
        self.job: Callable[[], object] | None = None
        self.posted_before = 0   # posted's count before the job posted last,
        self.done_before = 0     # and done's
        self.failure: BaseException | None = None
        # (the count is read here, not by the thread: a job may be posted before it runs)
        threading.Thread(target=serve, args=(self.posted, self.done, self._run_posted, spin,
                                             self.posted.count),
                         name="kcodec-decode", daemon=True).start()

    def _run_posted(self) -> None:
        job, self.job = self.job, None
        try:
            if job is not None:
                job()
        except BaseException as exc:   # (run_all's jobs keep their own): raised by join
            self.failure = exc

    def post(self, job: Callable[[], object]) -> None:
        # in this order, so that :meth:`join` knows whether the job was posted wherever a
        # signal's exception (Ctrl-C) stops this: only notify() posts it
        self.job = job
        self.posted_before = self.posted.count
        self.done_before = self.done.count
        self.posted.notify()

    def join(self, spin: float) -> None:
        """Wait until the job posted last is done (at once if its posting was cut short);
        raise what it raised."""
        if self.posted.count != self.posted_before:
            self.done.wait_past(self.done_before, spin)
        failure, self.failure = self.failure, None
        if failure is not None:
            raise failure


_lock = threading.Lock()
_idle: list[_Helper] = []
_started = 0   # helpers started in this process


def _take(count: int) -> list[_Helper]:
    """``count`` helpers for one call: idle ones, and new ones if there are too few."""
    global _started
    with _lock:
        taken = _idle[max(len(_idle) - count, 0):] if count else []
        del _idle[len(_idle) - len(taken):]
        first_new, _started = _started, _started + count - len(taken)
    return taken + [_Helper(IDLE_SPIN if first_new + i < _CORES - 1 else 0.0)
                    for i in range(count - len(taken))]


def _give_back(helpers: list[_Helper]) -> None:
    with _lock:
        _idle.extend(helpers)


def _forget_helpers() -> None:
    """After fork the child has none of the parent's threads (Spark forks its workers)."""
    global _lock, _idle, _started
    _lock = threading.Lock()
    _idle = []
    _started = 0


os.register_at_fork(after_in_child=_forget_helpers)


def run_all(work: Callable[[T], R], items: Sequence[T], threads: int) -> list[R]:
    """``[work(item) for item in items]`` on up to ``threads`` threads, the caller's among
    them. When items fail, the error of the first one (in order) is raised, once every item
    already started has finished; items not yet started then are skipped."""
    results, failure = _run(work, items, threads)
    if failure is not None:
        raise failure
    return results


def run_in_order(work: Callable[[T], R], items: Sequence[T], threads: int) -> Iterator[R]:
    """:func:`run_all`'s results, one by one: where an item failed, those of the items
    before it, then its error."""
    results, failure = _run(work, items, threads)
    yield from results
    if failure is not None:
        raise failure


def _run(work: Callable[[T], R], items: Sequence[T], threads: int,
         ) -> tuple[list[R], BaseException | None]:
    """The results of the items before the first that failed, and its error (or None)."""
    if threads <= 1 or len(items) <= 1:
        done: list[R] = []
        for item in items:
            try:
                done.append(work(item))
            except BaseException as exc:
                return done, exc
        return done, None
    results: list[R | None] = [None] * len(items)
    failures: dict[int, BaseException] = {}
    claims = itertools.count()   # next() on it is atomic: each index is taken once
    # the first item failed so far, or len(items): items from there on are not started,
    # every item before it is run (its result comes before the error); -1 stops all
    first_failed = [len(items)]
    noting = threading.Lock()

    def take_turns() -> None:
        for index in claims:
            if index >= first_failed[0]:
                return
            try:
                results[index] = work(items[index])
            except BaseException as exc:   # re-raised by the caller, below
                with noting:
                    failures[index] = exc
                    first_failed[0] = min(first_failed[0], index)

    helpers = _take(min(threads, len(items)) - 1)
    try:
        for helper in helpers:
            helper.post(take_turns)
        take_turns()
    except BaseException:   # a signal's (Ctrl-C) outside an item: stop the helpers
        first_failed[0] = -1
        raise
    finally:
        _finish(helpers, JOIN_SPIN if len(helpers) < _CORES else 0.0)
    first = first_failed[0]
    if first < len(items):
        return results[:first], failures[first]  # type: ignore[return-value]
    return results, None  # type: ignore[return-value]


def _finish(helpers: list[_Helper], spin: float) -> None:
    """Wait for each helper's job, then give the helpers back. A signal's exception
    (Ctrl-C) while waiting is raised once all are done: a helper given back while its job
    still ran would take the next call's work as done, and write into what it gave out."""
    interrupted: BaseException | None = None
    for helper in helpers:
        while True:
            try:   # (take_turns keeps every failure: a join raises no other)
                helper.join(spin)
                break
            except BaseException as exc:
                interrupted = interrupted or exc
    _give_back(helpers)
    if interrupted is not None:
        raise interrupted
