# cython: language_level=3
"""Signals between the decoding threads: the waiter spins a moment without the GIL, then
sleeps.

A thread put to sleep on a lock takes long to wake on a virtual machine: on the 2-core VM
the benchmarks ran on, a caller that slept until its helper was done woke ~30 us after the
helper's signal, and handing work to a sleeping helper cost the caller ~10 us (the wake-up
crosses to the hypervisor). A waiter that spins sees the signal within a fraction of a
microsecond. Spinning is bounded (``spin`` seconds), after which the waiter sleeps on a
lock; it holds no GIL either way, so the thread it waits for can run Python meanwhile.

``serve`` is a helper thread's whole life: it signals that a job is done and starts
waiting for the next one in the same stretch without the GIL, so the caller that wakes to
the signal finds the GIL free rather than queueing for it behind the helper.
"""
cimport cython
from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_allocate_lock,
    PyThread_free_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)
from libc.stdint cimport int32_t, int64_t

from kcodec._native cimport (
    kc_atomic_add,
    kc_atomic_exchange,
    kc_atomic_load,
    kc_clock_ns,
    kc_cpu_relax,
)


cdef enum:
    CLOCK_EVERY = 64   # spins between readings of the clock


@cython.final
cdef class Signal:
    """A count that other threads raise (``notify``) and one thread at a time waits on
    (``wait_past``)."""
    cdef int64_t count
    cdef int32_t sleeping              # the waiter sleeps, or is about to, on ``wake``
    cdef PyThread_type_lock wake       # held while no wake-up is owed to the waiter

    def __cinit__(self):
        self.wake = PyThread_allocate_lock()
        if self.wake == NULL:
            raise MemoryError()
        PyThread_acquire_lock(self.wake, NOWAIT_LOCK)

    def __dealloc__(self):
        if self.wake != NULL:
            PyThread_free_lock(self.wake)

    @property
    def count(self) -> int:
        return kc_atomic_load(&self.count)

    def notify(self) -> None:
        """Raise the count by one, waking the waiter if it sleeps."""
        with nogil:
            self._notify()

    cdef void _notify(self) noexcept nogil:
        kc_atomic_add(&self.count, 1)
        # whoever takes ``sleeping`` from 1 to 0 owes the waiter its wake-up
        if kc_atomic_exchange(&self.sleeping, 0):
            PyThread_release_lock(self.wake)

    def wait_past(self, int64_t seen, double spin) -> int:
        """Wait, without the GIL, until the count is no longer ``seen``, spinning for up to
        ``spin`` seconds before sleeping; the count then."""
        cdef int64_t spin_ns = <int64_t>(spin * 1e9)
        with nogil:
            seen = self._wait_past(seen, spin_ns)
        return seen

    cdef int64_t _wait_past(self, int64_t seen, int64_t spin_ns) noexcept nogil:
        cdef int64_t now = kc_atomic_load(&self.count)
        cdef int64_t start, clock
        cdef int spins = 0
        if now != seen or spin_ns <= 0:
            return self._sleep_past(seen) if now == seen else now
        start = kc_clock_ns()
        while True:
            kc_cpu_relax()
            now = kc_atomic_load(&self.count)
            if now != seen:
                return now
            spins += 1
            if spins % CLOCK_EVERY == 0:
                clock = kc_clock_ns()
                if clock - start >= spin_ns or clock < start:   # (or the clock was set back)
                    return self._sleep_past(seen)

    cdef int64_t _sleep_past(self, int64_t seen) noexcept nogil:
        kc_atomic_exchange(&self.sleeping, 1)
        cdef int64_t now = kc_atomic_load(&self.count)   # a notify may have come meanwhile
        if now != seen and kc_atomic_exchange(&self.sleeping, 0):
            return now   # none is owed: the notify saw no sleeper
        # a notify after ``sleeping`` was set releases the lock (the one that saw it set)
        PyThread_acquire_lock(self.wake, WAIT_LOCK)
        return kc_atomic_load(&self.count)


def serve(Signal posted, Signal done, run_posted, double spin, int64_t seen) -> None:
    """A helper thread's loop: wait for ``posted`` to move past ``seen`` (its count when
    the helper was made: a job posted before the thread first runs is not missed), call
    ``run_posted()``, notify ``done``; forever. The notify and the wait for the next job
    share one stretch without the GIL. ``run_posted`` is not to raise: it keeps its job's
    failure for the caller."""
    cdef int64_t spin_ns = <int64_t>(spin * 1e9)
    cdef bint ran = False
    while True:
        with nogil:
            if ran:
                done._notify()
            seen = posted._wait_past(seen, spin_ns)
        ran = True
        run_posted()
