# cython: language_level=3
"""libzstd's decompression called from C, without the GIL.

python-zstandard, the zstd library kcodec uses, bundles libzstd in two backends: a C
extension, whose functions are reached through Python calls only, and a CFFI one, whose
library object gives the addresses of libzstd's C functions. Through those, small zstd
batches are decompressed in the columnar decoder's passes without the GIL, with the batches
queued around them, as small LZ4 and snappy batches are, rather than a Python call each that
hands the GIL over (kcodec._columns), and a batch's frame of up to 4 MiB is decompressed in
one pass into the reader's own buffer (kcodec._frames.zstd_batch_with_hook). Both backends
come with the same python-zstandard (their libzstd versions are checked to be the same), so
a frame is decided alike by either; without cffi installed, or should the functions not be
found, every zstd frame takes the ordinary path through the C extension.

Frames are decoded as python-zstandard's decompressor decodes them, by libzstd's streaming
decoder given the whole frame, but writing straight into the caller's buffer (the decoder's
stable output buffer) rather than through a window of its own. Its one-call decoder
(ZSTD_decompressDCtx) would not do: it takes blocks that decompress to more than the
frame's block size, which the streaming decoder, and so Java's reader, refuses as corrupt.
The streaming decoder does hand a frame that states its content size (Java's producer's
frames state none) and fits what it is given to that one-call decoder, here as for
python-zstandard, so such frames too are decided alike.
"""
from libc.stdint cimport uint8_t, uintptr_t

from kcodec._spares cimport SpareContexts, discard_spares, keep_spare, take_spare

ctypedef struct _InBuffer:    # ZSTD_inBuffer
    const void *src
    size_t size
    size_t pos

ctypedef struct _OutBuffer:   # ZSTD_outBuffer
    void *dst
    size_t size
    size_t pos

ctypedef void *(*_create_fn)() noexcept nogil
ctypedef size_t (*_free_fn)(void *context) noexcept nogil
ctypedef size_t (*_set_parameter_fn)(void *context, int parameter, int value) noexcept nogil
ctypedef size_t (*_reset_fn)(void *context, int directive) noexcept nogil
ctypedef size_t (*_stream_fn)(void *context, _OutBuffer *output,
                              _InBuffer *input) noexcept nogil
ctypedef unsigned (*_is_error_fn)(size_t result) noexcept nogil

cdef enum:
    # zstd-jni's default window limit, as kcodec.codecs sets python-zstandard's
    WINDOW_LOG_MAX = 27

cdef _create_fn _create = NULL
cdef _free_fn _free = NULL
cdef _set_parameter_fn _set_parameter = NULL
cdef _reset_fn _reset = NULL
cdef _stream_fn _stream = NULL
cdef _is_error_fn _is_error = NULL
# libzstd's own values of the parameters and directive used (ZSTD_d_stableOutBuffer is one
# of its experimental parameters, so it is taken from the library, not written here)
cdef int _stable_output = 0, _window_log_max = 0, _reset_session = 0
cdef bint _looked_up = False


cdef bint zstd_callable() except -1:
    global _looked_up
    if not _looked_up:
        _looked_up = True
        _look_up()
    return _stream != NULL


cdef int _look_up() except -1:
    """Take the functions' addresses from python-zstandard's CFFI backend, if it loads."""
    global _create, _free, _set_parameter, _reset, _stream, _is_error
    global _stable_output, _window_log_max, _reset_session
    try:
        import zstandard
        from zstandard import _cffi
    except (ImportError, OSError):   # (cffi not installed, or the backend not loadable)
        return 0
    cdef uintptr_t create, free, set_parameter, reset, stream, is_error
    ffi, lib = _cffi.ffi, _cffi.lib
    try:   # (any surprise in either backend leaves every frame to the ordinary path)
        major, minor, release = zstandard.ZSTD_VERSION
        if lib.ZSTD_versionNumber() != major * 10000 + minor * 100 + release:
            return 0
        create = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_createDCtx")))
        free = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_freeDCtx")))
        set_parameter = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_DCtx_setParameter")))
        reset = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_DCtx_reset")))
        is_error = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_isError")))
        stream = int(ffi.cast("uintptr_t", ffi.addressof(lib, "ZSTD_decompressStream")))
        _stable_output = lib.ZSTD_d_stableOutBuffer
        _window_log_max = lib.ZSTD_d_windowLogMax
        _reset_session = lib.ZSTD_reset_session_only
    except (AttributeError, TypeError, ValueError):
        return 0
    _create, _free, _is_error = <_create_fn>create, <_free_fn>free, <_is_error_fn>is_error
    _set_parameter, _reset = <_set_parameter_fn>set_parameter, <_reset_fn>reset
    _stream = <_stream_fn>stream   # (last: it tells they are all there)
    return 0


cdef SpareContexts _spares   # (kcodec/_spares.pxd)


cdef void *zstd_context() noexcept:
    cdef void *context = take_spare(&_spares)
    if context != NULL:
        return context
    context = _create()
    if context != NULL and (_is_error(_set_parameter(context, _stable_output, 1)) or
                            _is_error(_set_parameter(context, _window_log_max,
                                                     WINDOW_LOG_MAX))):
        _free(context)
        return NULL
    return context


cdef void zstd_give_back(void *context) noexcept:
    keep_spare(&_spares, context, _discard)


cdef void _discard(void *context) noexcept:
    _free(context)


cdef Py_ssize_t zstd_decompress(void *context, uint8_t *out, size_t capacity,
                                const uint8_t *frame, size_t n) noexcept nogil:
    cdef _OutBuffer output
    cdef _InBuffer input
    output.dst, output.size, output.pos = out, capacity, 0
    input.src, input.size, input.pos = frame, n, 0
    if _is_error(_reset(context, _reset_session)):
        return -1
    cdef size_t left = _stream(context, &output, &input)
    if _is_error(left) or left != 0 or input.pos != n:
        return -1
    return <Py_ssize_t>output.pos


def available() -> bool:
    """Whether small zstd batches are decompressed without the GIL (python-zstandard's CFFI
    backend loads, which needs cffi)."""
    return zstd_callable()


cdef void zstd_release_spares() noexcept:
    discard_spares(&_spares, _discard)
