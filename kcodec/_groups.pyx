# cython: language_level=3, boundscheck=False, wraparound=False
"""How the entries of a log are cut for decoding: into groups for threads and chunks of
about equal record counts (``entry_groups``), into windows read as a stream needs them
(``entry_windows``), and what share of their bytes binary views cannot point into
(``entry_totals``). A legacy wrapper's record count is known only once it is decompressed,
so it is estimated from the offsets it spans."""
from libc.stdint cimport int64_t, uint64_t

from kcodec._batch cimport BatchRun, RecordBatch, last_offset_of
from kcodec._layout cimport ATTR_CODEC
from kcodec._legacy cimport LegacyMessage, LegacyRun, shallow_message

import numpy

from kcodec.errors import KcodecError


cdef enum:
    # a legacy wrapper's records per byte at most, as its offsets suggest them: LZ4 and
    # gzip cannot pack a message of 26 or more bytes into less than 1/40 of a byte
    WRAPPER_RECORDS_PER_BYTE = 40


cdef Py_ssize_t _records_of(object entry, int64_t *last, bint known, int64_t previous,
                            bint *guessed):
    """The records of one entry, as _entry_records counts them (0: a wrapper whose offsets
    say nothing); ``last`` is set to its last offset, ``previous`` is the entry before's
    (``known``: there is one), ``guessed`` whether the count is a wrapper's, guessed from
    its offsets."""
    cdef const LegacyMessage *m
    guessed[0] = False
    if type(entry) is RecordBatch:
        last[0] = last_offset_of(<RecordBatch>entry)
        return max(<Py_ssize_t>(<RecordBatch>entry).record_count, 1)
    if type(entry) is BatchRun:
        last[0] = (<BatchRun>entry).batches[(<BatchRun>entry).n - 1].last_offset
        return (<BatchRun>entry).records
    if type(entry) is LegacyRun:
        last[0] = (<LegacyRun>entry).messages[(<LegacyRun>entry).n - 1].offset
        return (<LegacyRun>entry).n
    m = shallow_message(entry)
    last[0] = m.offset
    if not m.attributes & ATTR_CODEC:
        return 1   # a plain message
    if known and last[0] > previous:
        guessed[0] = True
        return <Py_ssize_t>min(<uint64_t>last[0] - <uint64_t>previous,
                               <uint64_t>m.size * WRAPPER_RECORDS_PER_BYTE)
    return 0


cdef inline Py_ssize_t _as_the_others(Py_ssize_t guessed_records, Py_ssize_t guessed) noexcept:
    """What a wrapper whose offsets say nothing counts as: the guessed ones' average, or 1."""
    return max(guessed_records // guessed, 1) if guessed else 1


cdef Py_ssize_t[::1] _entry_records(list entries, bint *unknown=NULL):
    """The records of each entry: a batch's count (at least 1), a run's or a plain
    message's, and for a legacy wrapper (whose count is known once it is decompressed) the
    offsets it moves past the entry before it, a wrapper's offset being its last record's.
    Wrappers whose offsets say nothing (the first entry, or offsets that do not grow, as
    in a produce request) count as the others do on average, or as 1 record; ``unknown``
    is set when there is one but the first entry (whose count is then the others')."""
    cdef Py_ssize_t n = len(entries), i, guessed = 0, guessed_records = 0, unknowns = 0
    cdef Py_ssize_t[::1] records = numpy.ones(n, dtype=numpy.intp)
    cdef int64_t last = 0, previous = 0
    cdef bint guess
    for i in range(n):
        records[i] = _records_of(entries[i], &last, i > 0, previous, &guess)
        unknowns += records[i] == 0
        guessed += guess
        guessed_records += records[i] if guess else 0
        previous = last
    if unknowns:
        for i in range(n):
            if records[i] == 0:
                records[i] = _as_the_others(guessed_records, guessed)
    if unknown != NULL:
        unknown[0] = unknowns > (1 if guessed else 0)
    return records


def entry_windows(entries, Py_ssize_t records):
    """``entries`` (an iterable) in consecutive lists of ``records`` records each as
    _entry_records counts them (the last entry may pass it), read as they are needed: a
    stream's memory is bounded by its window, not its input. Should ``entries`` raise a
    KcodecError, the entries read before it come first, as a last window."""
    cdef list window = []
    cdef Py_ssize_t load = 0, unknown = 0, weight, guessed = 0, guessed_records = 0
    cdef int64_t last = 0, previous = 0
    cdef bint known = False, guess
    try:
        for entry in entries:
            weight = _records_of(entry, &last, known, previous, &guess)
            unknown += weight == 0
            guessed += guess
            guessed_records += weight if guess else 0
            previous, known = last, True
            window.append(entry)
            load += weight
            if load + unknown * _as_the_others(guessed_records, guessed) >= records:
                yield window
                window, load, unknown = [], 0, 0
    except KcodecError:
        if window:
            yield window
        raise
    if window:
        yield window


def entry_records(list entries):
    """The records of each entry, as _entry_records estimates them (a numpy array)."""
    return numpy.asarray(_entry_records(entries))


def entry_groups(list entries, Py_ssize_t parts, Py_ssize_t min_records=1):
    """At most ``parts`` contiguous groups of ``entries`` of about equal record counts (a
    legacy wrapper's as its offsets suggest, see _entry_records), and no more groups than
    give each ``min_records`` records, unless legacy wrappers leave the count unknown."""
    cdef Py_ssize_t n = len(entries), i, total = 0, load = 0
    cdef bint unknown = False
    if n == 0 or parts <= 1:
        return [list(entries)] if n else []
    cdef Py_ssize_t[::1] weights = _entry_records(entries, &unknown)
    for i in range(n):
        total += weights[i]
    if not unknown:
        parts = max(1, min(parts, total // max(min_records, 1)))
    cdef double target = <double>total / parts
    groups = [[]]
    for i in range(n):
        if load >= target and len(groups) < parts:
            groups.append([])
            load = 0
        groups[len(groups) - 1].append(entries[i])
        load += weights[i]
    return groups


def entry_totals(list entries):
    """(bytes of copied entries, bytes of all entries, records of the other entries) of
    ``entries``. Copied entries are those whose values binary views cannot point into:
    compressed batches, and legacy entries (their values are copied even as views)."""
    cdef Py_ssize_t copied = 0, total = 0, plain_records = 0, size, i
    cdef RecordBatch batch
    for entry in entries:
        if type(entry) is RecordBatch:
            batch = <RecordBatch>entry
            size = batch.size
            if batch.attributes & ATTR_CODEC == 0:
                plain_records += max(<Py_ssize_t>batch.record_count, 0)
            else:
                copied += size
        elif type(entry) is BatchRun:
            size = (<BatchRun>entry).size
            for i in range((<BatchRun>entry).n):
                if (<BatchRun>entry).batches[i].attributes & ATTR_CODEC == 0:
                    plain_records += (<BatchRun>entry).batches[i].record_count
                else:
                    copied += (<BatchRun>entry).batches[i].size
        elif type(entry) is LegacyRun:
            size = (<LegacyRun>entry).size
            copied += size
        else:
            size = shallow_message(entry).size
            copied += size
        total += size
    return copied, total, plain_records
