"""Arrow tables over the decoded columns: the layouts the C core writes for Arrow (int32
offsets, microseconds, int32 timestamp types), the bitmaps, and int64 offsets past 2 GiB."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec._bitmaps import BOOLEANS, VALIDITY, pack_bitmaps
from kcodec._columns import decode_chunk
from kcodec.arrow_batch import record_batch
from kcodec.columnar import ALL_COLUMNS, _want

from .columnar_rows import TS, transactional_log
from .conftest import VECTORS

pa = pytest.importorskip("pyarrow")   # (the arrow extra; musl has no wheels of it)
pc = pytest.importorskip("pyarrow.compute")


def mixed_log() -> bytes:
    """Transactional and control batches, null keys and values, headers, every codec, and
    a legacy message set."""
    data = transactional_log()
    offset = 7
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        builder = kcodec.BatchBuilder(compression=codec, base_offset=offset,
                                      producer_id=9, producer_epoch=3, base_sequence=5)
        for i in range(13):
            builder.append(None if i % 3 == 0 else b"v%d" % i,
                           key=None if i % 4 == 0 else b"k%d" % i, timestamp=TS + i,
                           headers=[("h%d" % j, None if j == 1 else b"x" * j)
                                    for j in range(i % 3)])
        data += builder.build()
        offset = builder.next_offset
    return data + VECTORS["v1_gzip_two"]


def bits(packed: Any, n: int) -> list[bool]:
    unpacked = np.unpackbits(np.asarray(packed, dtype=np.uint8), bitorder="little")
    return [bool(b) for b in unpacked[:n]]


@pytest.mark.parametrize("threads", [1, 2])
def test_arrow_columns_equal_the_numpy_columns(threads: int) -> None:
    data = mixed_log()
    cols = kcodec.decode_columns(data, include_headers=True, metadata=True, include_control=True)
    table = kcodec.decode_arrow(data, include_headers=True, metadata=True, include_control=True,
                                topic="events", partition=3, threads=threads, chunk_records=20)
    table.validate(full=True)
    n = cols["count"]
    assert table.num_rows == n > 60
    assert table.column("offset").to_pylist() == cols["offset"].tolist()
    micros = table.column("timestamp").cast(pa.int64()).to_pylist()
    assert micros == (cols["timestamp"] * 1000).tolist()
    assert table.column("timestampType").type == pa.int32()
    assert table.column("timestampType").to_pylist() == cols["timestamp_type"].tolist()
    for name in ("magic", "compression", "producer_id", "producer_epoch", "sequence",
                 "is_transactional", "is_control"):
        assert table.column(name).to_pylist() == cols[name].tolist(), name
    assert table.column("topic").to_pylist() == ["events"] * n
    assert table.column("partition").to_pylist() == [3] * n
    for name in ("key", "value"):
        valid = cols[f"{name}_valid"]
        assert table.column(name).null_count == int((~valid).sum()) > 0
    unnamed = kcodec.decode_arrow(data, columns=["topic", "partition"])
    unnamed.validate(full=True)
    assert unnamed.column("topic").null_count == unnamed.column("partition").null_count == n - 2


def test_arrow_layouts_come_from_the_decoder() -> None:
    entries = list(kcodec.read_batches(mixed_log()))
    chunk = decode_chunk(entries, _want(ALL_COLUMNS), arrow=True)
    plain = decode_chunk(entries, _want(ALL_COLUMNS))
    for name in ("key_offsets", "value_offsets", "header_offsets", "header_key_offsets",
                 "header_value_offsets", "timestamp_type"):
        assert chunk[name].dtype == np.int32, name
        assert chunk[name].tolist() == plain[name].tolist(), name
    assert chunk["timestamp"].tolist() == (plain["timestamp"] * 1000).tolist()


flags = st.lists(st.booleans(), max_size=70)


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({name: flags for name in VALIDITY + BOOLEANS}))
def test_bitmaps_pack_least_significant_bit_first(columns: dict[str, list[bool]]) -> None:
    chunk: dict[str, Any] = {name: np.array(v, dtype=bool) for name, v in columns.items()}
    packed = pack_bitmaps(chunk)
    for name, values in columns.items():
        if name in VALIDITY:
            bitmap = packed[name[:-len("valid")] + "bitmap"]
            assert name not in packed
            if all(values):
                assert bitmap is None
                continue
        else:
            bitmap = packed[name]
        assert len(bitmap) == (len(values) + 7) // 8
        assert bits(bitmap, len(values)) == values


def test_bitmaps_refuse_other_arrays() -> None:
    with pytest.raises(ValueError):
        pack_bitmaps({"key_valid": np.ones(4, dtype=np.int8)})


def huge_batch(value_size: int) -> memoryview:
    """One uncompressed v2 batch whose record has a key b"k" and value_size zero bytes,
    laid out by hand in lazily zeroed memory (no page of the value is written)."""
    zeros = np.zeros(61 + 32 + value_size, dtype=np.uint8)
    body = (b"\x00" + kcodec.encode_varint(0) + kcodec.encode_varint(0)
            + kcodec.encode_varint(1) + b"k" + kcodec.encode_varint(value_size))
    record_length = len(body) + value_size + 1   # + the header count, 0
    record_head = kcodec.encode_varint(record_length) + body
    size = 61 + len(record_head) + value_size + 1
    header = struct.pack(">qiib", 0, size - 12, 0, 2)
    after_crc = struct.pack(">hiqqqhii", 0, 0, TS, TS, -1, -1, -1, 1)
    zeros[:len(header)] = np.frombuffer(header, np.uint8)
    zeros[21:61] = np.frombuffer(after_crc, np.uint8)
    zeros[61:61 + len(record_head)] = np.frombuffer(record_head, np.uint8)
    batch = memoryview(zeros.data)[:size]
    crc = kcodec.crc32c(batch[21:])
    zeros[17:21] = np.frombuffer(struct.pack(">I", crc), np.uint8)
    return batch


def test_offsets_past_2_gib_fall_back_to_large_types() -> None:
    """Int32 offsets cannot reach past 2 GiB of values: the chunk is decoded again with
    int64 offsets, and the table's key and value columns are large_binary."""
    size = 1100 << 20
    (batch,) = kcodec.read_batches(huge_batch(size))
    assert [(r.key, len(r.value or b"")) for r in batch] == [(b"k", size)]
    chunk = decode_chunk([batch, batch], _want(["key", "value", "timestamp"]), arrow=True)
    assert chunk["value_offsets"].dtype == np.int64
    assert chunk["value_offsets"].tolist() == [0, size, 2 * size]
    assert chunk["timestamp"].tolist() == [TS * 1000] * 2
    assert chunk["timestamp_type"].dtype == np.int32
    table = pa.Table.from_batches([record_batch(chunk, ["key", "value", "timestamp"], None,
                                                None)])
    assert table.schema.field("value").type == pa.large_binary()
    assert table.schema.field("key").type == pa.large_binary()
    assert table.column("key").to_pylist() == [b"k", b"k"]
    assert pc.binary_length(table.column("value")).to_pylist() == [size] * 2
    # as iter_arrow gives it: in pieces with int32 offsets
    from kcodec.arrow_batch import narrowed
    usual = kcodec.decode_arrow(b"", columns=["key", "value", "timestamp"]).schema
    pieces = narrowed(table.to_batches()[0], usual)
    del table
    assert [p.num_rows for p in pieces] == [1, 1] and all(p.schema == usual for p in pieces)
    assert [pc.binary_length(p.column("value")).to_pylist() for p in pieces] == [[size]] * 2


def test_narrowed_cuts_a_large_chunk_into_spark_types() -> None:
    """A chunk with int64 offsets (past 2 GiB) becomes batches of the int32-offset schema,
    each within the byte limit in every column (headers' keys and values too), the same
    rows in order; a chunk already in the schema is given back as it is."""
    from kcodec.arrow_batch import narrowed
    builder = kcodec.BatchBuilder()
    for i in range(60):
        builder.append(b"v%d" % i * (i + 1), key=None if i % 7 == 0 else b"k%d" % i,
                       headers=[("h", b"x" * i)] * (i % 3))
    table = kcodec.decode_arrow(builder.build(), include_headers=True)
    (chunk,) = table.to_batches()
    header = pa.struct([("key", pa.large_string()), ("value", pa.large_binary())])
    large = pa.schema([pa.field(f.name, {pa.binary(): pa.large_binary(),
                                         pa.string(): pa.large_string()}.get(f.type, f.type))
                       if f.name != "headers" else pa.field(f.name, pa.large_list(header))
                       for f in table.schema])
    wide = chunk.cast(large)
    pieces = narrowed(wide, table.schema, limit=100)
    assert len(pieces) > 10 and all(p.schema == table.schema for p in pieces)
    assert pa.Table.from_batches(pieces).equals(table)
    for piece in pieces[:-1]:   # each piece holds as many rows as fit
        value = piece.column("value")
        assert piece.num_rows == 1 or sum(len(v) for v in value.to_pylist()) <= 100
    assert narrowed(chunk, table.schema) == [chunk]


def test_a_stream_keeps_its_types_past_2_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    """iter_arrow (and so decode_arrow, export and the Spark source) gives a chunk the
    decoder made with int64 offsets as pieces of the usual types: here every chunk is made
    so, as if each had passed 2 GiB."""
    import kcodec.columnar as columnar
    builder = kcodec.BatchBuilder()
    for i in range(40):
        builder.append(b"value %d" % i * 9, key=b"k%d" % i, headers=[("h", b"%d" % i)])
    data = builder.build() * 3
    expected = kcodec.decode_arrow(data, include_headers=True, chunk_records=40)

    def wide(chunk: dict[str, Any], names: Any, topic: Any, partition: Any) -> Any:
        batch = record_batch(chunk, names, topic, partition)
        if not batch.num_rows:   # (the empty batch that gives the usual types)
            return batch
        header = pa.struct([("key", pa.large_string()), ("value", pa.large_binary())])
        return batch.cast(pa.schema([
            pa.field(f.name, pa.large_list(header) if f.name == "headers" else
                     {pa.binary(): pa.large_binary(), pa.string(): pa.large_string()}.get(
                         f.type, f.type)) for f in batch.schema]))
    monkeypatch.setattr(columnar, "record_batch", wide)
    for threads in (1, 2):
        table = kcodec.decode_arrow(data, include_headers=True, chunk_records=40,
                                    threads=threads)
        assert table.schema == expected.schema and table.equals(expected)
