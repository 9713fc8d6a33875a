"""A minimal Kafka broker on loopback, enough for librdkafka to produce to and fetch from.

It speaks ApiVersions v0 (answering newer versions with UNSUPPORTED_VERSION, as KIP-511
has clients expect), Metadata v1, Produce v3-v7 and Fetch v4-v10 (the versions that let
librdkafka use LZ4 and zstd), and has no group coordinator; topics have one partition. Produced record sets are kept as the client sent them, byte for byte, and
fetches are answered from record sets the test provides: so librdkafka's writer and reader
meet kcodec without a real broker. Test code only: no validation, no persistence.
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

API_PRODUCE, API_FETCH, API_METADATA, API_FIND_COORDINATOR, API_VERSIONS = 0, 1, 3, 10, 18
SUPPORTED = {API_PRODUCE: (3, 7), API_FETCH: (4, 10), API_METADATA: (1, 1),
             API_FIND_COORDINATOR: (0, 0), API_VERSIONS: (0, 0)}
NODE_ID = 1


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def int16(self) -> int:
        return int(self.take(">h")[0])

    def int32(self) -> int:
        return int(self.take(">i")[0])

    def int64(self) -> int:
        return int(self.take(">q")[0])

    def string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        text = self.data[self.pos:self.pos + length].decode()
        self.pos += length
        return text

    def bytes_(self) -> bytes | None:
        length = self.int32()
        if length < 0:
            return None
        value = self.data[self.pos:self.pos + length]
        self.pos += length
        return value


def string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def array(items: list[bytes]) -> bytes:
    return struct.pack(">i", len(items)) + b"".join(items)


class FakeBroker:
    def __init__(self) -> None:
        self.produced: dict[str, list[bytes]] = {}
        self.fetchable: dict[str, bytes] = {}
        self.lock = threading.Lock()
        broker = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                broker.serve(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def serve(self, sock: socket.socket) -> None:
        while True:
            head = _recv_exact(sock, 4)
            if head is None:
                return
            request = _recv_exact(sock, struct.unpack(">i", head)[0])
            if request is None:
                return
            r = Reader(request)
            api_key, version, correlation_id = r.take(">hhi")
            r.string()  # client id
            body = self.answer(api_key, version, r)
            payload = struct.pack(">i", correlation_id) + body
            sock.sendall(struct.pack(">i", len(payload)) + payload)

    def answer(self, api_key: int, version: int, r: Reader) -> bytes:
        if api_key == API_VERSIONS:
            error = 0 if version == 0 else 35  # UNSUPPORTED_VERSION: the client retries v0
            return struct.pack(">h", error) + array(
                [struct.pack(">hhh", key, low, high) for key, (low, high) in SUPPORTED.items()])
        if api_key == API_METADATA:
            count = r.int32()
            topics = [r.string() or "" for _ in range(max(count, 0))]
            if count < 0:
                topics = sorted(set(self.produced) | set(self.fetchable))
            brokers = array([struct.pack(">i", NODE_ID) + string("127.0.0.1")
                             + struct.pack(">i", self.port) + string(None)])
            only_partition = (struct.pack(">hii", 0, 0, NODE_ID) + array([struct.pack(">i", NODE_ID)])
                              + array([struct.pack(">i", NODE_ID)]))
            return brokers + struct.pack(">i", NODE_ID) + array(
                [struct.pack(">h", 0) + string(t) + b"\x00" + array([only_partition])
                 for t in topics])
        if api_key == API_PRODUCE:
            r.string()  # transactional id
            r.take(">hi")  # acks, timeout
            answers = []
            for _ in range(r.int32()):
                topic = r.string() or ""
                parts = []
                for _ in range(r.int32()):
                    partition, records = r.int32(), r.bytes_()
                    with self.lock:
                        offset = sum(_count(b) for b in self.produced.get(topic, []))
                        self.produced.setdefault(topic, []).append(records or b"")
                    part = struct.pack(">ihqq", partition, 0, offset, -1)
                    parts.append(part + (struct.pack(">q", 0) if version >= 5 else b""))
                answers.append(string(topic) + array(parts))
            return array(answers) + struct.pack(">i", 0)
        if api_key == API_FIND_COORDINATOR:
            return struct.pack(">hi", 15, -1) + string("") + struct.pack(">i", -1)
        if api_key == API_FETCH:
            r.take(">iiii")  # replica id, max wait, min bytes, max bytes
            r.take(">b")  # isolation level
            if version >= 7:
                r.take(">ii")  # session id and epoch
            answers = []
            for _ in range(r.int32()):
                topic = r.string() or ""
                parts = []
                for _ in range(r.int32()):
                    partition = r.int32()
                    if version >= 9:
                        r.int32()  # current leader epoch
                    fetch_offset = r.int64()
                    if version >= 5:
                        r.int64()  # log start offset
                    r.int32()  # partition max bytes
                    stored = self.fetchable.get(topic, b"")
                    records = stored if fetch_offset == 0 else b""
                    high = _last_offset(stored) + 1
                    part = struct.pack(">ihqq", partition, 0, high, high)
                    if version >= 5:
                        part += struct.pack(">q", 0)
                    parts.append(part + array([]) + struct.pack(">i", len(records)) + records)
                answers.append(string(topic) + array(parts))
            top = struct.pack(">i", 0) + (struct.pack(">hi", 0, 0) if version >= 7 else b"")
            return top + array(answers)
        raise ValueError(f"api key {api_key} is not served by the fake broker")


def _count(record_set: bytes) -> int:
    return struct.unpack_from(">i", record_set, 57)[0] if len(record_set) >= 61 else 0


def _last_offset(record_set: bytes) -> int:
    last, pos = -1, 0
    while pos + 61 <= len(record_set):
        base, length = struct.unpack_from(">qi", record_set, pos)
        (delta,) = struct.unpack_from(">i", record_set, pos + 23)
        last, pos = base + delta, pos + 12 + length
    return last


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


@contextmanager
def running_broker() -> Iterator[FakeBroker]:
    broker = FakeBroker()
    thread = threading.Thread(target=broker.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield broker
    finally:
        broker.server.shutdown()
        broker.server.server_close()
