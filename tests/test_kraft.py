"""KRaft's control records (kcodec.kraft) and KRaft snapshots in ``kcodec dump``: values
written here byte by byte from Kafka's message schemas (version 0, flexible encoding)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kcodec
from kcodec.cli import main
from kcodec.constants import ControlType
from kcodec.errors import CorruptRecordError
from kcodec.kraft import read_kraft_control

from .conftest import shared_path

TS = 1700000000000
UUID = bytes(range(16))   # printed by Kafka as URL-safe base64, unpadded

# (type, value, the JSON Kafka's converter writes for it)
SNAPSHOT_HEADER = (ControlType.SNAPSHOT_HEADER, bytes.fromhex("0000" "0000018bcfe56800" "00"),
                   {"version": 0, "lastContainedLogTimestamp": TS})
SNAPSHOT_FOOTER = (ControlType.SNAPSHOT_FOOTER, bytes.fromhex("0000" "00"), {"version": 0})
KRAFT_VERSION = (ControlType.KRAFT_VERSION, bytes.fromhex("0000" "0001" "00"),
                 {"version": 0, "kRaftVersion": 1})
LEADER_CHANGE = (ControlType.LEADER_CHANGE,
                 bytes.fromhex("0000" "00000002"            # version, leaderId 2
                               "03" "00000001" "00" "00000002" "00"  # voters [1, 2], tags
                               "02" "00000002" "00"          # grantingVoters [2]
                               "00"),                        # the message's tagged fields
                 {"version": 0, "leaderId": 2, "voters": [{"voterId": 1}, {"voterId": 2}],
                  "grantingVoters": [{"voterId": 2}]})
VOTERS = (ControlType.KRAFT_VOTERS,
          bytes.fromhex("0000" "02" "00000003") + UUID
          + bytes.fromhex("02" "0b") + b"CONTROLLER" + b"\x0a" + b"localhost"
          + bytes.fromhex("2385" "00"                        # port 9093, endpoint's tags
                          "0000" "0001" "00"                 # kRaftVersionFeature 0..1, tags
                          "00" "00"),                        # the voter's, the message's tags
          {"version": 0, "voters": [{"voterId": 3, "voterDirectoryId": "AAECAwQFBgcICQoLDA0ODw",
                                     "endpoints": [{"name": "CONTROLLER", "host": "localhost",
                                                    "port": 9093}],
                                     "kRaftVersionFeature": {"minSupportedVersion": 0,
                                                             "maxSupportedVersion": 1}}]})
CASES = [SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, LEADER_CHANGE, VOTERS]


@pytest.mark.parametrize(("control", "value", "expected"), CASES, ids=lambda c: getattr(c, "name", ""))
def test_each_kraft_type_reads_as_kafkas_json(control: ControlType, value: bytes,
                                              expected: dict[str, object]) -> None:
    assert read_kraft_control(control, value) == expected
    # unknown tagged fields are read past; bytes after the message are ignored, as by Kafka
    tagged = value[:-1] + bytes.fromhex("01" "05" "02" "abcd") + b"trailing"
    assert read_kraft_control(control, tagged) == expected


@pytest.mark.parametrize(("control", "value", "expected"), CASES, ids=lambda c: getattr(c, "name", ""))
def test_a_short_value_is_corrupt_never_an_index_error(control: ControlType, value: bytes,
                                                       expected: object) -> None:
    for cut in range(len(value)):
        with pytest.raises(CorruptRecordError, match=f"{control.name} control record at offset 9"):
            read_kraft_control(control, value[:cut], offset=9)


def test_malformed_values() -> None:
    with pytest.raises(CorruptRecordError, match="non-nullable field voters serialized as null"):
        read_kraft_control(ControlType.LEADER_CHANGE, bytes.fromhex("0000 00000001 00"))
    with pytest.raises(CorruptRecordError, match="of 1000 entries or bytes with 0 left") as caught:
        read_kraft_control(ControlType.LEADER_CHANGE, bytes.fromhex("0000 00000001 e907"))
    assert caught.value.position == 8   # the value's byte where reading stopped
    with pytest.raises(CorruptRecordError, match="longer than five bytes"):
        read_kraft_control(ControlType.SNAPSHOT_FOOTER, bytes.fromhex("0000 ffffffffff01"))
    with pytest.raises(ValueError, match="not a KRaft control record type"):
        read_kraft_control(ControlType.COMMIT, b"\0\0\0\0\0\0")


def snapshot(directory: Path, name: str) -> Path:
    """A KRaft snapshot as the controller writes one: a header control batch, data, a
    footer control batch, with the version and voters records of a KIP-853 quorum."""
    header = kcodec.BatchBuilder(is_control=True, base_offset=0)
    for offset, (control, value, _) in enumerate([SNAPSHOT_HEADER, KRAFT_VERSION, VOTERS]):
        header.append_control_record(b"\0\0" + control.to_bytes(2, "big"), value, timestamp=TS)
    data = kcodec.BatchBuilder(base_offset=3)
    data.append(b"\x01\x0c\x00", b"metadata", timestamp=TS)
    footer = kcodec.BatchBuilder(is_control=True, base_offset=4)
    footer.append_control_record(b"\0\0\0\4", SNAPSHOT_FOOTER[1], timestamp=TS)
    path = directory / name
    path.write_bytes(header.build() + data.build() + footer.build())
    return path


def test_dump_prints_a_kraft_snapshot_as_kafka_dump_log(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = snapshot(tmp_path, "00000000000000000005-0000000002.checkpoint")
    assert main(["dump", "--deep-iteration", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [f"Dumping {path}", "Snapshot end offset: 5, epoch: 2"]
    records = [line for line in lines if line.startswith("|")]
    texts = [json.dumps(expected, separators=(",", ":")) for _, _, expected in
             (SNAPSHOT_HEADER, KRAFT_VERSION, VOTERS)]
    assert records[0].endswith(" headerKeys: [] SnapshotHeader " + texts[0])
    assert records[1].endswith(" headerKeys: [] KRaftVersion " + texts[1])
    assert records[2].endswith(" headerKeys: [] KRaftVoters " + texts[2])
    assert records[3].endswith(" headerKeys: []")
    assert records[4].endswith(' headerKeys: [] SnapshotFooter {"version":0}')
    # a directory names its snapshots too; the bootstrap snapshot has its own line
    boot = snapshot(tmp_path, "bootstrap.checkpoint")
    assert main(["dump", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[out.index(f"Dumping {boot}") + 1] == "KRaft bootstrap snapshot"
    assert f"Dumping {path}" in out
    assert main(["dump", "--json", "--deep-iteration", str(path)]) == 0
    document = json.loads(capsys.readouterr().out)
    first = document["batches"][0]["records"][0]
    assert first["control_type"] == "SNAPSHOT_HEADER"
    assert first["control_record"] == SNAPSHOT_HEADER[2]


def test_dump_names_a_broken_kraft_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = kcodec.BatchBuilder(is_control=True, base_offset=6)
    first.append_control_record(b"\0\0\0\4", b"\0\0\0\1", timestamp=TS)   # SNAPSHOT_FOOTER
    batch = kcodec.BatchBuilder(is_control=True, base_offset=7)
    batch.append_control_record(b"\0\0\0\2", b"\0\0", timestamp=TS)   # LEADER_CHANGE, cut short
    log = tmp_path / "00000000000000000006.log"
    log.write_bytes(first.build() + batch.build())
    for json_output in ([], ["--json"]):
        assert main(["dump", "--deep-iteration", *json_output, str(log)]) == 1
        error = capsys.readouterr().err
        assert "LEADER_CHANGE control record at offset 7" in error and str(log) in error
        # the byte of the value where reading stopped, and the batch's byte in the file
        assert "at byte 2 of it, in the batch (at byte 76)" in error


def test_real_cluster_metadata_leader_changes() -> None:
    directory = shared_path("testdata", "kafka-segments", "fuzibotond__Experts-in-team-innovation",
                            "__cluster_metadata-0")
    seen = 0
    for batch in kcodec.read_batches((directory / "00000000000000000000.log").read_bytes()):
        for record in batch if batch.is_control else ():
            assert record.control_type is not None
            fields = read_kraft_control(record.control_type, record.value, record.offset)
            assert fields["version"] == 0 and set(fields) >= {"leaderId", "voters"}
            seen += 1
    assert seen


def test_a_leader_change_of_a_later_version_prints_the_field_kafka_adds() -> None:
    """Kafka reads the value at version 0 and prints it at its Version field's version:
    from 1 on, each voter with the (unread, zero) directory id."""
    value = bytearray(LEADER_CHANGE[1])
    value[1] = 1
    fields = read_kraft_control(ControlType.LEADER_CHANGE, bytes(value))
    assert fields["version"] == 1
    assert fields["voters"][0] == {"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"}
    assert fields["grantingVoters"] == [{"voterId": 2, "voterDirectoryId": "A" * 22}]


def test_kafka_json_escapes_as_jackson() -> None:
    from kcodec.kraft import kafka_json
    assert kafka_json({"host": 'a"\\\n\t\x1f\x0bé', "port": 9093, "list": [{"x": -1}]}) == (
        '{"host":"a\\"\\\\\\n\\t\\u001F\\u000Bé","port":9093,"list":[{"x":-1}]}')
