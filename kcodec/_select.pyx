# cython: language_level=3
"""The entries of a log a consumer reads records from (``columnar.select_batches``), with
each batch's fields read as C fields: over a log of small batches, looking them up as
Python attributes cost more than decoding the records."""
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t

from kcodec._batch cimport (BatchRun, PlainBatch, RecordBatch, check_record_layout,
                            first_key_is_abort, last_offset_of, outside_ranges)
from kcodec._layout cimport ATTR_CODEC, ATTR_CONTROL, ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL
from kcodec._legacy cimport LegacyMessage, LegacyRun, shallow_message

from kcodec._legacy import LegacyBatch


cdef bint _any_in_range(BatchRun run, int64_t lo, int64_t hi, int64_t earliest,
                        int64_t *last) noexcept:
    """Whether any of ``run``'s batches is not wholly outside the ranges; ``last`` is set
    to the greatest last offset of those."""
    cdef bint found = False
    cdef const PlainBatch *b
    cdef Py_ssize_t i
    for i in range(run.n):
        b = &run.batches[i]
        if outside_ranges(b.base_offset, b.last_offset, b.max_timestamp, b.attributes, lo, hi,
                          earliest):
            continue
        if not found or b.last_offset > last[0]:
            last[0] = b.last_offset
        found = True
    return found


cdef bint _aborted(RecordBatch batch, set aborted_producers) except -1:
    """Whether a read_committed consumer skips ``batch`` as aborted data: a transactional
    batch of a producer (id 0 or more: Java's ``hasProducerId``) whose transaction aborted."""
    return (batch.attributes & ATTR_TRANSACTIONAL != 0 and batch.producer_id >= 0
            and batch.producer_id in aborted_producers)


cdef bint _legacy_outside(object entry, int64_t lo, int64_t hi, int64_t earliest) except -1:
    """Whether all of a legacy entry's (a LegacyBatch) records are outside the ranges, as
    far as its own fields tell. A message's offset and timestamp are its record's. A
    compressed wrapper's records end at its offset only in magic 1 and not at offset 0
    (old producers' wrappers, whose inner offsets stand as they are, as magic 0's always
    do), and are no later than its timestamp only where its magic-1 messages take it (log
    append time; a magic-0 message inside has -1); otherwise its records are filtered one
    by one as they are decoded."""
    cdef const LegacyMessage *m = shallow_message(entry)
    if not m.attributes & ATTR_CODEC:
        return (m.offset < lo or (m.offset >= hi and hi != INT64_MAX)
                or m.timestamp < earliest)
    if m.magic != 1:
        return False
    return ((m.offset != 0 and m.offset < lo)
            or (m.attributes & ATTR_LOG_APPEND_TIME != 0 and max(m.timestamp, -1) < earliest))


def select_entries(entries, bint include_control, aborted_transactions, int64_t lo,
                   int64_t hi, int64_t earliest, bint validate_crc):
    """Yield the entries a consumer reads from, as ``select_batches`` documents: records
    at offsets in [lo, hi) and timestamps from ``earliest`` on. With ``validate_crc``, the
    control batches and aborted transactional batches met are checked as they are met."""
    cdef list pending = sorted(aborted_transactions or [], key=lambda t: t[1])
    cdef Py_ssize_t next_pending = 0
    cdef set aborted_producers = set()
    cdef bint read_committed = aborted_transactions is not None
    cdef bint bounded = lo > INT64_MIN or hi < INT64_MAX or earliest > INT64_MIN
    cdef RecordBatch batch
    cdef int64_t last
    cdef bint outside
    for entry in entries:
        if type(entry) is RecordBatch:
            batch = <RecordBatch>entry
            last = last_offset_of(batch)
            outside = outside_ranges(batch.base_offset, last, batch.max_timestamp,
                                     batch.attributes, lo, hi, earliest)
            # a marker outside the ranges still ends its producer's transaction: the
            # ranges select records, not which transactions were aborted
            if outside and not (read_committed and batch.attributes & ATTR_CONTROL):
                continue
            while next_pending < len(pending) and pending[next_pending][1] <= last:
                aborted_producers.add(pending[next_pending][0])
                next_pending += 1
            # a consumer receives control and aborted batches, and checks them too
            if batch.attributes & ATTR_CONTROL:
                # read_committed, Java's consumer reads the first key of every control
                # batch of a producer it fetches: an ABORT there ends the producer's
                # transaction (outside the ranges, one that may end an aborted one is read)
                marks_end = read_committed and batch.producer_id >= 0 and (
                    not outside or batch.producer_id in aborted_producers)
                if validate_crc and (marks_end or not outside):
                    batch.ensure_valid()   # (one short record: checked again if decoded)
                if marks_end and first_key_is_abort(batch):
                    aborted_producers.discard(batch.producer_id)
                if outside:
                    continue
                if not include_control:
                    # Java's consumer goes through the records of those it does not skip
                    if not (read_committed and _aborted(batch, aborted_producers)):
                        check_record_layout(batch)
                    continue
                batch.records()   # control records returned: checked as the row reader's
            elif read_committed and _aborted(batch, aborted_producers):
                if validate_crc:
                    batch.ensure_valid()
                continue
            yield entry
        elif type(entry) is BatchRun:
            # batches neither control nor transactional: the decoder skips those
            # outside the ranges one by one, as above; the run is skipped if all are (its
            # batches are looked at only when ranges or aborted transactions need them)
            if (bounded or read_committed) and not _any_in_range(<BatchRun>entry, lo, hi,
                                                                 earliest, &last):
                continue
            while next_pending < len(pending) and pending[next_pending][1] <= last:
                aborted_producers.add(pending[next_pending][0])
                next_pending += 1
            yield entry
        elif type(entry) is LegacyRun:
            yield entry
        elif type(entry) is LegacyBatch:
            if bounded and _legacy_outside(entry, lo, hi, earliest):
                continue
            yield entry
        else:
            raise TypeError(f"expected the entries read_batches yields, not "
                            f"{type(entry).__name__}")
