# zlib's inflate, called from C without the GIL (_libz.pyx).
from libc.stdint cimport uint8_t

# Whether the functions below can be called (looked up on the first call, with the GIL).
cdef bint inflate_callable() except -1
# A gzip inflate stream (NULL when memory runs out), and giving one back when done with it
# (NULL: nothing), with the GIL held: streams are kept for the next decodes.
cdef void *inflate_context() noexcept
cdef void inflate_give_back(void *context) noexcept
# The gzip member of exactly ``n`` bytes at ``member`` inflated into ``out``, at most
# ``capacity`` bytes: how many, or -1 on any error (bytes after the member and not enough
# room included).
cdef Py_ssize_t inflate_member(void *context, uint8_t *out, size_t capacity,
                               const uint8_t *member, size_t n) noexcept nogil
# Free the streams kept.
cdef void inflate_release_spares() noexcept
