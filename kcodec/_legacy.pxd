from kcodec._record cimport InputBuffer

cdef object make_legacy_batch(InputBuffer buf, Py_ssize_t position, Py_ssize_t size,
                              Py_ssize_t max_decompressed_size, bint validate_crc)
