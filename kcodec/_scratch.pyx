# cython: language_level=3
"""Reusable memory for building and decompressing batches.

Fresh memory costs a page fault per 4 KiB page on first touch, which on a virtual
machine can cost more than the work done in it. Builders and decompressed batches
therefore take their buffers from a small pool of spare ones (as the Java client's
BufferPool does) and give them back when done, so steady-state work stays on warm pages.
The pool is used with the GIL held. Its memory comes from malloc, as the columns' does, so
that a column's buffer can be lent to a decompressor as its sink (``ScratchBuffer.lend``).
"""
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


cdef Scratch _spares[SPARE_BUFFERS]
cdef int _n_spares = 0
cdef size_t _spare_bytes = 0


cdef Scratch scratch_take(size_t at_least) noexcept:
    """A buffer of at least ``at_least`` bytes: the most recently given back spare that it
    would leave less than half empty, else the most recently given back one that is large
    enough, else a new one. (Decodes of small and large batches in turn so each find spares
    of their own size, rather than the small ones taking and cutting the large ones.) data
    is NULL on failure."""
    global _n_spares, _spare_bytes
    cdef Scratch s
    cdef int i, found = -1
    cdef size_t want = max(at_least, <size_t>MIN_SIZE)
    for i in range(_n_spares - 1, -1, -1):
        if _spares[i].capacity >= want:
            if _spares[i].capacity // 2 < want:
                found = i
                break
            if found < 0:
                found = i
    if found >= 0:
        s = _spares[found]
        _spare_bytes -= s.capacity
        _n_spares -= 1
        memmove(&_spares[found], &_spares[found + 1], (_n_spares - found) * sizeof(Scratch))
        return s
    s.capacity = want
    s.data = <uint8_t *>malloc(s.capacity)
    return s


cdef void _free_oldest(int count) noexcept:
    """Free the ``count`` spares given back longest ago (the first ones)."""
    global _n_spares, _spare_bytes
    cdef int i
    if count == 0:
        return
    for i in range(count):
        _spare_bytes -= _spares[i].capacity
        free(_spares[i].data)
    _n_spares -= count
    memmove(&_spares[0], &_spares[count], _n_spares * sizeof(Scratch))


cdef void scratch_give_back(Scratch s) noexcept:
    """Keep s for reuse, making room by freeing the oldest spares (a quarter of the pool at
    once when it is full), so that the pool turns over to the buffers in use."""
    global _n_spares, _spare_bytes
    cdef int oldest = 0
    cdef size_t freed = 0
    if s.data == NULL:
        return
    if s.capacity > SPARE_MAX_SIZE:
        free(s.data)
        return
    if _n_spares == SPARE_BUFFERS:
        _free_oldest(SPARE_BUFFERS // 4)
    while _spare_bytes - freed + s.capacity > SPARE_TOTAL_BYTES:
        freed += _spares[oldest].capacity
        oldest += 1
    _free_oldest(oldest)
    _spares[_n_spares] = s
    _n_spares += 1
    _spare_bytes += s.capacity


cdef size_t scratch_release_spares() noexcept:
    """Free every spare buffer; returns how many bytes that released."""
    global _n_spares, _spare_bytes
    cdef size_t released = _spare_bytes
    while _n_spares:
        _n_spares -= 1
        free(_spares[_n_spares].data)
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


cdef class ScratchBuffer:
    """A growable byte buffer from the pool, filled by the decompressors.

    ``length`` bytes are in use. ``window`` hands out writable views of the space
    after them; a window must be used at once and dropped before the buffer grows
    again (this module's callers keep to that: the buffer is private to one call).
    """

    def __cinit__(self, size_t size_hint=0, *, bint lent=False):
        if lent:
            return   # no memory until lend() gives it some
        self.mem = scratch_take(size_hint)
        if self.mem.data == NULL:
            raise MemoryError()
        scratch_grow(&self.mem, size_hint)

    def __dealloc__(self):
        scratch_give_back(self.mem)

    cdef int reserve(self, size_t extra) except -1:
        return scratch_grow(&self.mem, <size_t>self.length + extra)

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
