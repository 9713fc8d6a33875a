from libc.stdint cimport uint8_t

from kcodec._scratch cimport ScratchBuffer


# Called without the GIL after each block of a frame is decoded, with the sink's data and
# its length so far; a nonzero return stops the frame (lz4_frame_with_hook returns 1).
ctypedef int (*block_hook)(void *context, const uint8_t *data, Py_ssize_t length) noexcept nogil

cdef int lz4_frame_with_hook(const uint8_t *p, Py_ssize_t n, Py_ssize_t limit,
                             ScratchBuffer sink, block_hook hook, void *context) except -1
