"""What columnar tests compare and decode: the row API's records, the columns' and Arrow
tables' records in the same shape, and batches made for the tests."""

from __future__ import annotations

from typing import Any

import kcodec
from kcodec import ControlType

TS = 1700000000000


def rows(data: bytes, include_control: bool = False) -> list[tuple[Any, ...]]:
    out = []
    for entry in kcodec.read_batches(data):
        if entry.is_control and not include_control:
            continue
        for r in entry:
            out.append((r.offset, r.timestamp, r.key, r.value, r.headers))
    return out


def column_rows(cols: dict[str, Any]) -> list[tuple[Any, ...]]:
    out = []
    for i in range(cols["count"]):
        def span(name: str, j: int) -> bytes | None:
            if not cols[f"{name}_valid"][j]:
                return None
            lo, hi = cols[f"{name}_offsets"][j], cols[f"{name}_offsets"][j + 1]
            return bytes(cols[f"{name}_data"][lo:hi])
        headers = []
        for h in range(cols["header_offsets"][i], cols["header_offsets"][i + 1]):
            lo, hi = cols["header_key_offsets"][h], cols["header_key_offsets"][h + 1]
            key = cols["header_key_data"][lo:hi].tobytes().decode("utf-8", "replace")
            headers.append((key, span("header_value", h)))
        value = span("value", i) if "value_valid" in cols else None   # (a scan: None)
        out.append((int(cols["offset"][i]), int(cols["timestamp"][i]), span("key", i), value,
                    headers))
    return out


def chunked_rows(chunks: Any) -> list[tuple[Any, ...]]:
    """The rows of iter_columns' chunks, one after another."""
    return [row for chunk in chunks for row in column_rows(chunk)]


def arrow_rows(table: Any) -> list[tuple[Any, ...]]:
    out = []
    for row in table.to_pylist():
        ts = row["timestamp"]
        millis = None if ts is None else round(ts.timestamp() * 1000)
        out.append((row["offset"], millis, row["key"], row["value"],
                    [(h["key"], h["value"]) for h in row["headers"] or []]))
    return out


def views(data: Any, **options: Any) -> Any:
    """decode_arrow with binary_view columns, checked against Arrow's own validation."""
    table = kcodec.decode_arrow(data, binary_view=True, **options)
    table.validate(full=True)
    return table


def batch_of(base: int, count: int, value_size: int) -> bytes:
    builder = kcodec.BatchBuilder(base_offset=base)
    for i in range(count):
        builder.append(bytes([i % 251]) * value_size, key=b"k%d" % i, timestamp=1000 + i)
    return builder.build()


MIXED = [(2, "none"), (1, "none"), (2, "lz4"), (0, "gzip"), (2, "snappy"), (1, "snappy"),
         (2, "zstd"), (2, "gzip"), (0, "none"), (2, "none")]


def mixed_log(kinds: list[tuple[int, str]] = MIXED) -> bytes:
    """v2 batches of every codec and legacy messages (magic 0 and 1, plain and wrapped),
    with nulls, short (inlined) and long keys and values, and headers."""
    log = bytearray()
    base = 0
    for magic, codec in kinds:
        builder = kcodec.BatchBuilder(compression=codec, base_offset=base, magic=magic)
        for i in range(30):
            value = None if i % 7 == 3 else b"v%d-" % (base + i) * (i % 5 * 9)
            key = None if i % 4 == 1 else b"key %d" % i * (i % 3 * 4)
            headers = [("h", b"%d" % i)] if magic == 2 and i % 2 else []
            builder.append(value, key=key, timestamp=TS + i, headers=headers)
        log += builder.build()
        base += 30
    return bytes(log)


def batch_of_section(header: bytes, section: bytes, codec: str, count: int,
                      base_offset: int) -> bytes:
    """``header`` (an uncompressed v2 batch's first 61 bytes) made a batch of the records
    section ``section``, compressed with ``codec``, of ``count`` records."""
    batch = bytearray(header) + section
    batch[0:8] = base_offset.to_bytes(8, "big")
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    batch[22] |= int(kcodec.Compression[codec.upper()])
    batch[57:61] = count.to_bytes(4, "big")
    batch[17:21] = kcodec.crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


def batch_of_values(base: int, values: list[bytes]) -> bytes:
    builder = kcodec.BatchBuilder(base_offset=base)
    for i, value in enumerate(values):
        builder.append(value, key=b"k%d" % i, timestamp=1000 + i)
    return builder.build()


def transactional_batch(pid: int, base: int, *values: bytes, timestamp: int = TS) -> bytes:
    """A transactional batch of producer ``pid`` (epoch 0) holding ``values``."""
    b = kcodec.BatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0,
                            base_sequence=0, is_transactional=True)
    for value in values:
        b.append(value, timestamp=timestamp)
    return b.build()


def txn_marker(kind: ControlType, pid: int, offset: int, timestamp: int = TS) -> bytes:
    """The COMMIT or ABORT marker of producer ``pid``'s transaction, at ``offset``."""
    return kcodec.BatchBuilder.end_txn_marker(kind, producer_id=pid, producer_epoch=0,
                                              coordinator_epoch=0, base_offset=offset,
                                              timestamp=timestamp)


def transactional_log() -> bytes:
    """pid 1 commits offsets 0-1, pid 2 aborts 2-3, plain data at 6."""
    plain = kcodec.BatchBuilder(base_offset=6)
    plain.append(b"plain", timestamp=TS)
    return (transactional_batch(1, 0, b"p1-a", b"p1-b")
            + transactional_batch(2, 2, b"p2-a", b"p2-b")
            + txn_marker(ControlType.COMMIT, 1, 4) + txn_marker(ControlType.ABORT, 2, 5)
            + plain.build())
