from kcodec._native cimport kc_buf, kc_columns


# The column buffers of a decode (kc_columns), in one order: their names, numpy types and
# groups (see _column_buffers.pyx), and the pool of spares they are taken from and given
# back to. Used with the GIL held, but for buffers().
cdef enum:
    N_COLUMNS = 24
    TIMESTAMP_TYPE = 2   # their places in that order
    KEY_DATA = 4
    VALUE_DATA = 7
    SPARE_TOTAL_BYTES = 512 * 1024 * 1024   # what the pool keeps at most


cdef void buffers(kc_columns *c, kc_buf **out) noexcept nogil
cdef bint in_layout(kc_columns *c, int i) noexcept
cdef size_t item_size(kc_columns *c, int i) noexcept
cdef bint is_offsets(int i) noexcept
cdef void adopt(kc_buf *b, size_t want, bint guessed=*) noexcept
cdef size_t release_column_spares() noexcept
cdef dict take_columns(kc_columns *c)


cdef inline bint is_data(int i) noexcept:
    """Column i holds key or value bytes (with views, only the few copied ones)."""
    return i == KEY_DATA or i == VALUE_DATA
