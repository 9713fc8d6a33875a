"""KRaft's control records, types 2 to 6 (leader change, snapshot header and footer, KRaft
version, voters): their values read as Kafka reads them, each at version 0 of its message
schema in the flexible encoding (compact arrays and strings, tagged fields), into the
fields, names and order of Kafka's JSON form of the message (what kafka-dump-log prints).
Unknown tagged fields are read past and left out, as Kafka's JSON leaves them out."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from kcodec._java_text import ERRORS as JAVA_ERRORS
from kcodec.constants import ControlType
from kcodec.errors import CorruptRecordError

_MAX_STRING = 0x7FFF   # Kafka refuses a longer string field ("had invalid length")

#: What kafka-dump-log prints before each type's JSON.
DUMP_LABELS = {ControlType.LEADER_CHANGE: "LeaderChange:", ControlType.SNAPSHOT_HEADER: "SnapshotHeader",
               ControlType.SNAPSHOT_FOOTER: "SnapshotFooter", ControlType.KRAFT_VERSION: "KRaftVersion",
               ControlType.KRAFT_VOTERS: "KRaftVoters"}


class _Fields:
    """The flexible-version readers over one value; a short or malformed value raises
    CorruptRecordError at the byte of the value where reading stopped (its ``position``)."""

    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.at, self.what = data, 0, what

    def fail(self, problem: str) -> CorruptRecordError:
        return CorruptRecordError(f"{self.what}: {problem}, in its {len(self.data)}-byte value",
                                  position=self.at)

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.at:
            raise self.fail(f"{n} bytes to read but {len(self.data) - self.at} left")
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def signed(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big", signed=True)

    def uint16(self) -> int:
        return int.from_bytes(self.take(2), "big")

    def uvarint(self) -> int:
        """An unsigned varint of at most five bytes, as a Java int (Kafka's reader)."""
        value = 0
        for shift in range(0, 35, 7):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                value &= 0xFFFFFFFF
                return value - (1 << 32) if value >= 1 << 31 else value
        raise self.fail("a varint longer than five bytes")

    def length(self, field: str) -> int:
        """A compact array's or string's length; Kafka's fields here are never null."""
        n = self.uvarint() - 1
        if n < 0:
            raise self.fail(f"the non-nullable field {field} serialized as null")
        if n > len(self.data) - self.at:
            raise self.fail(f"{field} of {n} entries or bytes with {len(self.data) - self.at} left")
        return n

    def string(self, field: str) -> str:
        n = self.length(field)
        if n > _MAX_STRING:
            raise self.fail(f"the string field {field} of invalid length {n}")
        return self.take(n).decode("utf-8", JAVA_ERRORS)

    def uuid(self) -> str:
        """A UUID as Kafka prints one: URL-safe base64 of its 16 bytes, unpadded."""
        return base64.urlsafe_b64encode(self.take(16)).rstrip(b"=").decode("ascii")

    def array(self, field: str, item: Callable[[], dict[str, Any]]) -> list[dict[str, Any]]:
        return [item() for _ in range(self.length(field))]

    def end_struct(self) -> None:
        """A struct's tagged fields: none is known at version 0, so each is read past."""
        for _ in range(self.uvarint()):
            self.uvarint()
            size = self.uvarint()
            if size < 0:
                raise self.fail("a tagged field of negative size")
            self.take(size)


_ZERO_UUID = "A" * 22   # Kafka's Uuid.ZERO_UUID, printed


def _leader_change(f: _Fields) -> dict[str, Any]:
    def voter() -> dict[str, Any]:
        out = {"voterId": f.signed(4)}
        f.end_struct()
        return out
    version, leader = f.signed(2), f.signed(4)
    voters, granting = f.array("voters", voter), f.array("grantingVoters", voter)
    if version >= 1:   # read at version 0, printed at the message's version, which adds
        for fields in (*voters, *granting):   # a field Kafka did not read: zero
            fields["voterDirectoryId"] = _ZERO_UUID
    return {"version": version, "leaderId": leader, "voters": voters, "grantingVoters": granting}


def _snapshot_header(f: _Fields) -> dict[str, Any]:
    return {"version": f.signed(2), "lastContainedLogTimestamp": f.signed(8)}


def _snapshot_footer(f: _Fields) -> dict[str, Any]:
    return {"version": f.signed(2)}


def _kraft_version(f: _Fields) -> dict[str, Any]:
    return {"version": f.signed(2), "kRaftVersion": f.signed(2)}


def _voters(f: _Fields) -> dict[str, Any]:
    def endpoint() -> dict[str, Any]:
        out = {"name": f.string("name"), "host": f.string("host"), "port": f.uint16()}
        f.end_struct()
        return out

    def voter() -> dict[str, Any]:
        out: dict[str, Any] = {"voterId": f.signed(4), "voterDirectoryId": f.uuid(),
                               "endpoints": f.array("endpoints", endpoint)}
        feature = {"minSupportedVersion": f.signed(2), "maxSupportedVersion": f.signed(2)}
        f.end_struct()
        out["kRaftVersionFeature"] = feature
        f.end_struct()
        return out
    return {"version": f.signed(2), "voters": f.array("voters", voter)}


_READERS = {ControlType.LEADER_CHANGE: _leader_change, ControlType.SNAPSHOT_HEADER: _snapshot_header,
            ControlType.SNAPSHOT_FOOTER: _snapshot_footer, ControlType.KRAFT_VERSION: _kraft_version,
            ControlType.KRAFT_VOTERS: _voters}


def read_kraft_control(control_type: ControlType, value: bytes | None,
                       offset: int | None = None) -> dict[str, Any]:
    """The fields of a KRaft control record's value, named as in Kafka's JSON form of the
    message (``{"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], ...}``). Bytes
    after the message are ignored, as Kafka ignores them. ``offset``, the record's, only
    names it in errors. Raises ValueError for a type that is not KRaft's (ABORT, COMMIT,
    unknown) and CorruptRecordError for a value Kafka could not read, its ``position`` the
    byte of the value where reading stopped."""
    read = _READERS.get(control_type)
    if read is None:
        raise ValueError(f"{control_type!r} is not a KRaft control record type")
    what = f"the {control_type.name} control record" + (f" at offset {offset}" if offset is not None else "")
    fields = _Fields(bytes(value or b""), what)
    message = read(fields)
    fields.end_struct()
    return message


def kafka_json(value: Any) -> str:
    """``value`` (dicts, lists, str, int) as Kafka's JSON converters print it through
    Jackson: no spaces, non-ASCII as it is, control characters escaped with upper-case
    hex (``\\u001F``)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_string(k)}:{kafka_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(kafka_json(v) for v in value) + "]"
    if isinstance(value, str):
        return _json_string(value)
    return str(int(value))


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n",
                  "\r": "\\r", "\t": "\\t"}


def _json_string(text: str) -> str:
    return '"' + "".join(_SHORT_ESCAPES.get(c) or (f"\\u{ord(c):04X}" if c < " " else c)
                         for c in text) + '"'


__all__ = ["DUMP_LABELS", "kafka_json", "read_kraft_control"]
