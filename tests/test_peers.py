"""Both directions against independent implementations installed from PyPI:
kafka-python (pure Python) and aiokafka (its Cython reader and builder)."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

import kcodec

from .conftest import shared_segments

try:
    from aiokafka.record._crecords import DefaultRecordBatch as AioBatch
    from aiokafka.record._crecords import DefaultRecordBatchBuilder as AioBuilder
    from aiokafka.record._crecords import LegacyRecordBatch as AioLegacy
    from aiokafka.record._crecords import LegacyRecordBatchBuilder as AioLegacyBuilder
    HAVE_AIOKAFKA = True
except ImportError:   # aiokafka publishes no wheels for some platforms (musl)
    HAVE_AIOKAFKA = False
needs_aiokafka = pytest.mark.skipif(not HAVE_AIOKAFKA, reason="aiokafka is not installed")
#: The peers' readers of a v2 batch.
PEER_BATCHES: tuple[Any, ...] = (KpBatch, AioBatch) if HAVE_AIOKAFKA else (KpBatch,)

TS = 1700000000000
RECORDS: list[tuple[bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]] = [
    (b"key", b"value", TS, []),
    (None, b"no key", TS + 3, [("h1", b"a"), ("h2", None)]),
    (b"tombstone", None, TS - 7, []),
    (b"", b"", TS, [("", b"")]),
    (b"k" * 300, bytes(range(256)) * 8, TS + 100_000, [("x" * 200, b"y" * 500)]),
]


def kcodec_batch(producer: tuple[int, int, int] = (-1, -1, -1), transactional: bool = False,
                 ple: int = -1) -> bytes:
    pid, epoch, seq = producer
    builder = kcodec.BatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  is_transactional=transactional, partition_leader_epoch=ple)
    for key, value, ts, headers in RECORDS:
        builder.append(value, key=key, timestamp=ts, headers=headers)
    return builder.build()


def decoded(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None, list]]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers)
            for batch in kcodec.read_batches(data) for r in batch]


EXPECTED = [(i, ts, k, v, h) for i, (k, v, ts, h) in enumerate(RECORDS)]


@pytest.mark.parametrize("producer", [(-1, -1, -1), (4000, 2, 17)])
@pytest.mark.parametrize("transactional", [False, True])
def test_kafka_python_builds_kcodec_reads(producer: tuple[int, int, int],
                                         transactional: bool) -> None:
    builder = KpBuilder(magic=2, compression_type=0, is_transactional=transactional,
                        producer_id=producer[0], producer_epoch=producer[1],
                        base_sequence=producer[2], batch_size=10**7)
    for i, (key, value, ts, headers) in enumerate(RECORDS):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    data = bytes(builder.build())
    assert decoded(data) == EXPECTED
    (batch,) = kcodec.read_batches(data)
    assert batch.partition_leader_epoch == 0  # kafka-python writes 0, Java -1
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.is_transactional == transactional
    # the bytes are Java's too, up to the leader epoch (not CRC-covered)
    assert kcodec_batch(producer, transactional, ple=0) == data


@pytest.mark.parametrize("producer", [(-1, -1, -1), (4000, 2, 17)])
def test_kcodec_builds_kafka_python_reads(producer: tuple[int, int, int]) -> None:
    data = kcodec_batch(producer)
    batch = KpBatch(data)
    assert batch.validate_crc()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == EXPECTED


@needs_aiokafka
def test_aiokafka_builds_kcodec_reads() -> None:
    builder = AioBuilder(2, 0, 0, -1, -1, -1, 10**7)
    for i, (key, value, ts, headers) in enumerate(RECORDS):
        builder.append(i, ts, key, value, headers)
    data = bytes(builder.build())
    assert decoded(data) == EXPECTED
    assert kcodec_batch() == data  # aiokafka writes leader epoch -1, as Java


@needs_aiokafka
def test_kcodec_builds_aiokafka_reads() -> None:
    data = kcodec_batch((4000, 2, 17), transactional=True)
    batch = AioBatch(data)
    assert batch.validate_crc()
    assert batch.is_transactional and batch.producer_id == 4000
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == EXPECTED


def test_control_batch_read_by_peers() -> None:
    data = kcodec.BatchBuilder.end_txn_marker(kcodec.ControlType.COMMIT, producer_id=9,
                                              producer_epoch=1, coordinator_epoch=4, timestamp=TS)
    for peer in PEER_BATCHES:
        assert peer(data).is_control_batch and peer(data).validate_crc()


def test_real_segments_match_kafka_python() -> None:
    segments = shared_segments()
    checked = 0
    for path in segments:
        data = path.read_bytes()
        ours = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in
                (rec for b in kcodec.read_batches(data) for rec in b)]
        theirs = []
        records = KpMemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            for r in batch:
                theirs.append((r.offset, r.timestamp, r.key, r.value, list(r.headers)))
        assert ours == theirs, path
        checked += 1
    assert checked == len(segments)


# ---- compressed batches -----------------------------------------------------------------

CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BIG_RECORDS = [(b"key-%d" % i, b'{"event": "click", "n": %d, "pad": "%s"}' % (i, b"x" * (i % 50)),
                TS + i, [("h", b"%d" % i)]) for i in range(2000)]
BIG_EXPECTED = [(i, ts, k, v, h) for i, (k, v, ts, h) in enumerate(BIG_RECORDS)]


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_kafka_python_compresses_kcodec_reads(codec: str) -> None:
    builder = KpBuilder(magic=2, compression_type=CODEC_IDS[codec], is_transactional=False,
                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=10**8)
    for i, (key, value, ts, headers) in enumerate(BIG_RECORDS):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    data = bytes(builder.build())
    (batch,) = kcodec.read_batches(data)
    assert batch.compression_id == CODEC_IDS[codec]
    assert decoded(data) == BIG_EXPECTED


@needs_aiokafka
@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_aiokafka_compresses_kcodec_reads(codec: str) -> None:
    builder = AioBuilder(2, CODEC_IDS[codec], 0, -1, -1, -1, 10**8)
    for i, (key, value, ts, headers) in enumerate(BIG_RECORDS):
        builder.append(i, ts, key, value, headers)
    data = bytes(builder.build())
    (batch,) = kcodec.read_batches(data)
    assert batch.compression_id == CODEC_IDS[codec]
    assert decoded(data) == BIG_EXPECTED


@pytest.mark.parametrize(("codec", "level"), [
    (codec, level) for codec in CODEC_IDS for level in (None, 1, 5) if codec != "snappy" or not level
])
def test_kcodec_compresses_peers_read(codec: str, level: int | None) -> None:
    builder = kcodec.BatchBuilder(compression=codec, level=level)
    for key, value, ts, headers in BIG_RECORDS:
        builder.append(value, key=key, timestamp=ts, headers=headers)
    data = builder.build()
    for peer_batch in (peer(data) for peer in PEER_BATCHES):
        assert peer_batch.validate_crc()
        assert peer_batch.compression_type == CODEC_IDS[codec]
        got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in peer_batch]
        assert got == BIG_EXPECTED


# ---- magic 0 and 1 --------------------------------------------------------------------------

LEGACY_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}
LEGACY_RECORDS = [(None if i % 5 == 0 else b"key-%d" % i, b"legacy value %d " % i * 6, TS + i)
                  for i in range(300)]


def peer_entries_records(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    out = []
    records = KpMemoryRecords(data)
    while records.has_next():
        for r in records.next_batch():
            out.append((r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value))
    return out


@pytest.mark.parametrize(("peer", "magic", "codec"), [
    (peer, magic, codec) for peer in ("kafka-python", "aiokafka") for magic in (0, 1)
    for codec in LEGACY_CODECS
    if (peer, magic, codec) != ("aiokafka", 0, "lz4")])   # (aiokafka writes no magic-0 LZ4)
def test_peers_legacy_to_kcodec(peer: str, magic: int, codec: str) -> None:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    if peer == "aiokafka" and not HAVE_AIOKAFKA:
        pytest.skip("aiokafka is not installed")
    peer_builder = LegacyRecordBatchBuilder if peer == "kafka-python" else AioLegacyBuilder
    builder = peer_builder(magic, LEGACY_CODECS[codec], 10**8)
    for i, (key, value, ts) in enumerate(LEGACY_RECORDS):
        builder.append(i, ts, key, value)
    data = bytes(builder.build())
    got = [(r.offset, r.timestamp, r.key, r.value) for e in kcodec.read_batches(data) for r in e]
    assert got == [(i, ts if magic else -1, k, v) for i, (k, v, ts) in enumerate(LEGACY_RECORDS)]
    assert kcodec.decode_columns(data)["offset"].tolist() == list(range(len(LEGACY_RECORDS)))


@pytest.mark.parametrize("codec", list(LEGACY_CODECS))
@pytest.mark.parametrize("magic", [0, 1])
def test_kcodec_legacy_to_peers(magic: int, codec: str) -> None:
    builder = kcodec.BatchBuilder(magic=magic, compression=codec)
    for key, value, ts in LEGACY_RECORDS:
        builder.append(value, key=key, timestamp=ts)
    data = builder.build()
    expected = [(i, ts if magic else -1, k, v) for i, (k, v, ts) in enumerate(LEGACY_RECORDS)]
    assert peer_entries_records(data) == expected
    if not HAVE_AIOKAFKA or (magic == 0 and codec == "lz4"):
        return  # (aiokafka does not read magic-0 LZ4, KIP-57's broken checksum, at all)
    got, pos = [], 0
    while pos < len(data):
        size = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        entry = AioLegacy(data[pos:pos + size], magic)
        assert entry.validate_crc()
        got += [(r.offset, r.timestamp, r.key, r.value) for r in entry]
        pos += size
    assert [(o, t if magic else -1, k, v) for o, t, k, v in got] == expected


@pytest.mark.parametrize("name", ["v1-v1", "v1c-v1c", "v1c-v1-v1c", "v2b-v1", "v2bc-v1-v1c",
                                  "v2bc-v1", "v2bc-v1c", "v1-v1c-v2-v2c-v2b-v2b-v2b-v2bc-v1b-v1bc"])
def test_mixed_magic_captures_match_kafka_python(name: str) -> None:
    from .conftest import shared_path
    data = shared_path("testdata", "kafka-wire", "segmentio__kafka-go",
                       f"{name}.records.bin").read_bytes()
    ours = [(r.offset, r.timestamp, r.key, r.value) for e in kcodec.read_batches(data) for r in e]
    assert ours == peer_entries_records(data)
    assert len({e.magic for e in kcodec.read_batches(data)}) >= 1


@pytest.mark.parametrize("codec", ["none", *CODEC_IDS])
@pytest.mark.parametrize("fields", [
    {"base_offset": 1_000_000, "partition_leader_epoch": 9},
    {"timestamp_type": kcodec.TimestampType.LOG_APPEND_TIME, "log_append_time": TS + 555,
     "producer_id": 7, "producer_epoch": 1, "base_sequence": 3, "is_transactional": True}],
    ids=["far", "log-append-time"])
def test_batch_fields_read_by_peers(codec: str, fields: dict[str, Any]) -> None:
    """A base offset far from 0, a leader epoch, LogAppendTime (every record has the
    batch's time) with a transaction: as each peer reads them."""
    builder = kcodec.BatchBuilder(compression=codec, **fields)
    for key, value, ts, headers in RECORDS:
        builder.append(value, key=key, timestamp=ts, headers=headers)
    data = builder.build()
    base = fields.get("base_offset", 0)
    stamped = fields.get("log_append_time")
    expected = [(base + i, stamped or ts, k, v, h) for i, (k, v, ts, h) in enumerate(RECORDS)]
    assert decoded(data) == expected
    for peer in PEER_BATCHES:
        batch = peer(data)
        assert batch.validate_crc() and batch.base_offset == base
        assert batch.timestamp_type == (1 if stamped else 0)
        assert batch.producer_id == fields.get("producer_id", -1)
        assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers))
                for r in peer(data)] == expected


@pytest.mark.parametrize("kind", [kcodec.ControlType.ABORT, kcodec.ControlType.COMMIT])
def test_transaction_markers_read_by_peers(kind: kcodec.ControlType) -> None:
    """The marker's record as the peers read it: key (version 0, type), value (version 0,
    coordinator epoch), at its offset and time."""
    data = kcodec.BatchBuilder.end_txn_marker(kind, producer_id=9, producer_epoch=1,
                                              coordinator_epoch=4, base_offset=77, timestamp=TS)
    key, value = int(kind).to_bytes(4, "big"), (4).to_bytes(6, "big")
    for peer in PEER_BATCHES:
        batch = peer(data)
        assert batch.validate_crc() and batch.is_control_batch and batch.is_transactional
        (record,) = list(peer(data))
        if peer is KpBatch:   # (kafka-python reads a control record as its type)
            assert (record.offset, record.timestamp, record.type, record.value) == (
                77, TS, int(kind), value)
        else:
            assert (record.offset, record.timestamp, record.key, record.value) == (
                77, TS, key, value)


@pytest.mark.parametrize("codec", ["none", *CODEC_IDS])
@pytest.mark.parametrize("peer", ["kafka-python", "aiokafka"])
def test_columns_of_batches_peers_wrote(codec: str, peer: str) -> None:
    """decode_columns' batch-level columns and records, on each peer's idempotent and
    transactional batches, against what the peer reads."""
    if peer == "aiokafka" and not HAVE_AIOKAFKA:
        pytest.skip("aiokafka is not installed")
    data = b""
    for base, transactional in ((0, False), (len(RECORDS), True)):
        if peer == "kafka-python":
            builder = KpBuilder(magic=2, compression_type=CODEC_IDS.get(codec, 0),
                                is_transactional=transactional, producer_id=4000,
                                producer_epoch=2, base_sequence=base, batch_size=10**7)
        else:
            builder = AioBuilder(2, CODEC_IDS.get(codec, 0), int(transactional), 4000, 2,
                                 base, 10**7)
        for i, (key, value, ts, headers) in enumerate(RECORDS):
            builder.append(i, ts, key, value, headers)
        built = bytes(builder.build())
        data += built[:8].replace(bytes(8), base.to_bytes(8, "big")) + built[8:]
    expected = [(base + i, ts, k, v, h) for base in (0, len(RECORDS))
                for i, (k, v, ts, h) in enumerate(RECORDS)]
    for threads in (1, 2):
        got = kcodec.decode_columns(data, metadata=True, include_headers=True, threads=threads)
        assert got["offset"].tolist() == [e[0] for e in expected]
        assert got["sequence"].tolist() == [e[0] for e in expected]   # base_sequence = offset
        assert set(got["producer_id"].tolist()) == {4000}
        assert got["is_transactional"].tolist() == [False] * len(RECORDS) + [True] * len(RECORDS)
    assert decoded(data) == expected
