"""The helper threads that decode groups of batches: results in order, work shared with the
calling thread, the first failure (in order) raised, a fresh pool after fork, and the
signals they wait on (no wake-up lost, spinning or asleep)."""

from __future__ import annotations

import os
import select
import signal
import threading
import warnings
from typing import Any

import pytest

import kcodec
from kcodec._handoff import Signal
from kcodec._workers import run_all, run_in_order
from kcodec.errors import ChecksumError


def test_results_come_in_order_from_several_threads() -> None:
    both_running = threading.Barrier(2, timeout=10)
    names: set[str] = set()

    def work(item: int) -> int:
        if item < 2:
            both_running.wait()   # times out unless two items run at once
        names.add(threading.current_thread().name)
        return item * item

    assert run_all(work, list(range(10)), threads=2) == [i * i for i in range(10)]
    assert threading.current_thread().name in names and len(names) == 2


def test_one_thread_runs_in_the_caller() -> None:
    assert run_all(lambda _: threading.current_thread().name, [1, 2], threads=1) == [
        threading.current_thread().name] * 2


def test_the_first_failure_in_order_is_raised_after_the_results_before_it() -> None:
    def work(item: int) -> int:
        if item in (3, 5):
            raise ValueError(item)
        return item

    for threads in (1, 2, 4):
        with pytest.raises(ValueError) as caught:
            run_all(work, list(range(8)), threads)
        assert caught.value.args == (3,)
        got: list[int] = []
        with pytest.raises(ValueError) as caught:
            got.extend(run_in_order(work, list(range(8)), threads))
        assert got == [0, 1, 2] and caught.value.args == (3,)


def test_an_interrupt_leaves_the_helpers_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C just after a job is posted (here raised there once the helper is at work):
    the call waits for its helper before it raises, and gives it back idle, so the next
    call's results are whole (a helper given back still working took the next call's work
    as done)."""
    import kcodec._workers as workers
    monkeypatch.setattr(workers, "_idle", [])
    posted = workers._Helper.post
    helper_working, release = threading.Event(), threading.Event()

    def post_then_interrupt(helper: Any, job: Any) -> None:
        posted(helper, job)
        # (a helper that starts after the interrupt rightly runs no item: wait for it)
        assert helper_working.wait(10)
        threading.Timer(0.2, release.set).start()
        raise KeyboardInterrupt

    def work(item: int) -> int:
        if threading.current_thread().name == "kcodec-decode":
            helper_working.set()
            release.wait(10)   # the helper is still busy when the caller is interrupted
        return item * 3

    monkeypatch.setattr(workers._Helper, "post", post_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_all(work, list(range(6)), threads=2)
    monkeypatch.setattr(workers._Helper, "post", posted)
    assert release.is_set() and len(workers._idle) == 1
    for _ in range(20):
        assert run_all(lambda i: i * 3, list(range(6)), threads=2) == [i * 3 for i in range(6)]


def test_idle_helpers_are_taken_before_new_ones_start(monkeypatch: pytest.MonkeyPatch) -> None:
    import kcodec._workers as workers
    monkeypatch.setattr(workers, "_idle", [])
    monkeypatch.setattr(workers, "_started", 0)
    run_all(abs, list(range(8)), threads=3)   # two helpers
    run_all(abs, list(range(8)), threads=4)   # those two, and one more
    assert workers._started == 3 and len(workers._idle) == 3


def test_decoding_errors_name_the_first_bad_batch() -> None:
    batches = []
    for base in range(0, 400, 100):
        builder = kcodec.BatchBuilder(base_offset=base)
        for i in range(100):
            builder.append(b"v%d" % i, key=b"k")
        batches.append(bytearray(builder.build()))
    for damaged in (1, 3):
        batches[damaged][-1] ^= 1
    log = b"".join(batches)
    for threads in (1, 2):
        with pytest.raises(ChecksumError) as caught:
            kcodec.decode_columns(log, threads=threads)
        assert caught.value.position == len(batches[0])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_gets_its_own_helpers() -> None:
    """Spark forks its Python workers: a child must not wait on the parent's threads."""
    run_all(abs, [-1, -2], threads=2)   # the parent's pool exists
    reader, writer = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # fork with threads running
        child = os.fork()
    if child == 0:
        try:
            os.write(writer, repr(run_all(abs, [-1, -2, -3], threads=2)).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        answered = select.select([pipe], [], [], 60)[0]
        if not answered:
            os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        assert answered and pipe.read() == "[1, 2, 3]"


@pytest.mark.parametrize("spin", [0.0, 1e-6, 1e-3])
def test_signals_lose_no_wake_up(spin: float) -> None:
    """Two threads bat a count back and forth, each waiting for the other's notify: asleep
    at once (spin 0), after spinning a microsecond (racing the notify), or spinning."""
    ping, pong = Signal(), Signal()
    # (fewer where each wait spins a millisecond: on a loaded machine a spin that has no
    # core of its own takes many times that)
    rounds = 3000 if spin < 1e-3 else 300
    counts: list[int] = []

    def answer() -> None:
        seen = 0
        for _ in range(rounds):
            seen = ping.wait_past(seen, spin)
            pong.notify()

    def ask() -> None:
        seen = 0
        for _ in range(rounds):
            ping.notify()
            seen = pong.wait_past(seen, spin)
            counts.append(seen)

    # (in threads of their own: a lost wake-up fails the test instead of hanging it)
    players = [threading.Thread(target=play, daemon=True) for play in (answer, ask)]
    for player in players:
        player.start()
    for player in players:
        player.join(60)
    assert not any(player.is_alive() for player in players)
    assert counts == list(range(1, rounds + 1)) and ping.count == pong.count == rounds


def test_a_signal_already_past_returns_at_once() -> None:
    signal_ = Signal()
    signal_.notify()
    signal_.notify()
    assert signal_.wait_past(0, 0.0) == 2 and signal_.wait_past(1, 10.0) == 2


def test_a_helper_hands_back_what_its_job_raised_and_serves_on() -> None:
    from kcodec._workers import _Helper
    helper, ran = _Helper(0.0), []

    def fail() -> None:
        raise ValueError("job")

    helper.post(fail)
    with pytest.raises(ValueError, match="job"):
        helper.join(0.0)
    helper.post(lambda: ran.append(threading.current_thread().name))
    helper.join(1e-3)
    assert ran == ["kcodec-decode"]


def test_a_job_posted_before_its_helper_runs_is_not_missed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A new helper thread may first run after the caller has posted its job (here held
    back 50 ms, as a busy machine may hold it): it still runs the job."""
    import time

    import kcodec._workers as workers
    from kcodec._handoff import serve

    def late_serve(*args: Any) -> None:
        time.sleep(0.05)
        serve(*args)
    monkeypatch.setattr(workers, "serve", late_serve)
    monkeypatch.setattr(workers, "_idle", [])   # new helpers, not the ones running
    done: list[list[int]] = []
    caller = threading.Thread(target=lambda: done.append(run_all(lambda i: i * 2, range(4), 2)),
                              daemon=True)
    caller.start()
    caller.join(10)
    assert done == [[0, 2, 4, 6]]


def test_an_item_claimed_before_another_fails_is_still_run() -> None:
    """The thread that claimed item 0 is held just after claiming it (a trace hook), while
    item 1 fails on the other: item 0 is run all the same, and its result comes first."""
    import linecache
    import sys
    import time

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_name != "take_turns":
            return None

        def held(frame: Any, event: str, arg: Any) -> Any:
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            if event == "line" and frame.f_locals.get("index") == 0 and line.startswith("if index"):
                time.sleep(0.05)   # (the other thread takes item 1 meanwhile)
            return held
        return held

    def work(item: int) -> tuple[str, int]:
        if item == 1:
            raise ValueError("item 1")
        return ("result", item)

    got: list[tuple[str, int]] = []
    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        with pytest.raises(ValueError, match="item 1"):
            got.extend(run_in_order(work, [0, 1, 2, 3], 2))
    finally:
        sys.settrace(None)
        threading.settrace(None)
    assert got == [("result", 0)]
