# cython: language_level=3
"""zlib's inflate called from C, without the GIL.

Python's zlib module reaches zlib through Python calls only; the library it is linked with
also exports zlib's C functions, whose addresses ctypes finds in that module's shared
object (or, where the module is built into Python, among the program's symbols). Through
those, small gzip batches are inflated in the columnar decoder's passes without the GIL,
with the batches queued around them, as small LZ4, snappy and zstd batches are, rather
than a Python call each that hands the GIL over (kcodec._columns). The library found must
report the version the zlib module reports (``zlib.ZLIB_RUNTIME_VERSION``): the same zlib
then decides a member either way. Where none is found, every gzip batch takes the ordinary
path through the zlib module and cramjam.

zlib's stream structure is declared below as zlib's header declares it (an ABI zlib has
kept since 1.0), so no header is needed to build.
"""
from libc.limits cimport UINT_MAX
from libc.stdint cimport uint8_t, uintptr_t
from libc.stdlib cimport calloc, free

from kcodec._spares cimport SpareContexts, discard_spares, keep_spare, take_spare

ctypedef void *(*_alloc_fn)(void *opaque, unsigned items, unsigned size) noexcept nogil
ctypedef void (*_free_fn)(void *opaque, void *address) noexcept nogil

cdef struct _Stream:   # z_stream
    const uint8_t *next_in
    unsigned avail_in
    unsigned long total_in
    uint8_t *next_out
    unsigned avail_out
    unsigned long total_out
    const char *msg
    void *state
    _alloc_fn zalloc
    _free_fn zfree
    void *opaque
    int data_type
    unsigned long adler
    unsigned long reserved

ctypedef int (*_init_fn)(_Stream *stream, int window_bits, const char *version,
                         int stream_size) noexcept nogil
ctypedef int (*_stream_fn)(_Stream *stream) noexcept nogil
ctypedef int (*_inflate_fn)(_Stream *stream, int flush) noexcept nogil
ctypedef const char *(*_version_fn)() noexcept nogil

cdef enum:
    Z_OK = 0
    Z_STREAM_END = 1
    Z_FINISH = 4
    GZIP_WINDOW_BITS = 31   # a 32 KiB window, gzip framing only

cdef _init_fn _init = NULL
cdef _stream_fn _reset = NULL
cdef _stream_fn _end = NULL
cdef _inflate_fn _inflate = NULL
cdef const char *_version = NULL
cdef bint _looked_up = False


cdef bint inflate_callable() except -1:
    global _looked_up
    if not _looked_up:
        _looked_up = True
        _look_up()
    return _inflate != NULL


cdef int _look_up() except -1:
    """Take the functions' addresses from the zlib the zlib module is linked with."""
    global _init, _reset, _end, _inflate, _version
    try:
        import ctypes
        import zlib
    except ImportError:
        return 0
    # the module's shared object, or (a module built into Python) the program's symbols
    place = getattr(zlib, "__file__", None)
    cdef uintptr_t init, reset, end, inflate, version
    try:
        library = ctypes.CDLL(place)
        library.zlibVersion.restype = ctypes.c_char_p
        if library.zlibVersion().decode() != zlib.ZLIB_RUNTIME_VERSION:
            return 0
        init, reset, end, inflate, version = (
            ctypes.cast(getattr(library, name), ctypes.c_void_p).value
            for name in ("inflateInit2_", "inflateReset", "inflateEnd", "inflate",
                         "zlibVersion"))
    except (OSError, AttributeError, TypeError, UnicodeDecodeError):
        return 0
    _init, _reset, _end = <_init_fn>init, <_stream_fn>reset, <_stream_fn>end
    _version = (<_version_fn>version)()
    cdef _Stream *stream = _new_stream()   # (zlib checks the stream's size and version)
    if stream != NULL:
        _discard(stream)
        _inflate = <_inflate_fn>inflate   # (last: it tells they are all there)
    return 0


cdef _Stream *_new_stream() noexcept:
    """A stream set up for gzip members, or NULL (no memory, or the library does not take
    the stream structure declared here)."""
    cdef _Stream *stream = <_Stream *>calloc(1, sizeof(_Stream))
    if stream != NULL and _init(stream, GZIP_WINDOW_BITS, _version,
                                <int>sizeof(_Stream)) != Z_OK:
        free(stream)
        stream = NULL
    return stream


cdef SpareContexts _spares   # (kcodec/_spares.pxd)


cdef void *inflate_context() noexcept:
    cdef void *stream = take_spare(&_spares)
    return stream if stream != NULL else _new_stream()


cdef void inflate_give_back(void *context) noexcept:
    keep_spare(&_spares, context, _discard)


cdef void _discard(void *context) noexcept:
    _end(<_Stream *>context)
    free(context)


cdef Py_ssize_t inflate_member(void *context, uint8_t *out, size_t capacity,
                               const uint8_t *member, size_t n) noexcept nogil:
    cdef _Stream *stream = <_Stream *>context
    if _reset(stream) != Z_OK or n > UINT_MAX or capacity > UINT_MAX:
        return -1
    stream.next_in, stream.avail_in = member, <unsigned>n
    stream.next_out, stream.avail_out = out, <unsigned>capacity
    if _inflate(stream, Z_FINISH) != Z_STREAM_END or stream.avail_in:
        return -1
    return <Py_ssize_t>(capacity - stream.avail_out)


def available() -> bool:
    """Whether small gzip batches are inflated without the GIL (zlib's functions were
    found where the zlib module's zlib is)."""
    return inflate_callable()


cdef void inflate_release_spares() noexcept:
    discard_spares(&_spares, _discard)
