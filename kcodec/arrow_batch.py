"""Arrow record batches over decoded columns, their buffers wrapped rather than copied.

``record_batch`` takes what decode_chunk gives with ``arrow=True`` (int32 offsets,
microsecond timestamps, int32 timestamp types, as the C core wrote them), has its byte
flags packed to bits (one pass without the GIL), and wraps each buffer with
``pyarrow.Array.from_buffers``: nothing is copied or converted column by column under the
GIL, so threads building batches at once do not wait on each other for it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kcodec._bitmaps import pack_bitmaps
from kcodec._java_text import ERRORS as JAVA_ERRORS

if TYPE_CHECKING:
    import pyarrow

_zeros_lock = threading.Lock()
_zeros: Any = None   # a read-only pyarrow buffer of zero bytes, grown as needed


def _zero_buffer(pa: Any, size: int) -> Any:
    """A pyarrow buffer of at least ``size`` zero bytes, shared by the all-null columns."""
    global _zeros
    with _zeros_lock:
        if _zeros is None or _zeros.size < size:
            _zeros = pa.py_buffer(bytes(max(size, 2 * (_zeros.size if _zeros else 0))))
        return _zeros


def _nulls(pa: Any, arrow_type: Any, n: int) -> Any:
    """n nulls of type int32 or string, over one shared buffer of zeros (the validity
    bitmap, and the values or the n + 1 offsets: 4 bytes each)."""
    zeros = _zero_buffer(pa, 4 * (n + 1))
    if arrow_type == pa.string():   # no characters
        return pa.Array.from_buffers(arrow_type, n, [zeros, zeros, zeros], null_count=n)
    return pa.Array.from_buffers(arrow_type, n, [zeros, zeros], null_count=n)


def _binary(pa: Any, offsets: np.ndarray, data: np.ndarray, bitmap: np.ndarray | None,
            kind: str = "binary") -> Any:
    """A binary (or string) array; int32 offsets make it binary, int64 large_binary."""
    large = offsets.dtype == np.int64
    if kind == "string":
        arrow_type = pa.large_string() if large else pa.string()
    else:
        arrow_type = pa.large_binary() if large else pa.binary()
    return pa.Array.from_buffers(arrow_type, len(offsets) - 1, [
        None if bitmap is None else pa.py_buffer(bitmap), pa.py_buffer(offsets),
        pa.py_buffer(data)])


def _fixed(pa: Any, arrow_type: Any, values: np.ndarray) -> Any:
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


def _header_keys(pa: Any, keys: Any) -> Any:
    """Header keys as strings, checked as UTF-8 (a cast that copies nothing); malformed keys
    are decoded with U+FFFD, as Java and the row API decode them."""
    large = pa.types.is_large_binary(keys.type)
    try:
        return keys.cast(pa.large_string() if large else pa.string())
    except pa.ArrowInvalid:
        return pa.array([k.decode("utf-8", JAVA_ERRORS) for k in keys.to_pylist()],
                        pa.large_string() if large else pa.string())


def _topic(pa: Any, text: str | None, n: int) -> Any:
    if text is None:
        return _nulls(pa, pa.string(), n)
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
    if offsets[-1] <= np.iinfo(np.int32).max:
        offsets = offsets.astype(np.int32)
    return _binary(pa, offsets, np.frombuffer(raw * n, dtype=np.uint8), None, "string")


def _partition(pa: Any, partition: int | None, n: int) -> Any:
    if partition is None:
        return _nulls(pa, pa.int32(), n)
    return _fixed(pa, pa.int32(), np.full(n, partition, dtype=np.int32))


def _views(pa: Any, views: np.ndarray, copied: np.ndarray, bitmap: np.ndarray | None,
           sources: list[Any]) -> Any:
    """A binary_view array: views into ``copied`` (buffer 0) and the ``sources``."""
    buffers = [None if bitmap is None else pa.py_buffer(bitmap), pa.py_buffer(views),
               pa.py_buffer(copied), *sources]
    return pa.Array.from_buffers(pa.binary_view(), len(views) // 16, buffers)


def _headers(pa: Any, chunk: dict[str, Any]) -> Any:
    keys = _header_keys(pa, _binary(pa, chunk["header_key_offsets"], chunk["header_key_data"],
                                    None))
    values = _binary(pa, chunk["header_value_offsets"], chunk["header_value_data"],
                     chunk["header_value_bitmap"])
    struct = pa.StructArray.from_arrays([keys, values], names=["key", "value"])
    offsets = chunk["header_offsets"]
    lists = pa.LargeListArray if offsets.dtype == np.int64 else pa.ListArray
    # a record without headers has null ones, as in Spark's Kafka source
    none = np.diff(offsets) == 0
    return lists.from_arrays(pa.array(offsets), struct,
                             mask=pa.array(none) if none.any() else None)


_BATCH_TYPES = {"magic": "int8", "compression": "int8", "producer_id": "int64",
                "producer_epoch": "int16", "sequence": "int32"}


def record_batch(chunk: dict[str, Any], names: Sequence[str], topic: str | None,
                 partition: int | None) -> pyarrow.RecordBatch:
    """The columns ``names`` of ``chunk`` (decode_chunk's, decoded with ``arrow=True``;
    this packs its flags and then shares its buffers) as an Arrow record batch."""
    import pyarrow as pa
    n = chunk["count"]
    chunk = pack_bitmaps(chunk)
    sources = None   # the buffers views point into, shared by the key and value columns
    if "view_sources" in chunk:
        sources = [pa.foreign_buffer(address, size, owner)
                   for address, size, owner in chunk["view_sources"]]
    arrays = []
    for name in names:
        if (name == "key" or name == "value") and sources is not None:
            column = _views(pa, chunk[f"{name}_views"], chunk[f"{name}_data"],
                            chunk[f"{name}_bitmap"], sources)
        elif name == "key" or name == "value":
            column = _binary(pa, chunk[f"{name}_offsets"], chunk[f"{name}_data"],
                             chunk[f"{name}_bitmap"])
        elif name == "topic":
            column = _topic(pa, topic, n)
        elif name == "partition":
            column = _partition(pa, partition, n)
        elif name == "offset":
            column = _fixed(pa, pa.int64(), chunk["offset"])
        elif name == "timestamp":
            column = _fixed(pa, pa.timestamp("us", tz="UTC"), chunk["timestamp"])
        elif name == "timestampType":
            column = _fixed(pa, pa.int32(), chunk["timestamp_type"])
        elif name == "headers":
            column = _headers(pa, chunk)
        elif name in ("is_transactional", "is_control"):
            column = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(chunk[name])])
        else:
            column = _fixed(pa, getattr(pa, _BATCH_TYPES[name])(), chunk[name])
        arrays.append(column)
    if not arrays:   # no columns asked for: the records still count
        return pa.RecordBatch.from_struct_array(pa.StructArray.from_buffers(pa.struct([]), n,
                                                                            [None]))
    return pa.RecordBatch.from_arrays(arrays, names=list(names))


_INT32_MAX = (1 << 31) - 1


def narrowed(batch: pyarrow.RecordBatch, schema: pyarrow.Schema,
             limit: int = _INT32_MAX) -> list[pyarrow.RecordBatch]:
    """``batch`` in ``schema``, whose binary, string and list columns have int32 offsets:
    as it is when it already is, else cut into runs of rows whose bytes (and header
    counts) in each column reach at most ``limit`` and cast (a chunk past 2 GiB, which
    the decoder gave with int64 offsets, for a reader that takes Spark's types)."""
    import pyarrow as pa
    if batch.schema == schema:
        return [batch]
    spans = [span for column in batch.columns for span in _row_positions(column)]
    pieces = []
    start, n = 0, batch.num_rows
    while start < n:
        end = n
        for span in spans:
            reach = int(np.searchsorted(span, span[start] + limit, side="right")) - 1
            end = min(end, reach)
        end = max(end, start + 1)
        # (copied out of the chunk's buffers first: pyarrow refuses to cast a slice whose
        # buffers pass 2 GiB)
        piece = batch.slice(start, end - start)
        compact = [pa.concat_arrays([column]) for column in piece.columns]
        pieces.append(pa.RecordBatch.from_arrays(compact, schema=piece.schema).cast(schema))
        start = end
    return pieces


def _row_positions(column: Any) -> list[np.ndarray]:
    """For a column with int64 offsets, where each row starts (and the end) in each of its
    offset-addressed buffers: its own, and for headers their count and key and value
    bytes."""
    import pyarrow as pa
    kind = column.type
    if pa.types.is_large_binary(kind) or pa.types.is_large_string(kind):
        offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)
        return [offsets[column.offset:column.offset + len(column) + 1]]
    if pa.types.is_large_list(kind):
        rows = np.asarray(column.offsets)
        entries = column.values
        found = [rows]
        for i in range(entries.type.num_fields):
            for inner in _row_positions(entries.field(i)):
                found.append(inner[rows])
        return found
    return []
