"""Real data written by Kafka brokers (shared/testdata)."""

from __future__ import annotations

import pytest

import kcodec

from .conftest import real_segments, shared_path, shared_segments

SEGMENTS = real_segments()


@pytest.mark.parametrize("path", SEGMENTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_segment_batches(path: object) -> None:
    data = path.read_bytes()  # type: ignore[attr-defined]
    reader = kcodec.read_batches(data)
    previous_next = None
    for batch in reader:
        assert batch.is_valid()
        assert batch.magic == 2
        if previous_next is not None:
            assert batch.base_offset >= previous_next
        previous_next = batch.next_offset
        records = batch.records()  # compressed ones (lz4 here) decompressed on the way
        assert len(records) == batch.record_count
        if records:
            assert records[-1].offset <= batch.last_offset
            assert all(batch.base_offset <= r.offset <= batch.last_offset for r in records)
            if not batch.timestamp_type:
                assert max(r.timestamp for r in records) == batch.max_timestamp
    assert reader.trailing_bytes == 0 and reader.valid_bytes == len(data)


def test_segment_names_their_base_offset() -> None:
    path = shared_path("testdata", "kafka-segments", "silvagois__project_data_enginnering",
                       "__consumer_offsets-11", "00000000000000000001.log")
    first = next(kcodec.read_batches(path.read_bytes()))
    assert first.base_offset == 1


def test_kraft_control_records() -> None:
    path = shared_path("testdata", "kafka-segments", "fuzibotond__Experts-in-team-innovation",
                       "__cluster_metadata-0", "00000000000000000000.log")
    kinds: set[kcodec.ControlType | None] = set()
    for batch in kcodec.read_batches(path.read_bytes()):
        if batch.is_control:
            kinds.update(r.control_type for r in batch)
    assert kinds and kinds <= {kcodec.ControlType.LEADER_CHANGE, kcodec.ControlType.SNAPSHOT_HEADER,
                               kcodec.ControlType.SNAPSHOT_FOOTER, kcodec.ControlType.KRAFT_VERSION,
                               kcodec.ControlType.KRAFT_VOTERS}


def test_fetch_capture_v2() -> None:
    path = shared_path("testdata", "kafka-wire", "segmentio__kafka-go", "v2-v2.records.bin")
    batches = list(kcodec.read_batches(path.read_bytes()))
    assert [b.base_offset for b in batches] == [0, 2]
    assert sum(len(b.records()) for b in batches) == 4


def test_lz4_segments_are_lz4() -> None:
    codecs = {b.compression_id for path in shared_segments()
              for b in kcodec.read_batches(path.read_bytes())}
    assert 3 in codecs


def test_fetch_capture_v2_gzip() -> None:
    path = shared_path("testdata", "kafka-wire", "segmentio__kafka-go", "v2c-v2c.records.bin")
    batches = list(kcodec.read_batches(path.read_bytes()))
    assert [b.compression for b in batches] == [kcodec.Compression.GZIP] * 2
    assert [r.offset for b in batches for r in b] == [0, 1, 2, 3]


def legacy_wrapper_value(data: bytes) -> tuple[int, bytes]:
    """(codec, value) of the one magic-0 wrapper message in a fetch capture: just enough
    parsing to reach the compressed bytes a real 0.8/0.9 broker stored."""
    import struct
    (magic, attributes, key_length) = struct.unpack_from(">bBi", data, 16)
    assert magic == 0 and key_length == -1
    (value_length,) = struct.unpack_from(">i", data, 22)
    return attributes & 0x07, data[26:26 + value_length]


def inner_values(message_set: bytes) -> list[bytes]:
    """The values of an uncompressed magic-0 message set."""
    import struct
    values, pos = [], 0
    while pos + 12 <= len(message_set):
        (size,) = struct.unpack_from(">i", message_set, pos + 8)
        (key_length,) = struct.unpack_from(">i", message_set, pos + 18)
        key_end = pos + 22 + max(key_length, 0)
        (value_length,) = struct.unpack_from(">i", message_set, key_end)
        values.append(message_set[key_end + 4:key_end + 4 + value_length])
        pos += 12 + size
    return values


@pytest.mark.parametrize("name", ["fetch1.mytopic.1p.gzip.kafka.0821",
                                  "fetch1.mytopic.1p.snappy.kafka.0821",
                                  "fetch1.mytopic.1p.snappy.kafka.0822"])
def test_broker_written_gzip_and_xerial_snappy(name: str) -> None:
    folder = shared_path("testdata", "kafka-wire", "kafka-rust__kafka-rust")
    codec, value = legacy_wrapper_value((folder / f"{name}.records.bin").read_bytes())
    assert codec == (1 if "gzip" in name else 2)
    inner = kcodec.decompress(codec, value, magic=0)
    lines = (folder / "fetch1.txt").read_bytes().splitlines()
    assert inner_values(inner) == lines[:len(inner_values(inner))]
    assert len(inner_values(inner)) == 42
    assert kcodec.decompress(codec, kcodec.compress(codec, inner, magic=0), magic=0) == inner


def test_snappy_java_chunked_stream() -> None:
    folder = shared_path("testdata", "kafka-wire", "kafka-rust__kafka-rust")
    stream = (folder / "fetch1.snappy.chunked.4k").read_bytes()
    assert kcodec.decompress("snappy", stream) == (folder / "fetch1.txt").read_bytes()


@pytest.mark.parametrize("name", ["fetch1.mytopic.1p.nocompression.kafka.0821",
                                  "fetch1.mytopic.1p.gzip.kafka.0821",
                                  "fetch1.mytopic.1p.snappy.kafka.0821",
                                  "fetch1.mytopic.1p.snappy.kafka.0822"])
def test_broker_written_magic0_message_sets(name: str) -> None:
    folder = shared_path("testdata", "kafka-wire", "kafka-rust__kafka-rust")
    entries = list(kcodec.read_batches((folder / f"{name}.records.bin").read_bytes()))
    assert {e.magic for e in entries} == {0}
    records = [r for e in entries for r in e]
    assert [r.value for r in records] == (folder / "fetch1.txt").read_bytes().splitlines()
    assert [r.offset for r in records] == list(range(42))
    assert all(r.timestamp == -1 and r.key is None for r in records)


def test_broker_written_invalid_crc() -> None:
    folder = shared_path("testdata", "kafka-wire", "kafka-rust__kafka-rust")
    bad = (folder / "fetch2.mytopic.nocompression.invalid_crc.kafka.0900.records.bin").read_bytes()
    good = (folder / "fetch2.mytopic.nocompression.kafka.0900.records.bin").read_bytes()
    with pytest.raises(kcodec.errors.ChecksumError):
        list(kcodec.read_batches(bad))
    assert [e.is_valid() for e in kcodec.read_batches(bad, validate_crc=False)] == [False]
    assert [r.value for e in kcodec.read_batches(good) for r in e] == \
        [(folder / "fetch2.txt").read_bytes().rstrip(b"\n")]
