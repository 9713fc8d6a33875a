"""kcodec on a real local SparkSession (one for the module): the kafka-log source, the
column functions, the writer and the demo. Select with ``-m spark``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kcodec
from kcodec.segments import Segment, write_partition

from .conftest import example_plugin_site, real_segments, shared_path

pytest.importorskip("pyspark")
pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from kcodec.spark import local_session
    session = local_session(2, "kcodec tests")
    yield session
    session.stop()


def test_local_session_leaves_this_processs_environment_as_it_was(spark: Any) -> None:
    """Its workers' settings go to Spark (whose workers here run from a source checkout,
    which they must not import from), not to this process's later subprocesses."""
    from kcodec.spark import local_session
    before = dict(os.environ)
    assert local_session(2, "kcodec tests") is spark
    assert dict(os.environ) == before


def segment_rows(path: Path) -> list[tuple[Any, ...]]:
    """What a consumer reads from a segment, through the row API."""
    with Segment(path) as segment:
        return [(r.key, r.value, r.offset, r.timestamp, int(b.timestamp_type),
                 [(k, v) for k, v in r.headers])
                for b in segment.batches() if not b.is_control for r in b]


def spark_rows(frame: Any) -> list[tuple[Any, ...]]:
    rows = [r.asDict() for r in frame.orderBy("offset").collect()]
    return [(None if r["key"] is None else bytes(r["key"]),
             None if r["value"] is None else bytes(r["value"]), r["offset"],
             round(r["timestamp"].timestamp() * 1000), r["timestampType"],
             [(h.key, None if h.value is None else bytes(h.value))
              for h in r.get("headers") or ()])
            for r in rows]


@pytest.mark.parametrize("path", real_segments(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_source_equals_the_row_api_on_real_segments(spark: Any, path: Path) -> None:
    shared_path("testdata", "kafka-segments")
    frame = spark.read.format("kafka-log").option("includeHeaders", "true").load(str(path))
    assert spark_rows(frame) == segment_rows(path)
    topic, partition = path.parent.name.rsplit("-", 1)
    assert {(r.topic, r.partition) for r in frame.select("topic", "partition").collect()} \
        <= {(topic, int(partition))}


def events(count: int, start: int = 0) -> list[bytes]:
    return [b'{"n": %d, "text": "%s"}' % (i, b"x" * (i % 50)) for i in range(start, start + count)]


def write_sample(directory: Path, codec: str = "lz4", batches: int = 20, per_batch: int = 50,
                 segment_bytes: int = 1 << 30) -> Path:
    out = []
    for b in range(batches):
        builder = kcodec.BatchBuilder(compression=codec, base_offset=b * per_batch)
        for i, value in enumerate(events(per_batch, b * per_batch)):
            builder.append(value, key=b"k%d" % i, timestamp=1_700_000_000_000 + b * 1000 + i)
        out.append(builder.build())
    return write_partition(directory, out, segment_bytes=segment_bytes, index_interval_bytes=64)


def test_modes_on_a_corrupted_segment(spark: Any, tmp_path: Path) -> None:
    partition = write_sample(tmp_path / "t-0", codec="none")
    log = next(partition.glob("*.log"))
    data = bytearray(log.read_bytes())
    third = list(kcodec.read_batches(bytes(data)))[2]
    data[third.position + third.size - 3] ^= 0xFF   # inside its last record: CRC mismatch
    log.write_bytes(bytes(data))
    reader = spark.read.format("kafka-log")
    with pytest.raises(Exception, match="corrupt"):
        reader.option("mode", "FAILFAST").load(str(partition)).count()
    dropped = reader.option("mode", "DROPMALFORMED").load(str(partition))
    assert dropped.count() == 19 * 50
    assert 100 not in {r.offset for r in dropped.select("offset").collect()}
    permissive = reader.option("mode", "PERMISSIVE").load(str(partition))
    bad = permissive.where("_corrupt_record IS NOT NULL").collect()
    assert len(bad) == 1 and f"(at byte {third.position})" in bad[0]._corrupt_record
    assert bad[0].topic == "t" and bad[0].offset is None
    assert permissive.where("_corrupt_record IS NULL").count() == 19 * 50


def slice_rows(log: Path, mode: str, chunk_records: int) -> Any:
    """The segment ``log`` read as the source reads one input partition, without Spark."""
    import pyarrow as pa

    from kcodec.spark.source import Options, SegmentSlice, read_slice
    names = ["offset", "value"] + (["_corrupt_record"] if mode == "PERMISSIVE" else [])
    options = Options.parse({"mode": mode, "chunkRecords": str(chunk_records)})
    part = SegmentSlice(str(log), "t", 0, 0, log.stat().st_size, (), (-(2**63), 2**63 - 1),
                        True)
    return pa.Table.from_batches(list(read_slice(part, options, names)))


def test_a_failing_group_gives_no_record_twice(tmp_path: Path) -> None:
    """A group of batches longer than a chunk that fails after its first chunk: the
    records before the bad batch come once, the bad batch is dropped."""
    log = bytearray()
    for b in range(8):
        builder = kcodec.BatchBuilder(base_offset=b * 30)
        for value in events(30, b * 30):
            builder.append(value, timestamp=1_700_000_000_000)
        log += builder.build()
    bad = list(kcodec.read_batches(bytes(log)))[3]
    log[bad.position + 70] ^= 0xFF
    (tmp_path / "v2.log").write_bytes(log)
    table = slice_rows(tmp_path / "v2.log", "DROPMALFORMED", 100)
    assert table.column("offset").to_pylist() == [o for o in range(240) if o // 30 != 3]


@pytest.mark.parametrize("mode", ["DROPMALFORMED", "PERMISSIVE", "FAILFAST"])
def test_times_are_looked_up_past_a_damaged_batch(tmp_path: Path, mode: str) -> None:
    """startingTimestamp's lookup passes over a batch whose records cannot be read where
    the mode drops damaged batches (FAILFAST: the error names the segment)."""
    import pyarrow as pa

    from kcodec.errors import InvalidRecordError
    from kcodec.spark.source import Options, plan, read_slice
    batches = []
    for offset in range(5):
        builder = kcodec.BatchBuilder(base_offset=offset)
        builder.append(b"value-%d" % offset, timestamp=1_700_000_000_000 + offset)
        batches.append(bytearray(builder.build()))
    batches[3][-1] = 0x09   # a header count of -5, the CRC made to match
    batches[3][17:21] = kcodec.crc32c(bytes(batches[3][21:])).to_bytes(4, "big")
    (tmp_path / "t-0").mkdir()
    log = tmp_path / "t-0" / "00000000000000000000.log"
    log.write_bytes(b"".join(batches))
    options = Options.parse({"mode": mode, "startingTimestamp": str(1_700_000_000_003)})
    names = ["offset"] + (["_corrupt_record"] if mode == "PERMISSIVE" else [])
    if mode == "FAILFAST":
        with pytest.raises(InvalidRecordError) as caught:
            plan([str(tmp_path)], options)
        assert caught.value.__notes__ == [f"in {log}"]
        return
    (part,) = plan([str(tmp_path)], options)
    assert part.offsets[0] == 4
    rows = pa.Table.from_batches(list(read_slice(part, options, names)))
    assert rows.column("offset").to_pylist() == [4]


def test_plain_legacy_messages_framed_in_runs(tmp_path: Path) -> None:
    """Plain magic-1 messages are framed a run at a time; a corrupt one costs only
    itself, and its row names its byte."""
    builder = kcodec.BatchBuilder()
    for i in range(3000):
        builder.append(b"value-%d" % i, timestamp=1_700_000_000_000)
    log = bytearray(kcodec.convert(builder.build(), magic=1))
    bad = list(kcodec.read_batches(bytes(log)))[1500]
    log[bad.position + 30] ^= 0xFF
    (tmp_path / "v1.log").write_bytes(log)
    dropped = slice_rows(tmp_path / "v1.log", "DROPMALFORMED", 1000)
    assert dropped.column("offset").to_pylist() == [o for o in range(3000) if o != 1500]
    permissive = slice_rows(tmp_path / "v1.log", "PERMISSIVE", 1000)
    errors = [e for e in permissive.column("_corrupt_record").to_pylist() if e]
    assert permissive.num_rows == 3000 and len(errors) == 1
    assert f"(at byte {bad.position})" in errors[0]


def test_truncated_segment_ends_the_partition(spark: Any, tmp_path: Path) -> None:
    partition = write_sample(tmp_path / "t-0", codec="zstd")
    log = next(partition.glob("*.log"))
    log.write_bytes(log.read_bytes()[:-10])
    frame = spark.read.format("kafka-log").option("mode", "DROPMALFORMED").load(str(partition))
    assert frame.count() == 19 * 50


def test_ranges_prune_whole_segments(spark: Any, tmp_path: Path) -> None:
    from kcodec.spark.source import Options, plan
    partition = write_sample(tmp_path / "t-0", segment_bytes=4000)
    segments = sorted(partition.glob("*.log"))
    assert len(segments) > 3
    options = Options.parse({"startingOffset": "600", "endingOffset": "700"})
    slices = plan([str(partition)], options)
    assert 0 < len(slices) < len(segments)
    frame = (spark.read.format("kafka-log").option("startingOffset", "600")
             .option("endingOffset", "700").load(str(partition)))
    assert sorted(r.offset for r in frame.select("offset").collect()) == list(range(600, 700))
    late = plan([str(partition)],
                Options.parse({"startingTimestamp": str(1_700_000_000_000 + 15_000)}))
    assert 0 < len(late) < len(segments) and {s.offsets[0] for s in late} == {750}
    beyond = Options.parse({"startingTimestamp": str(1_700_000_000_000 + 10**9)})
    assert plan([str(partition)], beyond) == []


def test_timestamps_name_offsets_as_in_sparks_kafka_source(spark: Any, tmp_path: Path) -> None:
    """startingTimestamp and endingTimestamp look up offsets (the first record reaching
    each time, as a consumer's offsetsForTimes), then every record between is read, out of
    order timestamps too; no record reaching the start reads nothing, none reaching the
    end reads to the end."""
    builder = kcodec.BatchBuilder()
    for delta in (100, 300, 200, 400, 150, 500, 250):
        builder.append(b"v", timestamp=1_700_000_000_000 + delta)
    partition = write_partition(tmp_path / "t-0", [builder.build()])

    def offsets(start: int, end: int | None = None) -> list[int]:
        reader = spark.read.format("kafka-log").option("startingTimestamp",
                                                       str(1_700_000_000_000 + start))
        if end is not None:
            reader = reader.option("endingTimestamp", str(1_700_000_000_000 + end))
        return sorted(r.offset for r in reader.load(str(partition)).select("offset").collect())
    assert offsets(250, 450) == [1, 2, 3, 4]
    assert offsets(250, 999) == [1, 2, 3, 4, 5, 6]
    assert offsets(501) == []


def test_options_in_other_words_are_refused() -> None:
    """Spark's Kafka source's start and end options, and values that are not numbers, are
    refused with what kafka-log takes instead (they had been ignored, or a bare int())."""
    from kcodec.spark.source import Options
    with pytest.raises(ValueError, match="startingOffset, not Spark's Kafka source's"):
        Options.parse({"startingOffsets": "earliest"})
    with pytest.raises(ValueError, match="startingOffset takes an integer, not 'earliest'"):
        Options.parse({"startingOffset": "earliest"})
    assert Options.parse({"STARTINGOFFSET": "5"}).offsets[0] == 5
    with pytest.raises(ValueError, match="isolationLevel, not Spark's Kafka source's"):
        Options.parse({"kafka.isolation.level": "read_committed"})
    with pytest.raises(ValueError, match="includeHeaders takes true or false, not 'yes'"):
        Options.parse({"includeHeaders": "yes"})
    assert Options.parse({"includeHeaders": " TRUE "}).include_headers
    for name, least in (("chunkRecords", 1), ("maxBytesPerPartition", 1),
                        ("maxDecompressedSize", 0)):
        with pytest.raises(ValueError, match=f"{name} takes {least} or more, not -1"):
            Options.parse({name: "-1"})
    with pytest.raises(ValueError, match="chunkRecords takes 1 or more, not 0"):
        Options.parse({"chunkRecords": "0"})


def test_read_committed_uses_the_transaction_index(spark: Any, tmp_path: Path) -> None:
    from .conftest import write_transactional_partition
    partition = write_transactional_partition(tmp_path)

    def values(isolation: str) -> list[bytes]:
        frame = (spark.read.format("kafka-log").option("isolationLevel", isolation)
                 .load(str(partition)))
        return [bytes(r.value) for r in frame.orderBy("offset").collect()]
    assert values("read_uncommitted") == [b"p1-a", b"p1-b", b"p2-a", b"p2-b", b"plain"]
    assert values("read_committed") == [b"p1-a", b"p1-b", b"plain"]


def test_read_committed_stops_at_an_open_transaction(spark: Any, tmp_path: Path) -> None:
    """A transaction with no marker yet holds back everything from its first offset on (the
    last stable offset), as a read_committed consumer is held back; export and the
    partition readers too."""
    from kcodec import ControlType
    from kcodec.segments import iter_partition_arrow, last_stable_offset

    def transactional(pid: int, base: int) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0,
                                      base_sequence=0, is_transactional=True)
        builder.append(b"a", timestamp=1_700_000_000_000)
        builder.append(b"b", timestamp=1_700_000_000_000)
        return builder.build()
    plain = kcodec.BatchBuilder(base_offset=5)
    plain.append(b"plain", timestamp=1_700_000_000_000)
    log = [transactional(1, 0),
           kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=1,
                                              producer_epoch=0, coordinator_epoch=0,
                                              base_offset=2),
           transactional(2, 3), plain.build()]
    partition = write_partition(tmp_path / "t-0", log)
    assert last_stable_offset(sorted(partition.glob("*.log"))) == 3
    frame = (spark.read.format("kafka-log").option("isolationLevel", "read_committed")
             .load(str(partition)))
    assert sorted(r.offset for r in frame.select("offset").collect()) == [0, 1]
    read = [o for b in iter_partition_arrow(partition, read_committed=True)
            for o in b.column("offset").to_pylist()]
    assert read == [0, 1]


def test_read_committed_ends_where_damage_ends_the_partition(spark: Any, tmp_path: Path) -> None:
    """A partial batch ending a segment but the last ends the partition, as a broker's
    recovery truncates it: a transaction open there stays open, whatever marker follows
    in a later segment, so nothing from its first offset on is read committed."""
    from kcodec import ControlType
    from kcodec.segments import last_stable_offset

    def records(base: int, n: int, **options: Any) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base, **options)
        for i in range(n):
            builder.append(b"v%d" % (base + i), timestamp=1_700_000_000_000)
        return builder.build()
    batches = [records(0, 3, producer_id=9, producer_epoch=0, base_sequence=0,
                       is_transactional=True), records(3, 3),
               kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=9,
                                                  producer_epoch=0, coordinator_epoch=0,
                                                  base_offset=6), records(7, 3)]
    partition = write_partition(tmp_path / "t-0", batches, segment_bytes=200)
    logs = sorted(partition.glob("*.log"))
    assert len(logs) == 2
    damage = (0, logs[0].stat().st_size)
    with open(logs[0], "ab") as f:
        f.write(records(6, 1)[:30])
    assert (last_stable_offset(logs), last_stable_offset(logs, damage)) == (None, 0)
    for mode in ("DROPMALFORMED", "PERMISSIVE"):
        rows = (spark.read.format("kafka-log").option("isolationLevel", "read_committed")
                .option("mode", mode).load(str(partition)).collect())
        assert [r.offset for r in rows if r.offset is not None] == [], mode
    rows = (spark.read.format("kafka-log").option("mode", "DROPMALFORMED")
            .load(str(partition)).collect())
    assert sorted(r.offset for r in rows) == list(range(6))   # read uncommitted: to the damage


def test_permissive_with_a_schema_of_its_own(spark: Any, tmp_path: Path) -> None:
    """A schema given by the reader is read as given: the corrupt-record column where it
    asks for it, or not at all, in any mode."""
    partition = write_sample(tmp_path / "t-0", batches=2)
    reader = spark.read.format("kafka-log")
    for mode, schema in (("PERMISSIVE", "offset long, value binary"),
                         ("PERMISSIVE", "_corrupt_record string, offset long"),
                         ("FAILFAST", "offset long, _corrupt_record string")):
        rows = reader.option("mode", mode).schema(schema).load(str(partition)).collect()
        assert len(rows) == 100 and list(rows[0].asDict()) == [
            f.strip().split()[0] for f in schema.split(",")]
        assert all(r.asDict().get("_corrupt_record") is None for r in rows)


@pytest.mark.parametrize("damage", ["a length below a batch's", "a partial batch"])
def test_damage_ends_the_partition_whatever_the_splits(spark: Any, tmp_path: Path,
                                                      damage: str) -> None:
    """Past a batch that cannot be framed, or a partial batch ending a segment that is not
    the last, nothing of the partition is read (a broker's recovery truncates there), into
    however many input partitions it is cut."""
    import struct
    partition = write_sample(tmp_path / "t-0", segment_bytes=8000)
    logs = sorted(partition.glob("*.log"))
    assert len(logs) > 2
    data = bytearray(logs[0].read_bytes())
    if damage == "a partial batch":
        logs[0].write_bytes(bytes(data) + b"\0" * 11 + b"\xff partial")
        kept = sum(b.record_count for b in kcodec.read_batches(bytes(data)))
    else:
        fourth = list(kcodec.read_batches(bytes(data)))[3]
        struct.pack_into(">i", data, fourth.position + 8, 3)
        logs[0].write_bytes(bytes(data))
        kept = 3 * 50
    reader = spark.read.format("kafka-log").option("mode", "DROPMALFORMED")
    counts = {reader.option("maxBytesPerPartition", str(split)).load(str(partition)).count()
              for split in (1 << 29, 2000)}
    assert counts == {kept}
    committed = reader.option("isolationLevel", "read_committed").load(str(partition))
    assert committed.count() == kept   # the planner's transaction scan stops there too
    with pytest.raises(Exception, match="frame|Invalid|corrupt|CORRUPT"):
        spark.read.format("kafka-log").load(str(partition)).count()


def test_large_segments_split_at_batch_boundaries(spark: Any, tmp_path: Path) -> None:
    partition = write_sample(tmp_path / "t-0")
    frame = (spark.read.format("kafka-log").option("maxBytesPerPartition", "2000")
             .load(str(partition)))
    assert frame.rdd.getNumPartitions() > 1
    assert sorted(r.offset for r in frame.select("offset").collect()) == list(range(1000))


def plan_and_read(paths: list[Path], mode: str = "FAILFAST",
                  **options: str) -> tuple[list[Any], list[int]]:
    """The input partitions planned for ``paths``, and the offsets read from them."""
    from kcodec.spark.source import Options, plan, read_slice
    parsed = Options.parse({"mode": mode, **options})
    names = ["offset"] + (["_corrupt_record"] if mode == "PERMISSIVE" else [])
    slices = plan([str(p) for p in paths], parsed)
    offsets = [o for part in slices for b in read_slice(part, parsed, names)
               for o in b.column("offset").to_pylist() if o is not None]
    return slices, offsets


@pytest.mark.parametrize("mode", ["FAILFAST", "DROPMALFORMED", "PERMISSIVE"])
def test_splits_pass_over_index_entries_inside_a_batch(tmp_path: Path, mode: str) -> None:
    """An .index entry pointing into a batch (a damaged or stale index) is no place to cut
    a large segment: the rows are the log's, however it is split."""
    import struct

    from kcodec.segments import write_partition
    batches = []
    for i in range(20):
        builder = kcodec.BatchBuilder(base_offset=i * 10)
        for j in range(10):
            builder.append(b"x" * 100, timestamp=1_700_000_000_000 + i * 10 + j)
        batches.append(builder.build())
    partition = write_partition(tmp_path / "t-0", batches, index_interval_bytes=100)
    index = partition / "00000000000000000000.index"
    raw = bytearray(index.read_bytes())
    for entry in (1, 3):   # into a batch, and at bytes inside a record that frame nothing
        relative, position = struct.unpack_from(">ii", raw, 8 * entry)
        struct.pack_into(">ii", raw, 8 * entry, relative, position + 5 * entry)
    index.write_bytes(bytes(raw))
    starts = {b.position for b in kcodec.read_batches(
        (partition / "00000000000000000000.log").read_bytes())}
    slices, offsets = plan_and_read([partition], mode, maxBytesPerPartition="1000")
    assert len(slices) > 1 and {part.start for part in slices} <= starts
    assert offsets == list(range(200))


def test_a_segment_named_alone_is_read_as_its_partition_reads(tmp_path: Path) -> None:
    """Named alone, a segment ends where its partition's last stable offset and damage end
    it: a transaction it holds, committed in the next segment, is read; a partial batch
    ending it, with segments after it, is damage."""
    from kcodec import ControlType
    from kcodec.errors import CorruptRecordError
    from kcodec.segments import write_partition
    txn = kcodec.BatchBuilder(producer_id=1, producer_epoch=0, base_sequence=0,
                              is_transactional=True)
    txn.append(b"a", timestamp=1_700_000_000_000)
    txn.append(b"b", timestamp=1_700_000_000_000)
    commit = kcodec.BatchBuilder.end_txn_marker(ControlType.COMMIT, producer_id=1,
                                                producer_epoch=0, coordinator_epoch=0,
                                                base_offset=2)
    plain = kcodec.BatchBuilder(base_offset=3)
    plain.append(b"plain", timestamp=1_700_000_000_000)
    partition = write_partition(tmp_path / "t-0", [txn.build(), commit, plain.build()],
                                segment_bytes=1)   # a segment a batch
    first = sorted(partition.glob("*.log"))[0]
    assert plan_and_read([first], isolationLevel="read_committed")[1] == [0, 1]
    with first.open("ab") as log:
        log.write(plain.build()[:30])   # a partial batch, not at the partition's end
    (part,), _ = plan_and_read([first], "DROPMALFORMED")
    assert not part.final
    with pytest.raises(CorruptRecordError, match="before the end of the partition"):
        plan_and_read([first])
    # a later segment named alone: the damage before it ends the partition first
    later = sorted(partition.glob("*.log"))[1]
    assert plan_and_read([later], "DROPMALFORMED") == ([], [])
    with pytest.raises(CorruptRecordError, match="ends in damage here") as caught:
        plan_and_read([later])
    assert caught.value.__notes__ == [f"in {first}"]


def test_a_partition_named_twice_is_read_once(tmp_path: Path) -> None:
    """By its directory and a segment, or by segments with a gap between them: each
    segment once, and segments named without the rest read as their partition reads."""
    from kcodec.errors import CorruptRecordError
    from kcodec.segments import write_partition
    batches = []
    for base in range(3):
        builder = kcodec.BatchBuilder(base_offset=base)
        builder.append(b"x", timestamp=1_700_000_000_000)
        batches.append(builder.build())
    partition = write_partition(tmp_path / "t-0", batches, segment_bytes=1)
    logs = sorted(partition.glob("*.log"))
    assert plan_and_read([partition, logs[1]])[1] == [0, 1, 2]
    assert plan_and_read([logs[2], tmp_path])[1] == [0, 1, 2]
    (first, last), offsets = plan_and_read([logs[0], logs[2]])
    assert offsets == [0, 2] and not first.final and last.final
    with logs[1].open("ab") as log:
        log.write(batches[2][:30])   # damage between the segments named
    assert plan_and_read([logs[0], logs[2]], "DROPMALFORMED")[1] == [0]
    with pytest.raises(CorruptRecordError, match="ends in damage here") as caught:
        plan_and_read([logs[0], logs[2]])
    assert caught.value.__notes__ == [f"in {logs[1]}"]


def test_column_functions_round_trip(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from kcodec.spark.functions import (
        build_batches,
        compress_column,
        decompress_column,
        explode_batches,
    )
    partition = write_sample(tmp_path / "t-0", codec="snappy")
    records = spark.read.format("kafka-log").load(str(partition))
    batches = build_batches(records, "zstd", level=5, batch_records=300)
    assert sorted(r.records for r in batches.collect()) == [100, 300, 300, 300]
    again = explode_batches(batches, topic="t", partition=0)
    assert spark_rows(again) == spark_rows(records)
    packed = records.select(compress_column(F.col("value"), "lz4").alias("packed"), "value")
    back = packed.select(decompress_column(F.col("packed"), "lz4").alias("back"), "value")
    assert back.where("back != value").count() == 0


def test_whole_entries_leave_out_each_rows_partial_batch() -> None:
    from kcodec.spark.functions import whole_entries
    first, second, third = (kcodec.BatchBuilder(base_offset=i, magic=magic)
                            for i, magic in ((0, 2), (1, 2), (2, 1)))
    for builder in (first, second, third):
        builder.append(b"v", timestamp=1_700_000_000_000)
    a, b, c = first.build(), second.build(), third.build()
    assert whole_entries([a + b[:-7], c, a[:5], b]) == a + c + b
    assert whole_entries([]) == b""


def test_explode_batches_decodes_each_arrow_batch_at_once(spark: Any) -> None:
    """The rows of an Arrow batch are decoded together: a row's trailing partial batch (as
    a fetch response may end) is left out and does not run into the next row, nulls are
    skipped, magics mix; a bad row fails the job with its own position."""
    from kcodec.spark.functions import explode_batches

    def batch(base: int, count: int, magic: int = 2) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base, magic=magic)
        for i in range(count):
            builder.append(b"v%d" % (base + i), key=b"k", timestamp=1_700_000_000_000)
        return builder.build()
    rows = [batch(0, 3) + batch(3, 2)[:-7], None, batch(5, 4, magic=1),
            batch(9, 1) + batch(10, 2)]
    frame = spark.createDataFrame([(row,) for row in rows], "batch binary").coalesce(1)
    exploded = explode_batches(frame, topic="t", partition=0)
    assert [bytes(r.value) for r in exploded.orderBy("offset").collect()] == [
        b"v%d" % i for i in (0, 1, 2, 5, 6, 7, 8, 9, 10, 11)]
    good = batch(2, 2)
    bad = spark.createDataFrame([(batch(0, 2),), (good[:30] + b"\xff" * (len(good) - 30),)],
                                "batch binary").coalesce(1)
    with pytest.raises(Exception, match=r"Record batch is corrupt .*\(at byte 0\)"):
        explode_batches(bad, topic="t").collect()


@pytest.mark.parametrize("magic,codec", [(2, "gzip"), (1, "snappy"), (1, "none")])
def test_writer_output_reads_back(spark: Any, tmp_path: Path, magic: int, codec: str) -> None:
    from kafka.record import MemoryRecords

    from kcodec.spark.functions import write_log
    source = write_sample(tmp_path / "in" / "t-0")
    records = spark.read.format("kafka-log").load(str(source))
    written = write_log(records, str(tmp_path / "out"), codec, magic=magic, batch_records=128)
    assert [(w.topic, w.partition, w.records) for w in written] == [("t", 0, 1000)]
    out = tmp_path / "out" / "t-0"
    again = spark.read.format("kafka-log").load(str(out))
    assert spark_rows(again) == spark_rows(records) if magic == 2 else \
        [r[:3] for r in spark_rows(again)] == [r[:3] for r in spark_rows(records)]
    peer = MemoryRecords(next(out.glob("*.log")).read_bytes())
    values = []
    while (batch := peer.next_batch()) is not None:
        values += [bytes(r.value) for r in batch]
    assert values == events(1000)
    with pytest.raises(Exception, match="exists"):
        write_log(records, str(tmp_path / "out"), codec)
    if magic == 2:   # records of no partition (a segment outside a partition directory)
        loose = tmp_path / "loose" / "00000000000000000000.log"
        loose.parent.mkdir()
        loose.write_bytes(next(source.glob("*.log")).read_bytes())
        unplaced = spark.read.format("kafka-log").load(str(loose))
        with pytest.raises(Exception, match="partition of 0 or more"):
            write_log(unplaced, str(tmp_path / "unplaced"), codec)


def test_write_log_writes_every_partition_or_none(spark: Any, tmp_path: Path) -> None:
    """The executors write aside and the driver renames the partitions into place once the
    job succeeded: a partition already there, a topic Kafka refuses (one that would lead
    out of the path among them) or a null topic or partition leaves nothing written; counts
    under 1 and a timestamp column of numbers are refused."""
    from pyspark.sql import functions as F

    from kcodec.spark.functions import build_batches, write_log
    frame = (spark.createDataFrame([(b"v%d" % i, i % 2) for i in range(4)],
                                   "value binary, partition int")
             .withColumn("topic", F.lit("t")))
    out = tmp_path / "out"
    (out / "t-1").mkdir(parents=True)
    with pytest.raises(Exception, match="t-1 exists"):
        write_log(frame, str(out))
    assert [p.name for p in out.iterdir()] == ["t-1"]   # (and no hidden staging left)
    written = write_log(frame.where("partition = 0"), str(out))
    assert [(w.path, w.records) for w in written] == [(str(out / "t-0"), 2)]
    for column, value, match in [("topic", F.lit("../../escaped"), "characters other than"),
                                 ("topic", F.lit(None).cast("string"), "null topic"),
                                 ("partition", F.lit(None).cast("int"), "null partition")]:
        with pytest.raises(Exception, match=match):
            write_log(frame.withColumn(column, value), str(tmp_path / "bad"))
        assert not any(tmp_path.glob("*bad*")) and not any(tmp_path.glob("*escaped*"))
    with pytest.raises(ValueError, match="batch_records must be 1 or more"):
        write_log(frame, str(tmp_path / "none"), batch_records=0)
    with pytest.raises(ValueError, match="batch_records must be 1 or more"):
        build_batches(frame, batch_records=-1)
    numbers = frame.withColumn("timestamp", F.lit(1_700_000_000_123))
    with pytest.raises(Exception, match="not a timestamp"):
        build_batches(numbers).collect()
    stamped = frame.withColumn("timestamp", F.timestamp_millis(F.lit(1_700_000_000_123)))
    (batch,) = [r.batch for r in build_batches(stamped.where("partition = 0")).collect()]
    assert [r.timestamp for b in kcodec.read_batches(batch) for r in b] == [1_700_000_000_123] * 2


def test_study_includes_plugins_shipped_to_executors(spark: Any, tmp_path: Path) -> None:
    from kcodec import plugins
    from kcodec.spark.study import compression_study, default_configs, markdown_table
    plugins.register("snappy-as-plugin", plugins.BuiltinCodec("snappy"))
    try:
        assert ("pluggable:snappy-as-plugin", None) in default_configs()
        records = spark.read.format("kafka-log").load(str(write_sample(tmp_path / "t-0")))
        study = compression_study(records, [("snappy", None), ("pluggable:snappy-as-plugin",
                                                               None)], [100])
        rows = {r.codec: r for r in study.collect()}
        table = markdown_table(study).splitlines()   # (the DataFrame, as the rows)
    finally:
        plugins.unregister("snappy-as-plugin")
    assert sorted(line.split("|")[1].strip() for line in table[2:]) == [
        "pluggable:snappy-as-plugin", "snappy"]
    plain, plugged = rows["snappy"], rows["pluggable:snappy-as-plugin"]
    assert plugged.records == plain.records == 1000
    # the same stream, plus the plugin's name in every batch
    assert plugged.stored_bytes - plain.stored_bytes == plain.batches * (1 + 16)


def test_executors_find_installed_plugins(spark: Any, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The example plugin, shipped as a zip with its dist-info (as --py-files would), is
    found by its entry point on the executors, by the name in the batches."""
    from kcodec.spark.functions import explode_batches
    site = tmp_path / "site"
    site.mkdir()
    name = example_plugin_site(site)
    archive = shutil.make_archive(str(tmp_path / "plugin"), "zip", site)
    spark.sparkContext.addPyFile(archive)
    monkeypatch.syspath_prepend(archive)  # the driver builds the batches with it
    try:
        batches = []
        for b in range(4):
            builder = kcodec.BatchBuilder(compression="pluggable", plugin=name,
                                          base_offset=b * 50)
            for i, value in enumerate(events(50, b * 50)):
                builder.append(value, key=b"k%d" % i, timestamp=1_700_000_000_000 + i)
            batches.append(builder.build())
        frame = spark.createDataFrame([(data,) for data in batches], "batch binary")
        exploded = explode_batches(frame, "batch", topic="t", partition=0)
        assert [bytes(r.value) for r in exploded.orderBy("offset").collect()] == events(200)
        partition = write_partition(tmp_path / "log" / "t-0", batches)
        read = spark.read.format("kafka-log").load(str(partition))
        assert [bytes(r.value) for r in read.orderBy("offset").collect()] == events(200)
    finally:
        from kcodec import plugins
        plugins._loaded.clear()


def test_demo_writes_a_report(tmp_path: Path) -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-m", "kcodec", "demo", "--records", "3000",
                           "--output", str(tmp_path / "report")], capture_output=True,
                          text=True, env=env, cwd=str(tmp_path), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "orders-4  zstd" in proc.stdout and "| zstd | 9 | 1000 |" in proc.stdout
    report = (tmp_path / "report" / "report.md").read_text()
    assert "![ratio against compression speed](compression.png)" in report
    assert (tmp_path / "report" / "compression.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shutil.rmtree(tmp_path / "report")


def test_headers_below_magic_2_are_refused_not_dropped() -> None:
    """build_batches and write_log, magic 0 or 1: a record with headers fails the build,
    as Kafka's builder refuses it (they had been dropped without a word)."""
    pa = pytest.importorskip("pyarrow")
    from kcodec.spark.functions import _records_to_batches
    table = pa.table({"value": [b"a", b"b"],
                      "headers": [[{"key": "trace", "value": b"abc"}], []]},
                     schema=pa.schema([("value", pa.binary()), ("headers", pa.list_(
                         pa.struct([("key", pa.string()), ("value", pa.binary())])))]))
    for magic in (0, 1):
        with pytest.raises(ValueError, match="cannot hold headers"):
            list(_records_to_batches(table, "none", None, magic, 10, None))
        assert len(list(_records_to_batches(table.slice(1), "none", None, magic, 10, None))) == 1
    ((_, _, _, count, data),) = _records_to_batches(table, "none", None, 2, 10, None)
    assert [r.headers for r in next(kcodec.read_batches(data))] == [[("trace", b"abc")], []]


def test_an_open_transaction_holds_the_stable_offset_at_its_first_batch(tmp_path: Path) -> None:
    """Two batches of a transaction with no marker yet: nothing from its first offset on is
    stable, so read_committed reads nothing."""
    from kcodec.segments import last_stable_offset
    from kcodec.spark.source import Options, plan, read_slice
    batches = []
    for offset in (0, 1):
        builder = kcodec.BatchBuilder(base_offset=offset, producer_id=9, producer_epoch=0,
                                      base_sequence=offset, is_transactional=True)
        builder.append(b"txn-%d" % offset, timestamp=1_700_000_000_000)
        batches.append(builder.build())
    partition = write_partition(tmp_path / "t-0", batches)
    assert last_stable_offset(sorted(partition.glob("*.log"))) == 0
    options = Options.parse({"isolationLevel": "read_committed"})
    assert [v for part in plan([str(partition)], options)
            for t in read_slice(part, options, ["value"]) for v in t.column("value").to_pylist()] == []


def test_offsets_and_timestamps_given_together_are_both_kept(tmp_path: Path) -> None:
    """The range read is where both the offsets and the timestamps put it."""
    from kcodec.spark.source import Options, plan, read_slice
    batches = []
    for offset in range(10):
        builder = kcodec.BatchBuilder(base_offset=offset)
        builder.append(b"v%d" % offset, timestamp=1_700_000_000_000 + offset)
        batches.append(builder.build())
    partition = write_partition(tmp_path / "t-0", batches)

    def offsets(given: dict[str, str]) -> list[int]:
        options = Options.parse(given)
        return [o for part in plan([str(partition)], options)
                for t in read_slice(part, options, ["offset"]) for o in t.column("offset").to_pylist()]
    assert offsets({"startingOffset": "6", "startingTimestamp": "1700000000002"}) == [6, 7, 8, 9]
    assert offsets({"startingOffset": "2", "startingTimestamp": "1700000000006"}) == [6, 7, 8, 9]
    assert offsets({"endingOffset": "3", "endingTimestamp": "1700000000008"}) == [0, 1, 2]
    assert offsets({"endingOffset": "8", "endingTimestamp": "1700000000003"}) == [0, 1, 2]


def test_max_decompressed_size_bounds_reading_and_time_lookups(tmp_path: Path) -> None:
    """maxDecompressedSize bounds each batch's decompression on the executors (whose global
    limit a driver's setting does not reach) and in the planning's time lookups."""
    import pyarrow as pa

    from kcodec.errors import DecompressionLimitError
    from kcodec.spark.functions import decompress_column, explode_batches
    from kcodec.spark.source import Options, plan, read_slice
    builder = kcodec.BatchBuilder(compression="gzip")
    for i in range(10):
        builder.append(bytes(1000), timestamp=1_700_000_000_000 + i)
    partition = write_partition(tmp_path / "t-0", [builder.build()])

    def values(given: dict[str, str]) -> list[bytes]:
        options = Options.parse(given)
        return [v for part in plan([str(partition)], options)
                for t in read_slice(part, options, ["value"]) for v in t.column("value").to_pylist()]
    assert len(values({"maxDecompressedSize": "20000"})) == 10
    for given in ({"maxDecompressedSize": "5000"},
                  {"maxDecompressedSize": "5000", "startingTimestamp": "1700000000004"}):
        with pytest.raises(DecompressionLimitError):
            values(given)
    options = Options.parse({"maxDecompressedSize": "5000", "mode": "PERMISSIVE"})
    (part,) = plan([str(partition)], options)
    (row,) = pa.Table.from_batches(list(read_slice(part, options, ["value", "_corrupt_record"]))
                                   ).to_pylist()
    assert row["value"] is None and "limit of 5000 bytes" in row["_corrupt_record"]
    for bad in ("-1", "lots"):
        with pytest.raises(ValueError, match="maxDecompressedSize"):
            Options.parse({"maxDecompressedSize": bad})
    with pytest.raises(ValueError, match="0 or more"):
        explode_batches(None, max_decompressed_size=-1)
    with pytest.raises(ValueError, match="0 or more"):
        decompress_column(None, "gzip", max_size=-1)
