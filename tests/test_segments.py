"""kcodec.segments and the command line, on real broker segments and written ones."""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kcodec
from kcodec import segments
from kcodec.cli import build_parser, main
from kcodec.dump import batch_json, batch_line, write_json

from .columnar_rows import transactional_batch, txn_marker
from .conftest import real_segments, shared_path, write_transactional_partition

TS = 1700000000000


def partition_dirs() -> list[Path]:
    return sorted({p.parent for p in real_segments()})


@pytest.mark.parametrize("directory", partition_dirs(), ids=lambda p: p.name)
def test_real_partitions(directory: Path) -> None:
    with segments.Partition(directory) as partition:
        assert partition.topic and partition.partition >= 0
        for segment in partition.segments:
            direct = [(b.position, b.last_offset) for b in kcodec.read_batches(
                segment.path.read_bytes())]
            assert [(b.position, b.last_offset) for b in segment.batches()] == direct
            assert segment.verify_indexes() == []
            for entry in segment.index:
                assert entry.position in {p for p, _ in direct}


def test_segment_with_non_zero_base_offset() -> None:
    directory = shared_path("testdata", "kafka-segments", "silvagois__project_data_enginnering",
                            "__consumer_offsets-11")
    with segments.Partition(directory) as partition:
        (segment,) = partition.segments
        assert segment.base_offset == 1 and segment.index == []
        assert segment.time_index == [segments.TimeIndexEntry(1625619544680, 8)]
        assert [b.base_offset for b in partition.batches(start_offset=5)][:2] == [5, 6]


def test_seek_by_offset_and_time_with_the_indexes() -> None:
    directory = shared_path("testdata", "kafka-segments", "hafizhkusuma__BigData-Project1Kafka",
                            "sensor-suhu-0")
    with segments.Partition(directory) as partition:
        (segment,) = partition.segments
        assert len(segment.index) > 50
        first = next(segment.seek(2000))
        assert first.base_offset <= 2000 <= first.last_offset
        assert segment.position_of(2000) <= first.position + segment.position_of(2000)
        target = segment.time_index[10]
        offset = segment.offset_for_time(target.timestamp)
        assert offset is not None and offset <= target.offset
        assert segment.offset_for_time(10**15) is None
    # the first record reaching the timestamp, as FileRecords.searchForTimestamp finds it,
    # also inside a batch whose first records are earlier
    directory = shared_path("testdata", "kafka-segments", "fuzibotond__Experts-in-team-innovation",
                            "sensor-data-topic-0")
    with segments.Partition(directory) as partition:
        (segment,) = partition.segments
        batches = list(segment.batches())
        moments = sorted({r.timestamp + d for b in batches[:40] for r in b for d in (0, 1)})
        inside = 0
        for moment in moments:
            expected = next((r.offset for b in batches if b.max_timestamp >= moment
                             for r in b if r.timestamp >= moment), None)
            assert segment.offset_for_time(moment) == expected
            inside += any(b.base_offset < (expected or -1) <= b.last_offset for b in batches)
        assert inside


def test_seeking_positions_are_the_logs_and_a_damaged_index_is_passed_over(
        tmp_path: Path) -> None:
    """Batches and errors met after a seek give their byte in the log (and, through a
    partition, the segment); an index entry that points at no batch (past the log, before
    it, inside a batch) is passed over for an earlier one, as Kafka rebuilds such an index,
    so no record is lost."""
    source = shared_path("testdata", "kafka-segments", "hafizhkusuma__BigData-Project1Kafka",
                         "sensor-suhu-0")
    directory = Path(shutil.copytree(source, tmp_path / "sensor-suhu-0"))
    log = directory / "00000000000000000000.log"
    entries = segments.read_offset_index(log.with_suffix(".index"), 0)
    entry = entries[5]
    with segments.Segment(log) as segment:
        expected = [(b.position, b.last_offset) for b in segment.batches()
                    if b.last_offset >= entry.offset + 10]
        assert [(b.position, b.last_offset) for b in segment.seek(entry.offset + 10)] == expected
    index = bytearray(log.with_suffix(".index").read_bytes())
    for position in (log.stat().st_size + 100, -61, 7, entries[20].position):
        index[8 * 5 + 4:8 * 5 + 8] = position.to_bytes(4, "big", signed=True)
        log.with_suffix(".index").write_bytes(index)
        with segments.Partition(directory) as partition:
            (segment,) = partition.segments
            assert segment.position_of(entry.offset + 10) == entries[4].position
            got = [(b.position, b.last_offset) for b in partition.batches(entry.offset + 10)]
            assert got == expected
    damaged = bytearray(log.read_bytes())
    damaged[entry.position + 16] = 9   # a magic no batch has
    log.write_bytes(damaged)
    with segments.Partition(directory) as partition:
        with pytest.raises(kcodec.errors.CorruptRecordError) as caught:
            list(partition.batches(start_offset=entry.offset))
    assert caught.value.position == entry.position
    assert caught.value.__notes__ == [f"in {log}"]


def test_index_entries_by_first_offset_are_used_as_they_are(tmp_path: Path) -> None:
    """Brokers before 2.0 keyed an index entry by the first offset of what they appended;
    such an entry points at a batch starting at its offset and is used, as Kafka's
    OffsetIndex.lookup uses it."""
    batches = []
    for base in range(0, 2000, 10):
        builder = kcodec.BatchBuilder(base_offset=base)
        for i in range(10):
            builder.append(b"x" * 100, timestamp=TS + base + i)
        batches.append(builder.build())
    log = segments.write_partition(tmp_path / "t-0", batches) / "00000000000000000000.log"
    with segments.Segment(log) as segment:
        starts = {b.position: b.base_offset for b in segment.batches()}
        keyed = b"".join((starts[e.position]).to_bytes(4, "big") + e.position.to_bytes(4, "big")
                         for e in segment.index)
    log.with_suffix(".index").write_bytes(keyed)
    with segments.Segment(log) as segment:
        last = segment.index[-1]
        assert last.offset == starts[last.position]
        assert segment.position_of(last.offset + 5) == last.position
        assert segment.verify_indexes() == []


def test_a_time_lookup_passing_over_damage_reads_each_batch_whole(tmp_path: Path) -> None:
    """A batch whose first records reach the time but whose later ones cannot be read is
    passed over whole, as a reader that drops damaged batches drops it."""
    def batch(base: int, ts: int, n: int = 2) -> bytearray:
        builder = kcodec.BatchBuilder(base_offset=base)
        for i in range(n):
            builder.append(b"v%d" % (base + i), timestamp=ts + i)
        return bytearray(builder.build())
    damaged = batch(2, TS + 500, 3)
    damaged[57:61] = (4).to_bytes(4, "big")   # four records said, three there
    damaged[17:21] = kcodec.crc32c(bytes(damaged[21:])).to_bytes(4, "big")
    directory = segments.write_partition(
        tmp_path / "t-0", [bytes(batch(0, TS + 100)), bytes(damaged), bytes(batch(5, TS + 150))])
    logs = sorted(directory.glob("*.log"))
    assert segments.offset_for_time(logs, TS + 400, skip_damaged=True) is None
    with pytest.raises(kcodec.errors.InvalidRecordError):
        segments.offset_for_time(logs, TS + 400)


def test_written_offsets_must_increase(tmp_path: Path) -> None:
    def batch(base: int) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base)
        builder.append(b"v", timestamp=TS)
        return builder.build()
    for bases in ([0, 1, 1 << 40, 3], [0, 5, 5]):
        with pytest.raises(kcodec.errors.InvalidRecordError, match="Out of order") as caught:
            segments.write_partition(tmp_path / "t-0", [batch(b) for b in bases])
        assert caught.value.position == len(batch(0)) * (len(bases) - 1)
        assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="segment_bytes"):
        segments.write_partition(tmp_path / "t-0", [batch(0)], segment_bytes=1 << 31)


def sample_log(n: int = 50, per_batch: int = 10) -> list[bytes]:
    out = []
    for start in range(0, n, per_batch):
        builder = kcodec.BatchBuilder(base_offset=start, compression="lz4")
        for i in range(start, start + per_batch):
            builder.append(b"value-%d" % i * 40, key=b"k%d" % i, timestamp=TS + i)
        out.append(builder.build())
    return out


def test_write_partition_and_read_back(tmp_path: Path) -> None:
    target = segments.write_partition(tmp_path / "events-0", sample_log(200),
                                      index_interval_bytes=200, segment_bytes=1500)
    with segments.Partition(target) as partition:
        assert (partition.topic, partition.partition) == ("events", 0)
        assert len(partition.segments) > 1
        assert [s.base_offset for s in partition.segments][0] == 0
        assert all(s.path.name == f"{s.base_offset:020d}.log" for s in partition.segments)
        assert all(s.index and s.verify_indexes() == [] for s in partition.segments[:-1])
        offsets = [r.offset for b in partition.batches() for r in b]
        assert offsets == list(range(200))
    with pytest.raises(FileExistsError):
        segments.write_partition(target, sample_log(10))


def test_a_partial_batch_ending_an_earlier_segment_is_damage(tmp_path: Path) -> None:
    """Kafka rolls a segment after whole batches only: a partial batch ending one that is
    not the partition's last is an error where the partition's readers reach it, and a
    read_committed read ends there, a marker past it closing nothing."""
    from kcodec import ControlType
    from kcodec.errors import CorruptRecordError
    plain = kcodec.BatchBuilder(base_offset=3)
    plain.append(b"plain", timestamp=TS)
    target = segments.write_partition(tmp_path / "t-0", [
        transactional_batch(1, 0, b"a", b"b"), txn_marker(ControlType.COMMIT, 1, 2),
        plain.build()], segment_bytes=1)   # a segment a batch
    first = target / f"{0:020d}.log"
    size = first.stat().st_size
    with first.open("ab") as log:
        log.write(plain.build()[:30])

    def read_until_error(runs: Any) -> tuple[list[int], CorruptRecordError]:
        offsets: list[int] = []
        with pytest.raises(CorruptRecordError) as caught:
            for run in runs:
                offsets += run
        return offsets, caught.value

    with segments.Partition(target) as partition:
        for start in (None, 0):
            offsets, error = read_until_error(
                [b.base_offset] for b in partition.batches(start_offset=start))
            assert offsets == [0]
            assert (error.position, error.__notes__) == (size, [f"in {first}"])
        offsets, error = read_until_error(
            c["offset"].tolist() for c in partition.iter_columns())
        assert offsets == [0, 1] and error.position == size
        offsets, error = read_until_error(
            c.column("offset").to_pylist() for c in partition.iter_arrow(read_committed=True))
        assert offsets == [] and error.position == size
    assert segments.first_damage(sorted(target.glob("*.log"))) == (0, size)


def two_record_batch(base: int) -> bytes:
    builder = kcodec.BatchBuilder(base_offset=base)
    builder.append(b"v%d" % base, timestamp=TS + base)
    builder.append(b"v%d" % (base + 1), timestamp=TS + base + 1)
    return builder.build()


def test_an_interrupted_swap_is_read_as_a_broker_completes_it(tmp_path: Path) -> None:
    """A broker stopped inside a segment swap (the cleaner's or a split's) leaves the new
    segment as .log.swap, the old ones renamed .deleted or not yet: it completes the swap
    at start-up (LogLoader), so the swapped-in segment is read in place of the segments
    whose base offsets lie in its offsets, with its own .swap indexes; a swap from the
    first .cleaned file's offset on (an unfinished split) is not."""
    target = segments.write_partition(tmp_path / "t-0", [two_record_batch(b) for b in (0, 2, 4)],
                                      segment_bytes=1)

    def name(base: int, suffix: str) -> Path:
        return target / f"{base:020d}{suffix}"
    name(0, ".log.swap").write_bytes(two_record_batch(0) + two_record_batch(2))
    second = len(two_record_batch(0))
    name(0, ".index.swap").write_bytes(struct.pack(">ii", 3, second))
    name(0, ".timeindex.swap").write_bytes(struct.pack(">qi", TS + 3, 3))
    name(0, ".txnindex.swap").write_bytes(segments.TXN_ENTRY.pack(0, 9, 1, 3, 1))
    name(2, ".txnindex").write_bytes(segments.TXN_ENTRY.pack(0, 8, 2, 3, 2))   # replaced
    for suffix in (".log", ".index", ".timeindex"):
        name(0, suffix).rename(name(0, suffix + ".deleted"))
    expected = [0, 1, 2, 3, 4, 5]
    with segments.Partition(target) as partition:
        assert [s.path.name for s in partition.segments] == [name(0, ".log.swap").name,
                                                             name(4, ".log").name]
        assert [r.offset for b in partition.batches() for r in b] == expected
        assert partition.segments[0].index == [segments.IndexEntry(3, second)]
        assert partition.segments[0].verify_indexes() == []   # (a .timeindex.swap's 12 B)
        assert [t.producer_id for t in partition.aborted_transactions()] == [9]
        assert [b.base_offset for b in partition.batches(start_offset=3)] == [2, 4]
    assert [o for c in segments.iter_partition_arrow(target)
            for o in c.column("offset").to_pylist()] == expected
    assert segments.segment_files(tmp_path) == [(target, [name(0, ".log.swap"), name(4, ".log")])]
    name(0, ".log.cleaned").write_bytes(b"")   # a split under way: its swaps are not taken
    with segments.Partition(target) as partition:
        assert [r.offset for b in partition.batches() for r in b] == [2, 3, 4, 5]


def test_zeros_past_a_preallocated_segments_data_end_it_as_a_partial_batch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """log.preallocate makes each new segment file its full size, zeros past the data, cut
    back when the segment closes: a broker stopped uncleanly leaves the zeros, which its
    recovery truncates as it truncates a partial batch. Readers end the log there (in the
    last segment; in any other it is damage); Kafka's framing of the file fails there, and
    so does kafka-dump-log, and so does dump."""
    from kcodec.errors import CorruptRecordError
    target = segments.write_partition(tmp_path / "t-0", [two_record_batch(b) for b in (0, 2)],
                                      segment_bytes=1)
    first, last = sorted(target.glob("*.log"))
    size = last.stat().st_size
    os.truncate(last, size + (64 << 20))   # (sparse, as a preallocated file is)
    with segments.Partition(target) as partition:
        assert [r.offset for b in partition.batches() for r in b] == [0, 1, 2, 3]
        assert partition.segments[-1].partial_tail() == (size, 64 << 20)
    assert sum(c.num_rows for c in segments.iter_partition_arrow(target)) == 4
    assert main(["stats", "--json", str(target)]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"][str(target)]["trailing_bytes"] == 64 << 20
    with pytest.raises(CorruptRecordError, match="Record size 0"):
        list(kcodec.read_batches(last.read_bytes(), log_file=True))
    assert main(["dump", str(last)]) == 1
    assert "Record size 0" in capsys.readouterr().err
    os.truncate(first, first.stat().st_size + 100)
    with pytest.raises(CorruptRecordError, match="not its partition's last"):
        list(segments.iter_partition_arrow(target))


def test_a_segment_named_alone_is_read_committed_as_its_partition(tmp_path: Path) -> None:
    """A transaction whose marker lies in a later segment is committed for a read of its
    own segment too; a partition's damage before a segment named ends the read first."""
    from kcodec import ControlType
    from kcodec.errors import CorruptRecordError
    from kcodec.export import export_segments
    target = segments.write_partition(tmp_path / "t-0", [
        transactional_batch(7, 0, b"a", b"b"), two_record_batch(2),
        txn_marker(ControlType.COMMIT, 7, 4)], segment_bytes=160)
    first, last = sorted(target.glob("*.log"))
    for read_committed in (False, True):
        assert [o for c in segments.iter_partition_arrow(target, [first],
                                                         read_committed=read_committed)
                for o in c.column("offset").to_pylist()] == [0, 1, 2, 3]
    summary = export_segments([first], tmp_path / "out.parquet", read_committed=True)
    assert summary.records == 4
    with first.open("ab") as log:
        log.write(b"\1" * 20)   # damage: the partition ends here
    with pytest.raises(CorruptRecordError, match="ends in damage here") as caught:
        list(segments.iter_partition_arrow(target, [last]))
    assert caught.value.__notes__ == [f"in {first}"]


def test_a_transaction_needs_a_producer_id_to_be_open(tmp_path: Path) -> None:
    """A broker keeps producer state, and so its last stable offset, from batches with a
    producer id only: a transactional batch without one opens nothing."""
    orphan = kcodec.BatchBuilder(is_transactional=True)
    orphan.append(b"a", timestamp=TS)
    target = segments.write_partition(tmp_path / "t-0", [orphan.build(), two_record_batch(1)])
    assert segments.last_stable_offset(sorted(target.glob("*.log"))) is None
    assert [o for c in segments.iter_partition_arrow(target, read_committed=True)
            for o in c.column("offset").to_pylist()] == [0, 1, 2]


def test_index_entries_below_a_wrapper_decompress_it_once_within_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Entries of a damaged (or pre-2.0) index whose offset lies below a compressed legacy
    wrapper's last need its first offset: the wrapper is decompressed once, within the
    reader's limit, however many entries point at it; entries at or past its last offset
    need no decompressing."""
    wrapper = kcodec.BatchBuilder(magic=1, compression="gzip", base_offset=100)
    for i in range(100):
        wrapper.append(b"x" * 1000, timestamp=TS, offset=100 + i)
    target = segments.write_partition(tmp_path / "t-0", [wrapper.build()])
    log = target / f"{100:020d}.log"
    (target / f"{100:020d}.index").write_bytes(struct.pack(">ii", -95, 0) * 50)
    limited = []
    real = kcodec.read_batches

    def counting(*args: Any, **options: Any) -> Any:
        limited.append(options.get("max_decompressed_size"))
        return real(*args, **options)
    monkeypatch.setattr(segments, "read_batches", counting)
    with segments.Segment(log) as segment:
        assert segment.position_of(300, max_decompressed_size=1000) == 0   # (passed over)
        assert limited.count(1000) == 1
        assert segment.position_of(300, max_decompressed_size=1000) == 0
        assert limited.count(1000) == 1   # (decided once for that limit)
        assert segment.points_at_batch(segments.IndexEntry(150, 0))   # (no limit: it is)
        assert segment.points_at_batch(segments.IndexEntry(199, 0))
    with segments.Partition(target) as partition:
        assert sum(b.record_count for b in partition.batches(start_offset=150,
                                                              validate_crc=False)) == 100


def test_topic_names_as_kafka_validates_them() -> None:
    for topic in ("orders", "a.b_c-1", "x" * 249):
        segments.check_topic(topic)
    for topic, reason in [("", "the empty string is not allowed"), (".", "'.' is not allowed"),
                          ("x" * 250, "longer than the max allowed length 249"),
                          ("\U0001f600" * 125, "longer than"),   # (Java counts UTF-16 units)
                          ("orders\n", "contains one or more characters other than"),
                          ("../x", "contains one or more"), ("é", "contains one or more")]:
        with pytest.raises(ValueError, match=f"(?s)Topic name is invalid: .*{re.escape(reason)}"):
            segments.check_topic(topic)


def test_write_partition_rolls_and_indexes_as_a_broker(tmp_path: Path) -> None:
    """A segment rolls where an offset would lie past an int32 from its base, and magic-0
    messages (no timestamps) leave the time index empty, as TimeIndex.maybeAppend does."""
    def batch(base: int) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base)
        builder.append(b"v", timestamp=TS)
        return builder.build()
    far = segments.write_partition(tmp_path / "far-0", [batch(0), batch(3_000_000_000)])
    with segments.Partition(far) as partition:
        assert [s.base_offset for s in partition.segments] == [0, 3_000_000_000]
        assert [r.offset for b in partition.batches() for r in b] == [0, 3_000_000_000]
    old = kcodec.BatchBuilder(magic=0)
    for i in range(200):
        old.append(b"value %d" % i * 10)
    v0 = segments.write_partition(tmp_path / "v0-0", segments.split_entries(old.build()),
                                  index_interval_bytes=500)
    with segments.Partition(v0) as partition:
        (segment,) = partition.segments
        assert segment.index and segment.time_index == []


def test_an_empty_last_segment_holds_the_log_end_offset(tmp_path: Path) -> None:
    """As Kafka's log end offset is an empty last segment's base offset (rolled, cleaned,
    or emptied by retention), write_partition writes one on request and convert keeps it."""
    written = segments.write_partition(tmp_path / "in" / "t-0", sample_log(20),
                                       log_end_offset=100)
    assert sorted(p.name for p in written.glob("*.log"))[-1] == "00000000000000000100.log"
    assert (written / "00000000000000000100.log").stat().st_size == 0
    emptied = segments.write_partition(tmp_path / "in" / "u-0", [], log_end_offset=500)
    assert [p.name for p in emptied.glob("*.log")] == ["00000000000000000500.log"]
    assert main(["convert", str(tmp_path / "in"), str(tmp_path / "out"),
                 "--compression", "gzip"]) == 0
    for name in ("t-0", "u-0"):
        assert (sorted(p.name for p in (tmp_path / "out" / name).iterdir())
                == sorted(p.name for p in (tmp_path / "in" / name).iterdir()))
    for end in (19, -1, 2**63):
        with pytest.raises(ValueError, match="log_end_offset must be"):
            segments.write_partition(tmp_path / "bad-0", sample_log(20), log_end_offset=end)
    assert not (tmp_path / "bad-0").exists()


def test_the_longest_names_kafka_allows(tmp_path: Path) -> None:
    """A topic of 249 characters (Kafka's most): the partition's directory, 251, is written
    aside under a name kept within a file name's 255 bytes."""
    target = segments.write_partition(tmp_path / ("t" * 249 + "-0"), sample_log(10))
    with segments.Partition(target) as partition:
        assert partition.topic == "t" * 249
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_partition_named_as_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Named "." or "..", a partition keeps its directory's name: convert writes it to
    DEST/<topic>-<partition>, as when named by its path."""
    source = segments.write_partition(tmp_path / "logs" / "t-3", sample_log(10))
    monkeypatch.chdir(source)
    assert segments.partition_of(".") == ("t", 3)
    with segments.Partition(".") as partition:
        assert (partition.topic, partition.partition) == ("t", 3)
    assert main(["convert", ".", str(tmp_path / "a"), "--compression", "zstd"]) == 0
    (source / "sub").mkdir()
    monkeypatch.chdir(source / "sub")
    assert main(["convert", "..", str(tmp_path / "b")]) == 0
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["t-3"]
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["t-3"]


def test_sigterm_is_an_interrupt(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM (kill, timeout, a container stopping) during a write ends as Ctrl-C does:
    status 143, one line, nothing left behind; the handler before is restored."""
    def terminated(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
    monkeypatch.setattr(segments._SegmentBeingWritten, "finish", terminated)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["gen", str(tmp_path / "out"), "--partitions", "1", "--records", "10"]) == 143
    assert capsys.readouterr().err == "kcodec: terminated\n"
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is before


def test_interrupted_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "in.log"
    data = b"".join(sample_log(30))
    source.write_bytes(data)
    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "rename", fail)
    with pytest.raises(OSError):
        segments.write_partition(tmp_path / "out-0", segments.split_entries(source.read_bytes()))
    assert not (tmp_path / "out-0").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.log"]  # no staging left
    assert source.read_bytes() == data


KILL_SCRIPT = """
import sys, kcodec
from kcodec import segments
def batches():
    for i in range(100000):
        b = kcodec.BatchBuilder(base_offset=i)
        b.append(b"x" * 1000, timestamp=1)
        yield b.build()
        if i == 2000:
            print("writing", flush=True)
segments.write_partition(sys.argv[1], batches(), segment_bytes=1 << 20)
"""


def test_killed_write_leaves_no_partition(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(tmp_path / "t-0")],
                            stdout=subprocess.PIPE, text=True, cwd=os.path.dirname(__file__))
    assert proc.stdout is not None and proc.stdout.readline().strip() == "writing"
    proc.kill()
    proc.wait()
    proc.stdout.close()
    assert not (tmp_path / "t-0").exists()


# ---- kafka-dump-log's format (FORMAT.md §9.7), built by hand ---------------------------------

def test_dump_golden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from .conftest import VECTORS
    log = tmp_path / "00000000000000000005.log"
    log.write_bytes(VECTORS["v2_commit_marker"] + VECTORS["v2_one"][:40])
    assert main(["dump", "--deep-iteration", str(log)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Dumping {log}",
        "Log starting offset: 5",
        "baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 "
        "producerEpoch: 5 partitionLeaderEpoch: 3 isTransactional: true isControl: true "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 78 "
        "magic: 2 compresscodec: none crc: 1087706345 isvalid: true",
        "| offset: 5 CreateTime: 1700000000000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 7",
        f"Found 40 invalid bytes at the end of {log.name}",
    ]
    legacy = tmp_path / "00000000000000000000.log"
    legacy.write_bytes(VECTORS["v1_one"] + VECTORS["v2_one"])
    assert main(["dump", "--print-data-log", str(legacy)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == ("offset: 0 position: 0 CreateTime: 1700000000000 size: 36 magic: 1 "
                        "compresscodec: none crc: 958827571 isvalid: true")
    assert lines[3] == ("| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 "
                        "isValid: true crc: 958827571} key: k payload: v")
    assert lines[5] == ("| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 1 "
                        "sequence: -1 headerKeys: [h] key: k payload: v")


def test_dump_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from .conftest import VECTORS
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(VECTORS["v2_one"] + VECTORS["v2_two_nullkey"])
    assert main(["dump", "--print-data-log", "--skip-record-metadata", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == "| key: k payload: v" and lines[5] == " payload: a"
    assert main(["dump", "--max-bytes", "100", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("baseOffset: 0")


def test_dump_prints_each_inner_message_and_control_type(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A wrapper's records carry their inner messages' CRCs; control records print their
    type, not their key and value (as kafka-dump-log), those other than the transaction
    markers with their type id; an empty time index prints no line."""
    from kcodec import ControlType
    builder = kcodec.BatchBuilder(magic=1, compression="gzip")
    builder.append(b"v0", key=b"k0", timestamp=TS)
    builder.append(b"v1", key=b"k1", timestamp=TS + 1)
    data = builder.build()
    (wrapper,) = kcodec.read_batches(data)
    inner = list(kcodec.read_batches(gzip.decompress(wrapper.value or b"")))
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(data)
    assert main(["dump", "--deep-iteration", str(log)]) == 0
    records = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert [line.rsplit("crc: ", 1)[1] for line in records] == [f"{m.crc}}}" for m in inner]
    assert inner[0].crc != wrapper.crc
    commit = kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=7,
                                                producer_epoch=0, coordinator_epoch=3,
                                                base_offset=0, timestamp=TS)
    log.write_bytes(commit)
    assert main(["dump", "--deep-iteration", "--print-data-log", str(log)]) == 0
    (record,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert record.endswith(" endTxnMarker: COMMIT coordinatorEpoch: 3")   # no key, no payload
    unknown = kcodec.BatchBuilder(is_control=True, base_offset=0)
    unknown.append_control_record(b"\0\0\0\7", b"\0\0", timestamp=TS)   # version 0, type 7
    log.write_bytes(unknown.build())
    assert main(["dump", "--deep-iteration", str(log)]) == 0
    assert capsys.readouterr().out.splitlines()[3].endswith(" controlType: UNKNOWN(7)")
    empty = log.with_suffix(".timeindex")
    empty.write_bytes(b"")
    assert main(["dump", str(empty)]) == 1   # its offset index must be there, as for Kafka
    assert capsys.readouterr().err.startswith(f"kcodec: error: {log.with_suffix('.index')} is not")
    log.with_suffix(".index").write_bytes(b"")
    assert main(["dump", str(empty)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"Dumping {empty}"]


def test_dump_says_what_disagrees_at_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """As kafka-dump-log, on stderr once every file is dumped: index entries whose batch
    ends elsewhere (newest first), time index entries whose batch's greatest timestamp
    differs, that run backwards or whose offset ends no batch, and records whose offset
    does not follow the one before (newest first); --verify-index-only prints no entry.
    Files by their absolute path, as Java's File.getAbsolutePath (nothing resolved)."""
    def batch(base: int) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base)
        for offset in (base, base + 1):
            builder.append(b"v" * 40, timestamp=TS + offset)
        return builder.build()
    target = segments.write_partition(tmp_path / "t-0", [batch(0), batch(5), batch(10),
                                                         batch(12)], index_interval_bytes=1)
    index = target / "00000000000000000000.index"
    time_index = target / "00000000000000000000.timeindex"
    entries = index.read_bytes()   # offsets 6, 11, 13: the second batch on, where each is
    index.write_bytes((7).to_bytes(4, "big") + entries[4:])
    times = bytearray(time_index.read_bytes())   # (TS + 6, 6), (TS + 11, 11), (TS + 13, 13)
    times[0:8] = (TS + 99).to_bytes(8, "big")
    times[20:24] = (9).to_bytes(4, "big")   # offset 9 ends no batch: the next ends at 11
    times[24:32] = (TS + 5).to_bytes(8, "big")
    time_index.write_bytes(bytes(times))
    monkeypatch.chdir(tmp_path)
    assert main(["dump", "--deep-iteration", "t-0//00000000000000000000.log",
                 "t-0/" + index.name, "t-0/" + time_index.name]) == 0
    out, err = capsys.readouterr()
    assert "Dumping t-0/00000000000000000000.log" in out.splitlines()
    assert "offset: 7 position: 155" in out.splitlines()
    root = os.path.join(os.getcwd(), "t-0")
    assert err.splitlines() == [
        f"Mismatches in :{root}/{index.name}",
        "  Index offset: 7, log offset: 6",
        f"Found timestamp mismatch in :{root}/{time_index.name}",
        f"  Index timestamp: {TS + 99}, log timestamp: {TS + 6}",
        f"  Index timestamp: {TS + 5}, log timestamp: {TS + 13}",
        f"Found out of order timestamp in :{root}/{time_index.name}",
        f"  Index timestamp: {TS + 5}, Previously indexed timestamp: {TS + 11}",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 9, found log offset: 11",
        f"Non-consecutive offsets in {root}/00000000000000000000.log",
        "  6 is followed by 10",
        "  1 is followed by 5"]
    assert main(["dump", "--verify-index-only", str(index), str(time_index)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"Dumping {index}", f"Dumping {time_index}"]
    assert len(err.splitlines()) == 9


def test_dump_checks_an_index_as_a_broker_does_at_start_up(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--index-sanity-check: OffsetIndex.sanityCheck and TimeIndex.sanityCheck, Kafka's
    messages; an empty offset index is said to be empty first, as Kafka's tool says it."""
    target = segments.write_partition(tmp_path / "t-0", sample_log(60), index_interval_bytes=100)
    index = target / "00000000000000000000.index"
    time_index = index.with_suffix(".timeindex")
    assert main(["dump", "--index-sanity-check", str(index), str(time_index)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Dumping {index}", f"{index} passed sanity check.",
        f"Dumping {time_index}", f"{time_index} passed sanity check."]
    entries, times = index.read_bytes(), time_index.read_bytes()
    for damaged, problem in (
            (entries + b"\0\0\0", "Index file {} is corrupt, found {} bytes which is neither "
                                  "positive nor a multiple of 8"),
            (entries[:-8] + (-1).to_bytes(4, "big", signed=True) + entries[-4:],
             "Corrupt index found, index file {} has non-zero size but the last offset is -1 "
             "which is less than the base offset 0")):
        index.write_bytes(damaged)
        assert main(["dump", "--index-sanity-check", str(index)]) == 1
        assert problem.format(index, len(damaged)) in capsys.readouterr().err
    index.write_bytes(entries)
    first = int.from_bytes(times[:8], "big")
    time_index.write_bytes(times[:-12] + (first - 1).to_bytes(8, "big") + times[-4:])
    assert main(["dump", "--index-sanity-check", str(time_index)]) == 1
    assert (f"Corrupt time index found, time index file ({time_index}) has non-zero size but "
            f"the last timestamp is {first - 1} which is less than the first timestamp "
            f"{first}") in capsys.readouterr().err
    index.write_bytes(b"")
    assert main(["dump", "--index-sanity-check", str(index)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"{index} is empty."


def test_dump_json_and_indexes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = segments.write_partition(tmp_path / "t-0", sample_log(60), index_interval_bytes=100)
    log = next(target.glob("*.log"))
    assert main(["dump", "--jsonl", "--print-data-log", str(log)]) == 0
    items = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(items) == 6 and items[0]["records"][0]["value"].startswith("value-0")
    assert main(["dump", str(log.with_suffix(".index"))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Dumping") and out[1].startswith("offset: ")


@pytest.mark.parametrize("options", [[], ["--deep-iteration"], ["--print-data-log"]])
def test_dump_json_is_written_as_it_is_read(tmp_path: Path, options: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A batch at a time, its records one at a time, in the text json.dumps gives."""
    from kcodec.dump import batch_json
    target = segments.write_partition(tmp_path / "t-0", sample_log(30))
    log = next(target.glob("*.log"))
    log.write_bytes(log.read_bytes() + b"tail")
    empty = tmp_path / f"{0:020d}.log"
    empty.write_bytes(b"")
    deep, data = bool(options), options == ["--print-data-log"]
    for path in (log, empty):
        entries = list(kcodec.read_batches(path.read_bytes(), log_file=True))
        items = [batch_json(entry, deep, data) for entry in entries]
        trailing = len(b"tail") if entries else 0
        assert main(["dump", "--json", *options, str(path)]) == 0
        assert capsys.readouterr().out == json.dumps(
            {"file": str(path), "batches": items, "trailing_bytes": trailing}, indent=1) + "\n"
        assert main(["dump", "--jsonl", *options, str(path)]) == 0
        assert capsys.readouterr().out == "".join(
            json.dumps({"file": str(path), **item}) + "\n" for item in items)


def test_dump_names_the_byte_of_a_wrapper_that_does_not_decompress(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = kcodec.BatchBuilder(magic=1)
    good.append(b"v", timestamp=TS)
    first = good.build()
    body = struct.pack(">bbqii", 1, 2, TS, -1, 21) + b"\xff\xff\xff\xff\x07" + b"\0x" * 8
    wrapper = struct.pack(">qiI", 1, len(body) + 4, zlib.crc32(body)) + body   # snappy, 2 GiB
    log = tmp_path / f"{0:020d}.log"
    log.write_bytes(first + wrapper)
    assert main(["dump", "--deep-iteration", str(log)]) == 1
    assert f"(at byte {len(first)})" in capsys.readouterr().err


def test_the_decompression_limit_is_the_command_lines_to_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    builder = kcodec.BatchBuilder(compression="zstd")
    builder.append(bytes(100_000), timestamp=TS)
    log = tmp_path / f"{0:020d}.log"
    log.write_bytes(builder.build())
    before = kcodec.codecs.get_max_decompressed_size()
    assert main(["--max-decompressed-size", "50000", "verify", str(log)]) == 1
    assert "MESSAGE_TOO_LARGE" in capsys.readouterr().out
    assert kcodec.codecs.get_max_decompressed_size() == before
    assert main(["--max-decompressed-size", "200000", "verify", str(log)]) == 0


def test_cli_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gen", str(tmp_path / "gen"), "--records", "300", "--partitions", "2",
                 "--batch-size", "50"]) == 0
    assert main(["verify", str(tmp_path / "gen")]) == 0
    capsys.readouterr()
    assert main(["stats", "--json", str(tmp_path / "gen")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"]["records"] == 604  # 600 events and 4 COMMIT markers
    assert main(["convert", str(tmp_path / "gen"), str(tmp_path / "v1"), "--magic", "1",
                 "--compression", "gzip", "--allow-loss"]) == 0
    assert main(["verify", str(tmp_path / "v1")]) == 0
    assert main(["convert", str(tmp_path / "gen"), str(tmp_path / "v1b"), "--magic", "1"]) == 1
    assert "kcodec: error:" in capsys.readouterr().err


def test_verify_reports_corruption(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "00000000000000000000.log"
    data = bytearray(b"".join(sample_log(20)))
    data[100] ^= 0xFF
    log.write_bytes(data)
    assert main(["verify", str(log)]) == 1
    out = capsys.readouterr().out
    assert "CORRUPT_MESSAGE" in out and str(log) in out
    # a segment that cannot be framed is one problem; the partitions after it are verified
    for name in ("a-0", "b-0"):
        segments.write_partition(tmp_path / "logs" / name, sample_log(20))
    broken = tmp_path / "logs" / "a-0" / "00000000000000000000.log"
    unframed = bytearray(broken.read_bytes())
    unframed[16] = 7   # the first batch's magic
    broken.write_bytes(unframed)
    assert main(["verify", str(tmp_path / "logs")]) == 1
    out = capsys.readouterr().out
    assert out.count("Invalid magic") == 1 and "verified 2 segments" in out
    for command in (["dump", "--deep-iteration"], ["stats"]):   # one error line naming the file
        assert main([*command, str(broken)]) == 1
        assert str(broken) in capsys.readouterr().err


def test_renamed_partitions_are_left_out_of_a_tree(tmp_path: Path) -> None:
    """A partition renamed for deletion (or a future or stray replica) is not read with the
    live one, unless asked for by its own path."""
    live = segments.write_partition(tmp_path / "logs" / "t-0", sample_log(10))
    renamed = tmp_path / "logs" / f"t-0.{'ab' * 16}-delete"
    shutil.copytree(live, renamed)
    assert [d for d, _ in segments.segment_files(tmp_path / "logs")] == [live]
    assert [d for d, _ in segments.segment_files(renamed)] == [renamed]
    assert segments.partition_of(renamed) == ("t", 0)


def test_transaction_indexes_list_transactions_in_the_order_they_ended(tmp_path: Path) -> None:
    """Producer 1 opens at 0, producer 2 at 1; 2 aborts at 2, then 1 at 3. Kafka appends
    2's entry first (TransactionIndex.append wants last offsets increasing), and a fetch
    up to offset 3 stops at the first entry whose last stable offset reaches it: written
    in another order, the index would hide producer 2's aborted record from a broker."""
    from kcodec import ControlType
    def opened(producer: int, offset: int) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=offset, producer_id=producer,
                                      producer_epoch=0, base_sequence=0, is_transactional=True)
        builder.append(b"p%d" % producer, timestamp=TS)
        return builder.build()
    def aborted(producer: int, offset: int) -> bytes:
        return kcodec.BatchBuilder.end_txn_marker(ControlType.ABORT, producer_id=producer,
                                                  producer_epoch=0, coordinator_epoch=0,
                                                  base_offset=offset, timestamp=TS)
    ended = [segments.AbortedTransaction(2, 1, 2, 0), segments.AbortedTransaction(1, 0, 3, 4)]
    log = [opened(1, 0), opened(2, 1), aborted(2, 2), aborted(1, 3)]
    source = segments.write_partition(tmp_path / "in" / "t-0", log, aborted=ended[::-1])
    assert main(["convert", str(tmp_path / "in"), str(tmp_path / "out"),
                 "--compression", "gzip"]) == 0
    for directory in (source, tmp_path / "out" / "t-0"):
        assert segments.read_transaction_index(directory / f"{0:020d}.txnindex") == ended


def test_legacy_segments_roll_where_a_follower_rolls_them(tmp_path: Path) -> None:
    """A follower does not decompress a legacy wrapper for its first offset: a segment it
    starts with one is based at the log end offset, or at the wrapper's last offset less
    2**31 - 1 where the inner offsets span more than an int32 (UnifiedLog.maybeRoll)."""
    def message(offset: int, value: bytes, attributes: int = 0) -> bytes:
        body = struct.pack(">bbqii", 1, attributes, TS, -1, len(value)) + value
        return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body
    # a gzip wrapper of inner offsets 0 and 3e9 (the wrapper's: its last)
    spans = message(3_000_000_000, gzip.compress(message(0, b"a") + message(3_000_000_000, b"b"),
                                                 mtime=0), attributes=1)
    far = segments.write_partition(tmp_path / "wide-0", [spans])
    assert [p.name for p in sorted(far.glob("*.log"))] == [
        f"{3_000_000_000 - (2**31 - 1):020d}.log"]
    with segments.Partition(far) as partition:
        assert [r.offset for b in partition.batches() for r in b] == [0, 3_000_000_000]
    # after a gap (a compacted log), the next segment starts at the log end offset
    gapped = segments.write_partition(tmp_path / "gap-0", [message(5, b"x"), message(90, b"y")],
                                      segment_bytes=len(message(5, b"x")))
    assert [p.name for p in sorted(gapped.glob("*.log"))] == [f"{5:020d}.log", f"{6:020d}.log"]


def test_verify_names_what_kafka_dump_log_finds_in_indexes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An offset index entry below its batch's first offset, a time index entry whose
    timestamp its batch does not have, an index whose size is not whole entries."""
    def damaged(name: str, suffix: str, change: Any) -> Path:
        written = segments.write_partition(tmp_path / name, sample_log(200),
                                           index_interval_bytes=100)
        index = next(written.glob(f"*{suffix}"))
        index.write_bytes(change(index.read_bytes()))
        with segments.Segment(next(written.glob("*.log"))) as segment:
            problems[name] = segment.verify_indexes()
        return written
    problems: dict[str, list[str]] = {}
    first = damaged("a-0", ".index", lambda data: struct.pack(">i", 1) + data[4:])
    damaged("b-0", ".timeindex", lambda data: struct.pack(">q", TS) + data[8:])
    damaged("c-0", ".index", lambda data: data[:-3])
    assert [len(found) for found in problems.values()] == [1, 1, 1]
    assert "does not match the batch at its position" in problems["a-0"][0]
    assert "does not match the greatest timestamp of its batch" in problems["b-0"][0]
    assert "neither positive nor a multiple of 8" in problems["c-0"][0]
    assert main(["verify", str(first)]) == 1
    assert "does not match the batch at its position" in capsys.readouterr().out


def test_index_checks_decompress_no_wrapper(tmp_path: Path) -> None:
    """A legacy wrapper that does not decompress (its CRC right) is the log's problem, said
    by reading it; checking the indexes against it reads its header alone."""
    def message(offset: int, value: bytes, attributes: int = 0) -> bytes:
        body = struct.pack(">bbqii", 1, attributes, TS, -1, len(value)) + value
        return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body
    wrapped = kcodec.BatchBuilder(magic=1, compression="gzip", base_offset=2)
    wrapped.append(b"v", timestamp=TS)
    log = [message(0, b"a"), message(1, b"\x1f\x8b" + bytes(20), attributes=1), wrapped.build()]
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(b"".join(log))
    path.with_suffix(".index").write_bytes(
        struct.pack(">iiii", 1, len(log[0]), 2, len(log[0]) + len(log[1])))
    with segments.Segment(path) as segment:
        assert len(segment.index) == 2 and segment.verify_indexes() == []


def test_verify_names_a_partition_a_killed_write_left(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its segments are not read as the log's, but it is a problem: a broker refuses to
    start with a directory not named as a partition in its log directory. Dump passes
    over it too."""
    live = segments.write_partition(tmp_path / "logs" / "t-0", sample_log(10))
    left = tmp_path / "logs" / f".t-1.{'0a' * 8}.partial"
    (left / "t-2").mkdir(parents=True)   # (convert stages partitions in one, nested,
    (left / f".t-3.{'0b' * 8}.partial").mkdir()   # with write_partition's own inside)
    (left / "t-2" / f"{0:020d}.log").write_bytes(b"half a batch")
    assert main(["verify", str(tmp_path / "logs")]) == 1
    out = capsys.readouterr().out
    assert f"{left}: a directory kcodec was writing" in out
    assert out.endswith("verified 1 segments, 1 batches, 10 records: 1 problems\n")
    assert main(["dump", str(tmp_path / "logs")]) == 0
    assert capsys.readouterr().out.count("Dumping ") == 1
    assert main(["verify", str(left / "t-2")]) == 1   # named itself, it is read
    assert live.exists()


def test_entries_read_are_written_as_they_are(tmp_path: Path) -> None:
    source = segments.write_partition(tmp_path / "a-0", sample_log(30))
    with segments.Partition(source) as partition:
        copy = segments.write_partition(tmp_path / "b-0", partition.batches())
    assert [p.read_bytes() for p in sorted(copy.iterdir())] == [
        p.read_bytes() for p in sorted(source.iterdir())]


def test_the_modules_the_readme_names_come_with_the_package() -> None:
    proc = subprocess.run([sys.executable, "-c", "import kcodec; print(kcodec.kip931.scan, "
                           "kcodec.kraft.read_kraft_control, kcodec.producer_snapshot, "
                           "kcodec.segments.Segment)"], capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr


def test_batches_filling_a_segment_exactly_stay_in_it(tmp_path: Path) -> None:
    """LogSegment.shouldRoll: a roll when the size would pass segment.bytes, not reach it;
    an ABORT marker starting a segment lists its transaction in that segment's .txnindex
    (UnifiedLog.append updates the index of the segment it appended to)."""
    from kcodec import ControlType
    batches = []
    for base in range(2):
        builder = kcodec.BatchBuilder(base_offset=base)
        builder.append(b"v", timestamp=TS)
        batches.append(builder.build())
    exact = segments.write_partition(tmp_path / "t-0", batches,
                                     segment_bytes=sum(map(len, batches)))
    assert [p.name for p in exact.glob("*.log")] == [f"{0:020d}.log"]
    opened = kcodec.BatchBuilder(producer_id=7, producer_epoch=0, base_sequence=0,
                                 is_transactional=True)
    opened.append(b"a", timestamp=TS)
    opened.append(b"b", timestamp=TS)
    first = opened.build()
    marker = kcodec.BatchBuilder.end_txn_marker(ControlType.ABORT, producer_id=7,
                                                producer_epoch=0, coordinator_epoch=0,
                                                base_offset=2, timestamp=TS)
    rolled = segments.write_partition(tmp_path / "u-0", [first, marker], segment_bytes=len(first),
                                      aborted=[segments.AbortedTransaction(7, 0, 2, 3)])
    assert [p.name for p in rolled.glob("*.txnindex")] == [f"{2:020d}.txnindex"]


def test_segments_roll_when_an_index_is_full(tmp_path: Path) -> None:
    """LogSegment.shouldRoll: a full offset or time index (segment.index.bytes) rolls."""
    def batch(base: int) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base)
        builder.append(b"v", timestamp=TS + base)
        return builder.build()
    written = segments.write_partition(tmp_path / "t-0", [batch(i) for i in range(10)],
                                       index_interval_bytes=0, segment_index_bytes=24)
    with segments.Partition(written) as partition:
        # every batch but a segment's first is indexed: two time entries fill 24 bytes
        assert [s.base_offset for s in partition.segments] == [0, 3, 6, 9]
        assert [len(s.time_index) for s in partition.segments] == [2, 2, 2, 1]
        assert [len(s.index) for s in partition.segments] == [2, 2, 2, 0]
        assert [r.offset for b in partition.batches() for r in b] == list(range(10))
    with pytest.raises(ValueError, match="segment_index_bytes"):
        segments.write_partition(tmp_path / "u-0", [batch(0)], segment_index_bytes=11)


def test_negative_offsets_are_refused(tmp_path: Path) -> None:
    builder = kcodec.BatchBuilder(base_offset=-5)
    builder.append(b"v", timestamp=TS)
    with pytest.raises(kcodec.errors.InvalidRecordError, match="start at 0") as caught:
        segments.write_partition(tmp_path / "t-0", [builder.build()])
    assert caught.value.position == 0 and list(tmp_path.iterdir()) == []


def test_a_partition_left_by_a_killed_write_is_not_read(tmp_path: Path) -> None:
    """A write killed outright leaves its hidden staging directory: not a partition, unless
    asked for by its own path."""
    live = segments.write_partition(tmp_path / "logs" / "t-0", sample_log(10))
    left = tmp_path / "logs" / f".t-1.{'0a' * 8}.partial"
    shutil.copytree(live, left)
    assert [d for d, _ in segments.segment_files(tmp_path / "logs")] == [live]
    assert [d for d, _ in segments.segment_files(left)] == [left]


def test_convert_warns_of_a_partial_tail_and_refuses_damage(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As export: a partial batch ending the last segment is left out with a warning, one
    ending an earlier segment is damage."""
    source = segments.write_partition(tmp_path / "in" / "t-0", sample_log(200),
                                      segment_bytes=1500)
    logs = sorted(source.glob("*.log"))
    assert len(logs) > 1
    logs[-1].write_bytes(logs[-1].read_bytes() + bytes(11) + b"\x50tail")
    assert main(["convert", str(source), str(tmp_path / "out")]) == 0
    size = logs[-1].stat().st_size
    assert capsys.readouterr().err == (f"kcodec: warning: {logs[-1]}: 16 bytes at byte "
                                       f"{size - 16} are not a whole batch (left out)\n")
    logs[0].write_bytes(logs[0].read_bytes() + bytes(11) + b"\x50tail")
    assert main(["convert", str(source), str(tmp_path / "out2")]) == 1
    err = capsys.readouterr().err
    assert "are damage" in err and str(logs[0]) in err
    assert not (tmp_path / "out2").exists()


def test_convert_keeps_aborted_transactions_and_the_tree(tmp_path: Path) -> None:
    """kcodec convert carries each partition's .txnindex where the magic holds transactions,
    and converts every partition below a tree, each to the same place under the destination."""
    from kcodec import ControlType
    def transaction(base: int, value: bytes) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base, producer_id=9, producer_epoch=0,
                                      base_sequence=base, is_transactional=True)
        builder.append(value, timestamp=TS)
        return builder.build()
    def marker(kind: ControlType, offset: int) -> bytes:
        return kcodec.BatchBuilder.end_txn_marker(kind, producer_id=9, producer_epoch=0,
                                                  coordinator_epoch=0, base_offset=offset,
                                                  timestamp=TS)
    log = [transaction(0, b"aborted"), marker(ControlType.ABORT, 1), transaction(2, b"kept"),
           marker(ControlType.COMMIT, 3)]
    source = tmp_path / "tree" / "broker1" / "data" / "orders-0"
    segments.write_partition(source, log, aborted=[segments.AbortedTransaction(9, 0, 1, 2)])
    segments.write_partition(tmp_path / "tree" / "broker2" / "data" / "orders-0", sample_log(10))
    assert main(["convert", str(tmp_path / "tree"), str(tmp_path / "out"),
                 "--compression", "lz4"]) == 0

    def committed(directory: Path) -> list[bytes]:
        return [bytes(v) for chunk in segments.iter_partition_arrow(directory, read_committed=True)
                for v in chunk.column("value").to_pylist()]
    converted = tmp_path / "out" / "broker1" / "data" / "orders-0"
    assert committed(source) == committed(converted) == [b"kept"]
    assert segments.aborted_transactions(converted) == segments.aborted_transactions(source)
    assert (tmp_path / "out" / "broker2" / "data" / "orders-0").is_dir()


@pytest.mark.parametrize("command", ["demo", "dump", "verify", "stats", "convert", "gen", "bench"])
def test_every_command_has_help(command: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "kcodec", command, "--help"],
                          capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0 and "usage: kcodec" in proc.stdout


def test_convert_writes_every_partition_or_none(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A conversion failing at its second partition (a loss not allowed) leaves its
    destination as it was: a new one absent, one there with only what it held. A
    partition already there fails it before any work."""
    tree = tmp_path / "tree"
    segments.write_partition(tree / "a-0", sample_log(20))
    builder = kcodec.BatchBuilder()
    builder.append(b"v", headers=[("h", b"1")], timestamp=TS)
    segments.write_partition(tree / "b-0", [builder.build()])
    new, existing = tmp_path / "new", tmp_path / "existing"
    (existing / "c-0").mkdir(parents=True)
    for destination in (new, existing):
        assert main(["convert", str(tree), str(destination), "--magic", "1"]) == 1
        assert "1 records lost their headers" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing", "tree"]
    assert [p.name for p in existing.iterdir()] == ["c-0"]
    for destination in (new, existing):
        assert main(["convert", str(tree), str(destination), "--magic", "1", "--allow-loss"]) == 0
    assert sorted(p.name for p in existing.iterdir()) == ["a-0", "b-0", "c-0"]
    assert sorted(p.name for p in new.iterdir()) == ["a-0", "b-0"]
    capsys.readouterr()
    (tree / "c-0").mkdir()
    segments.write_partition(tree / "c-0" / "x-0", sample_log(10))
    assert main(["convert", str(tree), str(existing), "--magic", "1", "--allow-loss"]) == 1
    assert capsys.readouterr().err.endswith(f"{existing / 'a-0'} exists; kcodec never overwrites it\n")
    assert sorted(p.name for p in existing.iterdir()) == ["a-0", "b-0", "c-0"]


def test_an_interrupt_among_the_last_renames_puts_every_partition_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C just after a rename into an existing destination (a signal is raised as the
    call returns): the partitions moved, that one too, go back, with the directories made
    for them; a partition named inside another moves with it."""
    tree = tmp_path / "tree"
    for name in ("a/t-0", "a/t-0/u-0", "b/t-0", "c/t-0"):
        segments.write_partition(tree / name, sample_log(10))
    destination = tmp_path / "out"
    (destination / "a").mkdir(parents=True)
    rename, renamed = os.rename, []

    def interrupted_after_the_second(source: Any, target: Any) -> None:
        rename(source, target)
        if Path(target).parent.parent == destination:   # (not a rename in the staging)
            renamed.append(target)
            if len(renamed) == 2:
                raise KeyboardInterrupt
    monkeypatch.setattr(os, "rename", interrupted_after_the_second)
    assert main(["convert", str(tree), str(destination)]) == 130
    assert [p.name for p in destination.iterdir()] == ["a"] and not any((destination / "a").iterdir())
    monkeypatch.setattr(os, "rename", rename)
    assert main(["convert", str(tree), str(destination)]) == 0
    assert sorted(str(p.relative_to(destination)) for p in destination.glob("*/*")) == [
        "a/t-0", "b/t-0", "c/t-0"]
    assert (destination / "a" / "t-0" / "u-0" / f"{0:020d}.log").exists()


def test_directories_put_back_are_only_ours(tmp_path: Path) -> None:
    """A rename that fails (a directory named but never made, as a failed writer leaves
    it) puts back those moved before it, and nothing of another writer's at that name."""
    from kcodec._atomic import directories_together
    destination = tmp_path / "out"
    for other_writer in (False, True):
        shutil.rmtree(destination, ignore_errors=True)
        destination.mkdir()
        with pytest.raises(FileNotFoundError):
            with directories_together(destination) as place:
                (place("a") / "ours").mkdir(parents=True)
                place("b")
                if other_writer:
                    (destination / "b").mkdir()
                    (destination / "b" / "theirs").write_bytes(b"")
        assert sorted(str(p.relative_to(destination)) for p in destination.rglob("*")) == (
            ["b", "b/theirs"] if other_writer else [])


def test_gen_writes_every_partition_or_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A disk filling up at the second partition: no partition is left."""
    write = segments.write_partition

    def full_at_the_second(target: Path, *args: Any, **kwargs: Any) -> Path:
        if target.name == "t-1":
            raise OSError(28, "No space left on device")
        return write(target, *args, **kwargs)
    monkeypatch.setattr(segments, "write_partition", full_at_the_second)
    assert main(["gen", str(tmp_path / "out"), "--topic", "t", "--partitions", "3",
                 "--records", "10"]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_convert_refuses_a_destination_in_its_source(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Written inside what it reads, its output would be read with the source by every
    later reader of the tree (a segment's partition is what a segment is read with)."""
    partition = segments.write_partition(tmp_path / "logs" / "t-0", sample_log(10))
    before = sorted(tmp_path.rglob("*"))
    for source, destination in ((tmp_path / "logs", tmp_path / "logs" / "converted"),
                                (partition, partition),
                                (partition / f"{0:020d}.log", partition / "x")):
        assert main(["convert", str(source), str(destination)]) == 1
        assert "choose a destination outside" in capsys.readouterr().err
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("magic", [2, 0])
def test_convert_takes_the_memory_of_a_batch(tmp_path: Path, magic: int) -> None:
    """Segments are converted and written batch by batch: what Python allocates peaks far
    below the partition's size (a whole partition had been held, in and out), also where
    plain legacy messages, a whole segment of them, become v2 batches of up to 1 MiB."""
    import tracemalloc
    batches = []
    for base in range(0, 48 * 256, 256):
        builder = kcodec.BatchBuilder(base_offset=base)
        for i in range(base, base + 256):
            builder.append(b"%08d" % i * 128, timestamp=TS + i)
        batches.append(builder.build())
    if magic == 0:
        batches = [bytes(e.buffer) for e in kcodec.read_batches(
            kcodec.convert(b"".join(batches), magic=0, on_loss="ignore"))]
    source = segments.write_partition(tmp_path / "in" / "t-0", batches)
    size = sum(len(b) for b in batches)
    tracemalloc.start()
    try:
        assert main(["convert", str(source), str(tmp_path / "out"), "--magic", "2",
                     "--compression", "lz4"]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size > 12_000_000 and peak < size / 4



def test_every_argument_says_what_it_does() -> None:
    commands = next(action for action in build_parser()._actions
                    if isinstance(action, argparse._SubParsersAction))
    bare = [f"{name} {action.dest}" for name, sub in commands.choices.items()
            for action in sub._actions if not action.help]
    assert bare == []


@pytest.mark.parametrize("codecs", ["lz4,,gzip", "gzip,foo", "none,pluggable"])
def test_gen_checks_every_codec_before_writing(codecs: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["gen", str(tmp_path / "out"), "--codecs", codecs, "--records", "10"])
    assert info.value.code == 2 and "argument --codecs" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("name", "expected"), [
    ("orders-0", ("orders", 0)), ("my.dotted-topic-12", ("my.dotted-topic", 12)),
    ("orders-3.0123456789abcdef0123456789abcdef-delete", ("orders", 3)),
    ("no-partition-number", None)])
def test_partition_directory_names(name: str, expected: tuple[str, int] | None) -> None:
    assert segments.partition_of(name) == expected


def test_a_partition_as_chunks_of_numpy_arrays(tmp_path: Path) -> None:
    """iter_columns over each segment, as iter_arrow is: read_committed, offset ranges and
    columns as there, errors naming the segment."""
    partition = write_transactional_partition(tmp_path)
    with segments.Partition(partition) as opened:
        committed = list(opened.iter_columns(read_committed=True, columns=["offset", "value"]))
        later = list(opened.iter_columns(offsets=(3, 7)))
    values = [bytes(c["value_data"][c["value_offsets"][i]:c["value_offsets"][i + 1]])
              for c in committed for i in range(c["count"])]
    assert values == [b"p1-a", b"p1-b", b"plain"]
    assert set(committed[0]) == {"count", "offset", "value_offsets", "value_data", "value_valid"}
    assert [int(o) for c in later for o in c["offset"]] == [3, 6]
    last = sorted(partition.glob("*.log"))[-1]
    damaged = bytearray(last.read_bytes())
    damaged[-1] ^= 0xFF
    last.write_bytes(bytes(damaged))
    with pytest.raises(kcodec.errors.KcodecError) as caught:
        list(segments.iter_partition_columns(partition))
    assert any(str(last) in note for note in caught.value.__notes__)


def test_dump_transaction_indexes_snapshots_and_other_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kafka-dump-log's lines for a .txnindex and a producer snapshot; any other file is
    named on stderr and left alone."""
    partition = write_transactional_partition(tmp_path)
    txnindex = next(p for p in sorted(partition.glob("*.txnindex")) if p.stat().st_size)
    (entry,) = segments.read_transaction_index(txnindex)
    assert main(["dump", str(txnindex)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Dumping {txnindex}",
        f"version: 0 producerId: {entry.producer_id} firstOffset: {entry.first_offset} "
        f"lastOffset: {entry.last_offset} lastStableOffset: {entry.last_stable_offset}"]
    snapshot = shared_path("testdata", "kafka-segments", "fuzibotond__Experts-in-team-innovation",
                           "sensor-data-topic-0", "00000000000000000035.snapshot")
    assert main(["dump", str(snapshot)]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        f"Dumping {snapshot}",
        "producerId: 2000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 1728492413708 firstSequence: 29 lastSequence: 29 "
        "lastOffset: 33 offsetDelta: 0 timestamp: 1728492413708"]
    other = snapshot.parent / "leader-epoch-checkpoint"
    assert main(["dump", str(other)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"Dumping {other}\n"
    assert captured.err == f"Ignoring unknown file {other}\n"
    # a corrupt snapshot is said and the dump goes on, as kafka-dump-log's does
    corrupt = tmp_path / "00000000000000000035.snapshot"
    corrupt.write_bytes(snapshot.read_bytes()[:-1] + b"!")
    assert main(["dump", str(corrupt), str(txnindex)]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [f"Dumping {corrupt}", f"Dumping {txnindex}",
                                         captured.out.splitlines()[-1]]
    assert captured.err.startswith("kcodec: error: ") and captured.err.endswith(
        f", in {corrupt}\n")
    # an entry of a version Kafka does not know is refused, as its TransactionIndex does;
    # the version is the field's first byte, signed, as AbortedTxn.version() reads it
    future = tmp_path / "00000000000000000099.txnindex"
    future.write_bytes(b"\1\0" + txnindex.read_bytes()[2:34])
    with pytest.raises(kcodec.errors.CorruptRecordError, match="aborted transaction version 1"):
        segments.read_transaction_index(future)
    assert main(["dump", str(future)]) == 1
    capsys.readouterr()
    for field, version in ((b"\0\1", 0), (b"\0\xff", 0), (b"\xff\0", -1)):
        future.write_bytes(field + txnindex.read_bytes()[2:34])
        assert [t.version for t in segments.read_transaction_index(future)] == [version]


def test_dump_prints_paths_as_given(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """As kafka-dump-log, which prints a java.io.File: ``./`` stays."""
    builder = kcodec.BatchBuilder()
    builder.append(b"v", timestamp=TS)
    (tmp_path / "00000000000000000000.log").write_bytes(builder.build())
    (tmp_path / "00000000000000000000.index").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert main(["dump", "./00000000000000000000.index", "./00000000000000000000.log"]) == 0
    assert capsys.readouterr().out.splitlines()[:4] == [
        "Dumping ./00000000000000000000.index", "./00000000000000000000.index is empty.",
        "Dumping ./00000000000000000000.log", "Log starting offset: 0"]


def test_producer_snapshots() -> None:
    """Every producer snapshot the brokers wrote reads; a damaged one is CorruptRecordError."""
    from kcodec.errors import CorruptRecordError
    from kcodec.producer_snapshot import ProducerSnapshotEntry, read_producer_snapshot
    found = sorted(shared_path("testdata", "kafka-segments").glob("*/*/*.snapshot"))
    assert len(found) >= 40
    entries = {path: read_producer_snapshot(path) for path in found}
    assert sum(len(e) for e in entries.values()) >= 5
    last = entries[next(p for p in found if p.name == "00000000000000000035.snapshot")]
    assert last[1] == ProducerSnapshotEntry(3000, 0, 0, 34, 0, 1728493031796, -1, None)
    assert ProducerSnapshotEntry(1, 0, 2, 9, 5, 0, 0, 7).first_sequence == (1 << 31) - 3
    # in Java's int arithmetic, as Kafka's decrementSequence: a negative delta wraps
    assert ProducerSnapshotEntry(1, 0, 5, 9, -(1 << 31), 0, 0, 7).first_sequence == -(1 << 31) + 5
    data = bytearray(next(p for p in found if p.stat().st_size > 10).read_bytes())
    data[-1] ^= 1
    for broken, message in ((bytes(data), "CRC"), (b"\0\2" + bytes(data[2:]), "version 2"),
                            (bytes(data[:8]), "shorter")):
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"kcodec-snapshot-{os.getpid()}"
        path.write_bytes(broken)
        try:
            with pytest.raises(CorruptRecordError, match=message):
                read_producer_snapshot(path)
        finally:
            path.unlink()


def test_dump_max_bytes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --max-bytes kafka-dump-log prints no trailing-bytes line; the JSON forms stop
    at --max-bytes too, and the document says how many bytes follow the last batch."""
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b"".join(sample_log(30)) + b"tail")
    assert main(["dump", "--max-bytes", str(log.stat().st_size), str(log)]) == 0
    assert "invalid bytes" not in capsys.readouterr().out
    assert main(["dump", str(log)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"Found 4 invalid bytes at the end of {log.name}"
    first = len(sample_log(30)[0])
    assert main(["dump", "--jsonl", "--max-bytes", str(first), str(log)]) == 0
    assert [json.loads(line)["base_offset"] for line in capsys.readouterr().out.splitlines()] == [0]
    assert main(["dump", "--json", str(log)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert len(document["batches"]) == 3 and document["trailing_bytes"] == 4


def test_dump_max_bytes_reads_no_further(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kafka-dump-log --max-bytes N frames the log's first N bytes as a file: what follows
    them, zeros or a batch of no known magic, is never read."""
    first, second = sample_log(20)
    damaged = bytearray(second)
    damaged[16] = 0x90   # (a legacy magic to Kafka's framing, which no reader knows)
    for after, limit in ((bytes(30), len(first) + 2), (bytes(damaged), len(first) + 20)):
        log = tmp_path / "00000000000000000000.log"
        log.write_bytes(first + after)
        for form in ([], ["--jsonl"], ["--json"]):
            assert main(["dump", "--max-bytes", str(limit), *form, str(log)]) == 0
            assert "position: 0" in capsys.readouterr().out or form
        assert main(["dump", str(log)]) == 1
        assert "(at byte %d)" % len(first) in capsys.readouterr().err


def test_dump_prints_the_header_of_an_entry_kafka_frames_and_kcodec_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kafka's file framing takes an entry of magic 3 and up, or one shorter than a v2
    header, for a magic-2 batch read from its 61 header bytes (past its end, for a short
    one; valid only if 61 bytes or more with its CRC): kafka-dump-log prints its line and
    goes on, and dump does so without records; with them, it is an error."""
    first, second = sample_log(20)
    unknown = bytearray(first)
    unknown[16] = 3   # (the CRC does not cover the magic byte)
    short = (7).to_bytes(8, "big") + (20).to_bytes(4, "big") + bytes(4) + b"\x02" + bytes(15)
    past = short + second   # the header read from 61 bytes: count and producerId past its end
    count, producer = (int.from_bytes(past[a:b], "big", signed=True) for a, b in ((57, 61), (43, 51)))
    log = tmp_path / "00000000000000000000.log"
    for entry, expected in (
            (bytes(unknown), batch_line(next(kcodec.read_batches(first))).replace(
                " magic: 2 ", " magic: 3 ")),
            (short, f"baseOffset: 7 lastOffset: 7 count: {count} ")):
        log.write_bytes(entry + second)
        assert main(["dump", str(log)]) == 0
        lines = capsys.readouterr().out.splitlines()[2:]
        assert lines[0].startswith(expected) and len(lines) == 2
        assert entry is not short or f" producerId: {producer} " in lines[0]
        assert lines[0].endswith("isvalid: true" if entry is not short else
                                 "size: 32 magic: 2 compresscodec: none crc: 0 isvalid: false")
        assert lines[1].startswith("baseOffset: 10 lastOffset: 19 ")
        assert main(["dump", "--jsonl", str(log)]) == 0
        assert [json.loads(line)["magic"] for line in capsys.readouterr().out.splitlines()] == \
            [entry[16], 2]
        assert main(["dump", "--deep-iteration", str(log)]) == 1
        assert "(at byte 0)" in capsys.readouterr().err
    # an entry of 26 bytes ending the log, whose header Kafka's tool fails to read
    tiny = (7).to_bytes(8, "big") + (14).to_bytes(4, "big") + bytes(4) + b"\x02" + bytes(9)
    log.write_bytes(first + tiny)
    assert main(["dump", str(log)]) == 1
    assert f"the log ends inside a batch header (at byte {len(first)})" in capsys.readouterr().err
    # --max-bytes slices the framing, not the file the header is read from
    log.write_bytes(first + tiny + second)
    assert main(["dump", str(log)]) == 0
    whole = capsys.readouterr().out.splitlines()[2:]
    assert main(["dump", "--max-bytes", str(len(first) + len(tiny)), str(log)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == whole[:2]


def test_dump_reads_a_base_offset_from_any_number_before_the_first_dot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As Long.parseLong reads it: a sign, and any decimal digits (0 where Kafka's tool fails)."""
    names = {"100.log": 100, "+5.log": 5, "-5.log": -5, "\u0663.log": 3, "abc.log": 0,
             "9223372036854775808.log": 0, "1_0.log": 0}
    for name in names:
        (tmp_path / name).write_bytes(b"".join(sample_log(1)))
    assert main(["dump", *(str(tmp_path / name) for name in names)]) == 0
    assert [line for line in capsys.readouterr().out.splitlines()
            if line.startswith("Log starting")] == [f"Log starting offset: {n}"
                                                     for n in names.values()]


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda items: st.lists(items, max_size=4) | st.dictionaries(st.text(), items, max_size=4),
    max_leaves=20)


@given(_JSON_VALUES, st.integers(0, 3))
def test_dump_writes_json_as_json_dumps_indents_it(value: Any, depth: int) -> None:
    out = io.StringIO()
    write_json(value, out, indent=1, depth=depth)
    assert out.getvalue() == json.dumps(value, indent=1).replace("\n", "\n" + " " * depth)


def test_dump_writes_a_batchs_lazy_records_as_json_dumps_would() -> None:
    control = kcodec.BatchBuilder(is_control=True, base_offset=30)
    control.append_control_record(b"\0\0\0\2", bytes.fromhex("0000 00000001 02 00000001 00 01 00"),
                                  timestamp=TS)   # a leader change: nested objects
    for data in (*sample_log(20), control.build()):
        for batch in kcodec.read_batches(data):
            out = io.StringIO()
            write_json(batch_json(batch, True, True, lazy=True), out, indent=1, depth=2)
            expected = json.dumps(batch_json(batch, True, True), indent=1)
            assert out.getvalue() == expected.replace("\n", "\n  ")


def test_a_segment_ends_as_kafka_frames_a_file(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Zeros a crash left after the last batch, 17 bytes or fewer (which a fetched buffer's
    framing would take for a record size of 0): the segment ends before them, for dump,
    stats, export and the partition's readers alike."""
    target = segments.write_partition(tmp_path / "t-0", sample_log(20))
    log = next(target.glob("*.log"))
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(b"\0" * 15)
    assert main(["dump", str(log)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"Found 15 invalid bytes at the end of {log.name}"
    assert main(["stats", "--json", str(target)]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"][str(target)]["trailing_bytes"] == 15
    with segments.Partition(target) as partition:
        assert partition.segments[0].partial_tail() == (size, 15)
        assert sum(b.record_count for b in partition.batches()) == 20
    assert sum(c.num_rows for c in segments.iter_partition_arrow(target)) == 20
    assert main(["stats", "--kip931", str(target)]) == 0
    assert main(["convert", str(target), str(tmp_path / "out"), "--compression", "lz4"]) == 0
    assert ": 2 batches written and read back" in capsys.readouterr().out


def test_dump_reads_an_index_entry_as_kafka_reads_it(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """An offset index entry pointing inside a batch, at bytes with a plausible size and a
    magic byte of 9: Kafka's tool reads its offsets from the header whatever the magic, so
    the entry prints and its mismatch is said on stderr."""
    fake = (5).to_bytes(8, "big") + (60).to_bytes(4, "big") + bytes(4) + b"\x09" + bytes(80)
    first = kcodec.BatchBuilder()
    first.append(fake, timestamp=TS)
    second = kcodec.BatchBuilder(base_offset=1)
    second.append(b"x", timestamp=TS + 1)
    target = segments.write_partition(tmp_path / "t-0", [first.build(), second.build()])
    log = target / "00000000000000000000.log"
    at = log.read_bytes().index(fake)
    index = target / "00000000000000000000.index"
    index.write_bytes((0).to_bytes(4, "big") + at.to_bytes(4, "big"))
    assert main(["dump", str(index)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1] == f"offset: 0 position: {at}"
    assert err.splitlines() == [f"Mismatches in :{index}", "  Index offset: 0, log offset: 5"]


def test_verify_and_stats_count_a_partial_batch(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    target = segments.write_partition(tmp_path / "t-0", sample_log(20))
    log = next(target.glob("*.log"))
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(b"\0" * 8 + b"\0\0\0\x40" + b"cut")
    assert main(["verify", str(target)]) == 1
    out = capsys.readouterr().out
    assert f"{log}: 15 bytes at byte {size} are not a whole batch" in out and "1 problems" in out
    assert main(["stats", "--json", str(target)]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"][str(target)]["trailing_bytes"] == 15


def test_stats_overall_is_the_partitions_together(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Overall sums the partitions listed (each once, renamed ones left out of a tree), with
    no offset range: offsets belong to a partition."""
    for name in ("t-0", "t-1"):
        segments.write_partition(tmp_path / "logs" / name, sample_log(20))
    shutil.copytree(tmp_path / "logs" / "t-0", tmp_path / "logs" / f"t-0.{'ab' * 16}-delete")
    assert main(["stats", "--json", str(tmp_path / "logs"), str(tmp_path / "logs" / "t-1")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["partitions"]) == 2
    overall = report["overall"]
    assert (overall["records"], overall["batches"], overall["segments"]) == (40, 4, 2)
    assert overall["first_offset"] is None and overall["min_timestamp"] == TS
    assert main(["stats", str(tmp_path / "logs")]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("overall: 4 batches, 40 records") and "offsets" not in last
    log = next((tmp_path / "logs" / "t-1").glob("*.log"))
    assert main(["stats", "--json", str(log), str(tmp_path / "logs" / "t-1"), str(log)]) == 0
    assert list(json.loads(capsys.readouterr().out)["partitions"]) == [str(log.parent)]
    assert main(["stats", "--json", str(log)]) == 0
    assert list(json.loads(capsys.readouterr().out)["partitions"]) == [str(log)]


@pytest.mark.parametrize("arguments", [
    ["gen", "x", "--batch-size", "-1"], ["gen", "x", "--records", "0"],
    ["tour", "--records", "0"], ["bench", "--batch-size", "-1"],
    ["dump", "--max-bytes", "-1", "x"], ["export", "x", "-o", "y", "--threads", "0"],
    ["gen", "x", "--partitions", "two"]])
def test_sizes_below_one_are_refused(arguments: list[str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(arguments)
    assert info.value.code == 2 and "error: argument" in capsys.readouterr().err


def test_written_partitions_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        target = segments.write_partition(tmp_path / "t-0", sample_log(10))
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o755
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_an_interrupt_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during a write ends with status 130, one line and nothing written."""
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt
    monkeypatch.setattr(segments._SegmentBeingWritten, "finish", interrupted)
    assert main(["gen", str(tmp_path / "out"), "--partitions", "1", "--records", "10"]) == 130
    assert capsys.readouterr().err == "kcodec: interrupted\n"
    assert list(tmp_path.iterdir()) == []
