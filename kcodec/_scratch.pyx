# cython: language_level=3
"""Reusable memory for building and decompressing batches.

Fresh memory costs a page fault per 4 KiB page on first touch, which on a virtual
machine can cost more than the work done in it. Builders and decompressed batches
therefore take their buffers from a small pool of spare ones (as the Java client's
BufferPool does) and give them back when done, so steady-state work stays on warm pages.
The pool is used with the GIL held. Its memory comes from malloc, as the columns' does, so
that a column's buffer can be lent to a decompressor as its sink (``ScratchBuffer.lend``).
"""
cimport cython
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES, PyBUF_WRITABLE
from cpython.memoryview cimport PyMemoryView_FromObject
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    int PyBUF_WRITE


cdef enum:
    # Buffers kept for reuse: enough for the decompressed batches that binary-view Arrow
    # columns keep alive (one per batch) to come back as warm pages for the next decode,
    # up to the bytes bound below even for batches of ~256 KiB (1000 of 100-byte records)
    SPARE_BUFFERS = 1024
    SPARE_MAX_SIZE = 16 * 1024 * 1024   # ... each no larger than this
    SPARE_TOTAL_BYTES = 256 * 1024 * 1024
    MIN_SIZE = 16 * 1024
    # size classes: spares of [2^k, 2^(k+1)) bytes are class k (SPARE_MAX_SIZE is 2^24)
    CLASSES = 25


cdef struct Spare:
    Scratch s
    unsigned long long given_back   # when: a count of spares given back


# The spares by size class, each class's in the order they were given back. Kept by class,
# a request looks only where a spare that fits it can be: searching one list of all
# spares, each small batch's request had walked all of them when the pool held large ones
# (views of 10-record snappy batches: 16 ms for 100 000 records, against 10.5 ms).
cdef Spare _pool[CLASSES][SPARE_BUFFERS]
cdef int _in_class[CLASSES]
cdef int _n_spares = 0
cdef size_t _spare_bytes = 0
cdef unsigned long long _given_back = 0


cdef inline int _size_class(size_t n) noexcept:
    """floor(log2(n)), for n >= 1 (0 for 0)."""
    cdef int k = 0
    while n > 1:
        n >>= 1
        k += 1
    return k


cdef Scratch _remove(int k, int i) noexcept:
    """Take spare i of class k out of the pool."""
    global _n_spares, _spare_bytes
    cdef Scratch s = _pool[k][i].s
    _in_class[k] -= 1
    memmove(&_pool[k][i], &_pool[k][i + 1], (_in_class[k] - i) * sizeof(Spare))
    _n_spares -= 1
    _spare_bytes -= s.capacity
    return s


cdef inline bint _newer(int k, int i, int best_k, int best_i) noexcept:
    return best_k < 0 or _pool[k][i].given_back > _pool[best_k][best_i].given_back


cdef Scratch scratch_take(size_t at_least) noexcept:
    """A buffer of at least ``at_least`` bytes: the most recently given back spare that it
    would leave less than half empty, else the most recently given back one that is large
    enough, else a new one. (Decodes of small and large batches in turn so each find spares
    of their own size, rather than the small ones taking and cutting the large ones.) data
    is NULL on failure."""
    cdef Scratch s
    cdef size_t want = max(at_least, <size_t>MIN_SIZE)
    cdef int c = _size_class(want), k, i, best_k = -1, best_i = -1
    # Left less than half empty: a spare of [want, 2 want) bytes, which is one of class c
    # holding want, or one of class c + 1 under 2 want (classes above hold 2 want or more).
    if c < CLASSES:
        for i in range(_in_class[c] - 1, -1, -1):
            if _pool[c][i].s.capacity >= want:
                best_k, best_i = c, i
                break
    if c + 1 < CLASSES:
        for i in range(_in_class[c + 1] - 1, -1, -1):
            if _pool[c + 1][i].s.capacity // 2 < want:
                if _newer(c + 1, i, best_k, best_i):
                    best_k, best_i = c + 1, i
                break
    # else large enough: the newest of any class above c (class c holds none that fit)
    if best_k < 0:
        for k in range(c + 1, CLASSES):
            if _in_class[k] and _newer(k, _in_class[k] - 1, best_k, best_i):
                best_k, best_i = k, _in_class[k] - 1
    if best_k >= 0:
        return _remove(best_k, best_i)
    s.capacity = want
    s.data = <uint8_t *>malloc(s.capacity)
    return s


cdef void _free_oldest(int count) noexcept:
    """Free the ``count`` spares given back longest ago."""
    cdef int k, oldest, n
    for n in range(min(count, _n_spares)):
        oldest = -1
        for k in range(CLASSES):
            if _in_class[k] and (oldest < 0 or
                                 _pool[k][0].given_back < _pool[oldest][0].given_back):
                oldest = k
        free(_remove(oldest, 0).data)


cdef void scratch_give_back(Scratch s) noexcept:
    """Keep s for reuse, making room by freeing the oldest spares (a quarter of the pool at
    once when it is full), so that the pool turns over to the buffers in use."""
    global _n_spares, _spare_bytes, _given_back
    if s.data == NULL:
        return
    if s.capacity > SPARE_MAX_SIZE:
        free(s.data)
        return
    if _n_spares == SPARE_BUFFERS:
        _free_oldest(SPARE_BUFFERS // 4)
    while _spare_bytes + s.capacity > SPARE_TOTAL_BYTES:
        _free_oldest(1)
    cdef int k = _size_class(s.capacity)
    _given_back += 1
    _pool[k][_in_class[k]].s = s
    _pool[k][_in_class[k]].given_back = _given_back
    _in_class[k] += 1
    _n_spares += 1
    _spare_bytes += s.capacity


cdef size_t scratch_release_spares() noexcept:
    """Free every spare buffer; returns how many bytes that released."""
    global _n_spares, _spare_bytes
    cdef size_t released = _spare_bytes
    cdef int k, i
    for k in range(CLASSES):
        for i in range(_in_class[k]):
            free(_pool[k][i].s.data)
        _in_class[k] = 0
    _n_spares = 0
    _spare_bytes = 0
    return released


cdef int scratch_resize(Scratch *s, size_t at_least) noexcept nogil:
    """Grow s to hold at least ``at_least`` bytes (geometrically), keeping its content; -1
    when out of memory (s unchanged)."""
    if at_least <= s.capacity:
        return 0
    cdef size_t capacity = max(at_least, 2 * s.capacity)
    cdef uint8_t *grown = <uint8_t *>realloc(s.data, capacity)
    if grown == NULL:
        return -1
    s.data = grown
    s.capacity = capacity
    return 0


cdef int scratch_grow(Scratch *s, size_t at_least) except -1:
    """scratch_resize, raising MemoryError when out of memory."""
    if scratch_resize(s, at_least) < 0:
        raise MemoryError()
    return 0


@cython.final
cdef class LentMemory:
    """Memory that views handed to Python code outside kcodec (a plugin) point into. While
    its owner (a builder, a ScratchBuffer) has it, ``data`` is the owner's; an owner done
    with it, or moving it, while views are alive gives it to this object (``kept``), which
    frees it when the last view goes. So a view a plugin keeps never points at freed or
    reused memory; what is written through it after the call is lost."""

    def __dealloc__(self):
        scratch_give_back(self.kept)


@cython.final
@cython.no_gc   # (its one reference, a LentMemory, holds none: a cleared ``memory`` would
                # leave __releasebuffer__ nothing to count down when a cycle is collected)
cdef class _LentView:
    """One range of a LentMemory, exported once: as the memoryview that lend_view() makes
    (so the view's own ``obj`` cannot make another after the memory has moved on)."""
    cdef LentMemory memory
    cdef Py_ssize_t offset, size
    cdef bint writable, exported

    def __getbuffer__(self, Py_buffer *view, int flags):
        # (filled here as PyBuffer_FillInfo would, which would also take a reference to
        # ``self`` over the one Cython set up, never dropped)
        if self.exported:
            raise BufferError("a view kcodec lends is exported once")
        if flags & PyBUF_WRITABLE and not self.writable:
            raise BufferError("a view kcodec lends read-only is not writable")
        view.obj = self
        view.buf = <char *>self.memory.data + self.offset
        view.len = self.size
        view.readonly = not self.writable
        view.itemsize = 1
        view.format = <char *>b"B" if flags & PyBUF_FORMAT else NULL
        view.ndim = 1
        view.shape = &view.len if flags & PyBUF_ND else NULL
        view.strides = &view.itemsize if (flags & PyBUF_STRIDES) == PyBUF_STRIDES else NULL
        view.suboffsets = NULL
        view.internal = NULL
        self.exported = True
        self.memory.exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self.memory.exports -= 1


cdef LentMemory lend_memory(uint8_t *data):
    """A LentMemory over ``data``, which its caller still owns."""
    cdef LentMemory memory = LentMemory.__new__(LentMemory)
    memory.data = data
    return memory


cdef object lend_view(LentMemory memory, Py_ssize_t offset, Py_ssize_t size, bint writable):
    """A memoryview of ``size`` bytes at ``offset`` in ``memory``."""
    cdef _LentView lent = _LentView.__new__(_LentView)
    lent.memory, lent.offset, lent.size, lent.writable = memory, offset, size, writable
    return PyMemoryView_FromObject(lent)


cdef bint keep_if_viewed(LentMemory memory, Scratch s) noexcept:
    """Whether views of ``memory`` are alive, in which case ``s`` (the allocation they point
    into) becomes ``memory``'s; else the caller keeps s."""
    if memory.exports == 0:
        return False
    memory.kept = s
    return True


@cython.no_gc   # (its one reference, a LentMemory, holds none: clearing it would give back
                # memory that windows still view)
cdef class ScratchBuffer:
    """A growable byte buffer from the pool, filled by the decompressors.

    ``length`` bytes are in use. ``window`` hands out writable views of the space
    after them; a window must be used at once and dropped before the buffer grows
    again (this module's callers keep to that: the buffer is private to one call).
    ``lent_window`` hands out views that are safe to keep (for plugins); ``let_go``, before
    the buffer goes back to code that works on ``mem`` directly, moves the buffer to new
    memory if any of them is alive.
    """

    def __cinit__(self, size_t size_hint=0, *, bint lent=False):
        if lent:
            return   # no memory until lend() gives it some
        self.mem = scratch_take(size_hint)
        if self.mem.data == NULL:
            raise MemoryError()
        scratch_grow(&self.mem, size_hint)

    def __dealloc__(self):
        if self.viewed is None or not keep_if_viewed(self.viewed, self.mem):
            scratch_give_back(self.mem)

    cdef int reserve(self, size_t extra) except -1:
        if self.viewed is not None and <size_t>self.length + extra > self.mem.capacity:
            self.let_go()
        return scratch_grow(&self.mem, <size_t>self.length + extra)

    def lent_window(self, Py_ssize_t size):
        """A writable view of ``size`` bytes after the used ones (the buffer grows first),
        safe to keep: if the buffer moves while the view is alive, the view keeps the old
        memory."""
        self.reserve(size)
        if self.viewed is None:
            self.viewed = lend_memory(self.mem.data)
        return lend_view(self.viewed, self.length, size, True)

    def let_go(self):
        """End the lent windows' hold: if any is alive, the used bytes move to new memory
        and the old stays with the windows."""
        if self.viewed is None:
            return
        cdef Scratch moved
        if self.viewed.exports:
            moved = scratch_take(self.mem.capacity)
            if moved.data == NULL:
                raise MemoryError()
            memcpy(moved.data, self.mem.data, self.length)
            keep_if_viewed(self.viewed, self.mem)
            self.mem = moved
        self.viewed = None

    cdef void lend(self, uint8_t *data, size_t capacity, Py_ssize_t length) noexcept:
        """Work in the caller's memory (from malloc, its first ``length`` bytes in use), in
        a buffer made with ``lent=True``; ``take_back`` returns it, perhaps moved by growth.
        Its length counts the lent bytes in use: a frame decoded into it leaves them out of
        its limit through BlockHook.base."""
        self.mem.data = data
        self.mem.capacity = capacity
        self.length = length

    cdef Scratch take_back(self) noexcept:
        cdef Scratch lent = self.mem
        self.mem.data = NULL
        self.mem.capacity = 0
        self.length = 0
        return lent

    cdef int shrink(self) except -1:
        """Give back most of the room past the used bytes (for a buffer kept a while, not
        reused): what is left, an eighth more and 4 KiB, lets it serve a buffer of about
        that size again once it comes back to the pool."""
        return self.cut(<size_t>self.length + <size_t>self.length // 8 + 4096)

    cdef int cut(self, size_t capacity) except -1:
        """Cut the buffer's room to ``capacity`` bytes (not below its used bytes), wherever
        that moves it."""
        cdef uint8_t *shrunk
        capacity = max(capacity, <size_t>self.length, 1)
        if capacity < self.mem.capacity:
            shrunk = <uint8_t *>realloc(self.mem.data, capacity)
            if shrunk == NULL:
                raise MemoryError()
            self.mem.data = shrunk
            self.mem.capacity = capacity
        return 0

    def __len__(self):
        return self.length

    def window(self, Py_ssize_t size):
        """A writable view of ``size`` bytes after the used ones (the buffer grows first)."""
        self.reserve(size)
        return PyMemoryView_FromMemory(<char *>self.mem.data + self.length, size, PyBUF_WRITE)

    def commit(self, Py_ssize_t size):
        """Count ``size`` more bytes (written through the last window) as used."""
        if size < 0 or <size_t>(self.length + size) > self.mem.capacity:
            raise ValueError("commit past the window")
        self.length += size

    def write(self, data):
        """Append a copy of ``data``."""
        cdef const unsigned char[::1] view = data
        cdef Py_ssize_t n = view.shape[0]
        self.reserve(n)
        if n:
            memcpy(self.mem.data + self.length, &view[0], n)
        self.length += n

    def tobytes(self):
        return (<char *>self.mem.data)[:self.length]
