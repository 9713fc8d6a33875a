# cython: language_level=3
"""libzstd's decompression called from C, without the GIL.

python-zstandard, the zstd library kcodec uses, bundles libzstd in two backends: a C
extension, whose functions are reached through Python calls only, and a CFFI one, whose
library object gives the addresses of libzstd's C functions. Through those, small zstd
batches are decompressed in the columnar decoder's passes without the GIL, with the batches
queued around them, as small LZ4 and snappy batches are, rather than a Python call each that
hands the GIL over (kcodec._columns). Both backends come with the same python-zstandard
(their libzstd versions are checked to be the same), so a frame is decided alike by either;
without cffi installed, or should the functions not be found, every zstd frame takes the
ordinary path through the C extension.
"""
from libc.stdint cimport uint8_t, uintptr_t

from kcodec._spares cimport SpareContexts, discard_spares, keep_spare, take_spare

ctypedef void *(*_create_fn)() noexcept nogil
ctypedef size_t (*_free_fn)(void *context) noexcept nogil
ctypedef size_t (*_decompress_fn)(void *context, void *out, size_t capacity,
                                  const void *frame, size_t n) noexcept nogil
ctypedef unsigned (*_is_error_fn)(size_t result) noexcept nogil

cdef _create_fn _create = NULL
cdef _free_fn _free = NULL
cdef _decompress_fn _decompress = NULL
cdef _is_error_fn _is_error = NULL
cdef bint _looked_up = False


cdef bint zstd_callable() except -1:
    global _looked_up
    if not _looked_up:
        _looked_up = True
        _look_up()
    return _decompress != NULL


cdef int _look_up() except -1:
    """Take the functions' addresses from python-zstandard's CFFI backend, if it loads."""
    global _create, _free, _decompress, _is_error
    try:
        import zstandard
        from zstandard import _cffi
    except (ImportError, OSError):   # (cffi not installed, or the backend not loadable)
        return 0
    cdef uintptr_t create, free, is_error, decompress
    ffi, lib = _cffi.ffi, _cffi.lib
    try:   # (any surprise in either backend leaves every frame to the ordinary path)
        major, minor, release = zstandard.ZSTD_VERSION
        if lib.ZSTD_versionNumber() != major * 10000 + minor * 100 + release:
            return 0
        create = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_createDCtx")))
        free = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_freeDCtx")))
        is_error = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_isError")))
        decompress = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_decompressDCtx")))
    except (AttributeError, TypeError, ValueError):
        return 0
    _create, _free, _is_error = <_create_fn>create, <_free_fn>free, <_is_error_fn>is_error
    _decompress = <_decompress_fn>decompress   # (last: it tells they are all there)
    return 0


cdef SpareContexts _spares   # (kcodec/_spares.pxd)


cdef void *zstd_context() noexcept:
    cdef void *context = take_spare(&_spares)
    return context if context != NULL else _create()


cdef void zstd_give_back(void *context) noexcept:
    keep_spare(&_spares, context, _discard)


cdef void _discard(void *context) noexcept:
    _free(context)


cdef Py_ssize_t zstd_decompress(void *context, uint8_t *out, size_t capacity,
                                const uint8_t *frame, size_t n) noexcept nogil:
    cdef size_t result = _decompress(context, out, capacity, frame, n)
    return -1 if _is_error(result) else <Py_ssize_t>result


def available() -> bool:
    """Whether small zstd batches are decompressed without the GIL (python-zstandard's CFFI
    backend loads, which needs cffi)."""
    return zstd_callable()


cdef void zstd_release_spares() noexcept:
    discard_spares(&_spares, _discard)
