# cython: language_level=3
"""What every reader shares: the held input buffer, and the Record it yields."""
cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer


@cython.final
@cython.no_gc_clear  # see __dealloc__
cdef class InputBuffer:
    def __cinit__(self, obj):
        PyObject_GetBuffer(obj, &self.view, PyBUF_SIMPLE)
        self.data = <const uint8_t *>self.view.buf
        self.size = self.view.len
        self.obj = obj

    cdef object bytes_view(self):
        """The input as a memoryview of bytes, made once: slices of it are byte ranges
        whatever the input's own item format (an ``array('I')``'s view counts items)."""
        if self._bytes is None:
            self._bytes = memoryview(self.obj).cast("B")
        return self._bytes

    def __dealloc__(self):
        # Releases the export. The garbage collector must not clear view.obj first (as
        # Cython's generated tp_clear would): the exporter would then be freed with an
        # export still counted (bytearray: "deallocated ... has exported buffers").
        PyBuffer_Release(&self.view)


@cython.final
@cython.freelist(256)
@cython.no_gc  # holds only ints, bytes and a list of (str, bytes) pairs: no cycles
cdef class Record:
    """One record of a batch (any magic). Plain data: it does not refer to the input.

    ``sequence`` is -1 and ``headers`` empty for legacy (magic 0/1) records;
    ``control_type`` and ``coordinator_epoch`` are set for control records only.
    """

    @property
    def headers(self):
        """The headers as a list of ``(str, bytes or None)`` pairs."""
        if self._headers is None:
            self._headers = []
        return self._headers

    def __repr__(self):
        text = (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r}")
        if self.control_type is not None:
            text += f", control_type={self.control_type!r}, coordinator_epoch={self.coordinator_epoch!r}"
        return text + ")"
