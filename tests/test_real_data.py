"""Real data written by Kafka brokers (shared/testdata)."""

from __future__ import annotations

import pytest

import kcodec

from .conftest import real_segments, shared_path

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
    codecs = {b.compression_id for path in SEGMENTS for b in kcodec.read_batches(path.read_bytes())}
    assert 3 in codecs


def test_fetch_capture_v2_gzip() -> None:
    path = shared_path("testdata", "kafka-wire", "segmentio__kafka-go", "v2c-v2c.records.bin")
    batches = list(kcodec.read_batches(path.read_bytes()))
    assert [b.compression for b in batches] == [kcodec.Compression.GZIP] * 2
    assert [r.offset for b in batches for r in b] == [0, 1, 2, 3]
