from libc.stdint cimport uint32_t

# For the other extension modules: the CRC-32C set up by this module's import.
cdef uint32_t crc32c_update(uint32_t crc, const void *data, size_t length) noexcept nogil
cdef uint32_t crc32_update(uint32_t crc, const void *data, size_t length) noexcept nogil
