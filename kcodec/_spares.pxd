# Decompression contexts of a C library (libzstd's, zlib's) kept from decode to decode, up
# to SPARE_CONTEXTS: creating one costs about as much as decoding a small batch. Used with
# the GIL held, which keeps the pool's updates whole.

cdef enum:
    SPARE_CONTEXTS = 8

cdef struct SpareContexts:
    void *kept[SPARE_CONTEXTS]
    int n

# frees a context for good
ctypedef void (*discard_fn)(void *context) noexcept


cdef inline void *take_spare(SpareContexts *spares) noexcept:
    """A kept context, or NULL when none is kept."""
    if spares.n == 0:
        return NULL
    spares.n -= 1
    return spares.kept[spares.n]


cdef inline void keep_spare(SpareContexts *spares, void *context, discard_fn discard) noexcept:
    """Keep ``context`` (NULL: nothing), or discard it when the pool is full."""
    if context == NULL:
        return
    if spares.n < SPARE_CONTEXTS:
        spares.kept[spares.n] = context
        spares.n += 1
    else:
        discard(context)


cdef inline void discard_spares(SpareContexts *spares, discard_fn discard) noexcept:
    """Discard every kept context."""
    while spares.n:
        spares.n -= 1
        discard(spares.kept[spares.n])
