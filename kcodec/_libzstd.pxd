# libzstd's decompression, called from C without the GIL (_libzstd.pyx).
from libc.stdint cimport uint8_t

# Whether the functions below can be called (looked up on the first call, with the GIL).
cdef bint zstd_callable() except -1
# A decompression context (NULL when memory runs out), and giving one back when done with
# it (NULL: nothing), with the GIL held: contexts are kept for the next decodes.
cdef void *zstd_context() noexcept
cdef void zstd_give_back(void *context) noexcept
# The one frame of ``n`` bytes at ``frame`` decompressed into ``out``, at most ``capacity``
# bytes, by libzstd's streaming decoder writing straight into ``out``: how many, or -1 on
# any error (bytes past the frame, or a frame left unfinished, included).
cdef Py_ssize_t zstd_decompress(void *context, uint8_t *out, size_t capacity,
                                const uint8_t *frame, size_t n) noexcept nogil
# Free the contexts kept.
cdef void zstd_release_spares() noexcept
