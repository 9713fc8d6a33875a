"""librdkafka (bundled by confluent-kafka) as a third peer, through a fake broker on loopback:
its producer's batches decode in kcodec, and its consumer reads kcodec's batches."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import kcodec

from .fake_broker import FakeBroker, running_broker

confluent_kafka = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.librdkafka

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="module")
def broker() -> Iterator[FakeBroker]:
    with running_broker() as running:
        yield running


@pytest.mark.parametrize("codec", CODECS)
def test_librdkafka_produces_kcodec_reads(broker: FakeBroker, codec: str) -> None:
    topic = f"produced-{codec}"
    producer = confluent_kafka.Producer({
        "bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 100,
        "enable.idempotence": False})
    sent = [(b"key-%d" % i, b'{"event": "click", "n": %d} ' % i * 8, [("h", b"%d" % i)])
            for i in range(200)]
    for key, value, headers in sent:
        producer.produce(topic, value=value, key=key, headers=headers,
                         timestamp=1700000000000 + len(key))
    assert producer.flush(20) == 0
    received = []
    for record_set in broker.produced[topic]:
        for batch in kcodec.read_batches(record_set):
            expected = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[codec]
            assert batch.compression_id == expected
            assert batch.partition_leader_epoch == 0  # what librdkafka writes
            received += [(r.key, r.value, r.headers) for r in batch]
    assert received == [(k, v, h) for k, v, h in sent]


@pytest.mark.parametrize("codec", CODECS)
def test_kcodec_builds_librdkafka_consumes(broker: FakeBroker, codec: str) -> None:
    topic = f"fetched-{codec}"
    builder = kcodec.BatchBuilder(compression=codec)
    expected = []
    for i in range(300):
        value = b"kcodec %d " % i * 10
        builder.append(value, key=b"%d" % i, timestamp=1700000000000 + i,
                       headers=[("source", b"kcodec")])
        expected.append((i, b"%d" % i, value, [("source", b"kcodec")], 1700000000000 + i))
    broker.fetchable[topic] = builder.build()
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": "kcodec-tests",
        "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    got: list[tuple[int, bytes, bytes, list[tuple[str, bytes]], int]] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < len(expected) and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append((message.offset(), message.key(), message.value(), message.headers(),
                        message.timestamp()[1]))
    finally:
        consumer.close()
    assert got == expected
