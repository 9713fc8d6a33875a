"""kcodec.export and `kcodec export`: segments to Parquet and Arrow IPC files."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path
from typing import Any

import pytest

import kcodec
from kcodec import segments
from kcodec.cli import main
from kcodec.errors import ChecksumError

from .conftest import shared_path, write_transactional_partition

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TXN_ENTRY = struct.Struct(">hqqqq")


def read_back(path: Path) -> Any:
    if path.suffix == ".parquet":
        return pq.read_table(path)
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def expected_table(sources: list[Path], **options: Any) -> Any:
    """What decode_arrow gives segment by segment, with each partition's name."""
    tables = []
    for source in sources:
        for directory, logs in segments.segment_files(source):
            topic, partition = segments.partition_of(directory) or (directory.name, -1)
            for log in logs:
                tables.append(kcodec.decode_arrow(log.read_bytes(), topic=topic,
                                                  partition=partition, **options))
    return pa.concat_tables(tables)


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_real_segments_export_as_decode_arrow_reads_them(tmp_path: Path, suffix: str) -> None:
    root = shared_path("testdata", "kafka-segments")
    target = tmp_path / f"all{suffix}"
    summary = kcodec.export_segments([root], target, include_headers=True, metadata=True,
                                     threads=2)
    expected = expected_table([root], include_headers=True, metadata=True)
    assert summary.records == expected.num_rows > 0
    assert summary.segments == sum(len(logs) for _, logs in segments.segment_files(root))
    assert summary.bytes == target.stat().st_size
    assert read_back(target).equals(expected)


def test_transaction_index_entries(tmp_path: Path) -> None:
    partition = write_transactional_partition(tmp_path)
    index = partition / f"{5:020d}.txnindex"
    index.write_bytes(index.read_bytes() + TXN_ENTRY.pack(0, 9, 7, 8, 7)[:20])  # cut short
    assert segments.read_transaction_index(index) == [segments.AbortedTransaction(2, 2, 5, 2)]
    assert segments.aborted_transactions(partition) == [segments.AbortedTransaction(2, 2, 5, 2)]


def test_read_committed_leaves_out_aborted_transactions(tmp_path: Path) -> None:
    partition = write_transactional_partition(tmp_path)
    every = kcodec.export_segments([partition], tmp_path / "every.parquet")
    committed = kcodec.export_segments([partition], tmp_path / "committed.parquet",
                                       read_committed=True)
    assert every.segments == committed.segments == 5
    assert read_back(tmp_path / "every.parquet").column("value").to_pylist() == [
        b"p1-a", b"p1-b", b"p2-a", b"p2-b", b"plain"]
    table = read_back(tmp_path / "committed.parquet")
    assert table.column("value").to_pylist() == [b"p1-a", b"p1-b", b"plain"]
    assert set(table.column("topic").to_pylist()) == {"orders"}
    assert table.column("offset").to_pylist() == [0, 1, 6]
    markers = kcodec.export_segments([partition], tmp_path / "new" / "markers.arrow",
                                     include_control=True, metadata=True, compression=None)
    assert markers.records == 7
    table = read_back(tmp_path / "new" / "markers.arrow")
    assert table.column("is_control").to_pylist().count(True) == 2


def test_a_partition_as_arrow_record_batches(tmp_path: Path) -> None:
    partition = write_transactional_partition(tmp_path)
    with segments.Partition(partition) as opened:
        committed = pa.Table.from_batches(list(opened.iter_arrow(read_committed=True)))
        later = pa.Table.from_batches(list(opened.iter_arrow(offsets=(3, 7))))
    assert committed.column("value").to_pylist() == [b"p1-a", b"p1-b", b"plain"]
    assert set(committed.column("topic").to_pylist()) == {"orders"}
    assert set(committed.column("partition").to_pylist()) == {0}
    assert later.column("offset").to_pylist() == [3, 6]


def test_ranges_and_columns(tmp_path: Path) -> None:
    partition = write_transactional_partition(tmp_path)
    target = tmp_path / "some.parquet"
    kcodec.export_segments([partition], target, offsets=(1, 6), columns=["offset", "value"])
    table = read_back(target)
    assert table.column_names == ["offset", "value"]
    assert table.column("offset").to_pylist() == [1, 2, 3]


def test_a_failed_export_leaves_the_destination_as_it_was(tmp_path: Path) -> None:
    partition = write_transactional_partition(tmp_path)
    last = sorted(partition.glob("*.log"))[-1]
    damaged = bytearray(last.read_bytes())
    damaged[-1] ^= 0xFF
    last.write_bytes(bytes(damaged))
    target = tmp_path / "out.parquet"
    target.write_bytes(b"an earlier export")
    with pytest.raises(ChecksumError) as caught:
        kcodec.export_segments([partition], target)
    assert f"in {last}" in caught.value.__notes__
    assert target.read_bytes() == b"an earlier export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["orders-0", "out.parquet"]


def test_a_file_replaced_keeps_its_permissions(tmp_path: Path) -> None:
    """A private destination stays private (also through a symbolic link); a new one is
    created as open() creates files."""
    partition = write_transactional_partition(tmp_path)
    private, link, new = tmp_path / "private.arrow", tmp_path / "link.arrow", tmp_path / "new.arrow"
    private.write_bytes(b"an earlier export")
    private.chmod(0o600)
    link.symlink_to(private)
    for target in (private, link, new):
        kcodec.export_segments([partition], target)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and link.is_symlink()
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask


def test_the_input_is_never_the_output(tmp_path: Path) -> None:
    partition = write_transactional_partition(tmp_path)
    log = sorted(partition.glob("*.log"))[0]
    before = log.read_bytes()
    index = log.with_suffix(".index")
    index_before = index.read_bytes()
    for target in (log, index, log.with_suffix(".timeindex")):
        with pytest.raises(ValueError, match="one of the files of a partition"):
            kcodec.export_segments([partition], target, format="parquet")
        with pytest.raises(ValueError, match="one of the files of a partition"):
            kcodec.export_segments([log], target, format="parquet")
    assert log.read_bytes() == before and index.read_bytes() == index_before
    beside = partition / "export.parquet"   # a file of its own there: written again
    for _ in range(2):
        assert kcodec.export_segments([partition], beside).records == 5
    with pytest.raises(ValueError, match="cannot tell the format"):
        kcodec.export_segments([partition], tmp_path / "out.csv")


def test_a_partition_file_that_is_not_there_yet_is_refused_too(tmp_path: Path) -> None:
    """A destination named as a partition's file in a partition read (a segment, an
    index, a snapshot) is refused even where no such file is yet: it would become one."""
    partition = write_transactional_partition(tmp_path)
    before = sorted(p.name for p in partition.iterdir())
    for name in ("00000000000000009999.log", "00000000000000000000.txnindex",
                 "00000000000000000007.snapshot", "leader-epoch-checkpoint", "quorum-state",
                 "00000000000000000042-0000000003.checkpoint",
                 "00000000000000000042-0000000003.checkpoint.part"):
        with pytest.raises(ValueError, match="one of the files of a partition"):
            kcodec.export_segments([partition], partition / name, format="parquet")
    assert sorted(p.name for p in partition.iterdir()) == before


def test_only_regular_files_are_replaced(tmp_path: Path) -> None:
    """A pipe, a device or a directory at the destination is refused and left as it is;
    a symbolic link is written through, the file it names replaced."""
    partition = write_transactional_partition(tmp_path)
    pipe = tmp_path / "pipe.parquet"
    os.mkfifo(pipe)
    (tmp_path / "folder.parquet").mkdir()
    for target in (pipe, tmp_path / "folder.parquet"):
        with pytest.raises(ValueError, match="not a regular file"):
            kcodec.export_segments([partition], target)
    assert stat.S_ISFIFO(pipe.lstat().st_mode) and (tmp_path / "folder.parquet").is_dir()
    dated = tmp_path / "dated.parquet"
    dated.write_bytes(b"an earlier export")
    latest = tmp_path / "latest.parquet"
    latest.symlink_to(dated.name)
    assert kcodec.export_segments([partition], latest).records == 5
    assert latest.is_symlink() and read_back(dated).num_rows == 5
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_partition_named_twice_is_read_once(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """By its directory and a segment, twice, inside a log directory also named, or as
    "." from inside it: its records once, with the partition's own topic and number."""
    partition = write_transactional_partition(tmp_path)
    log = sorted(partition.glob("*.log"))[0]
    target = tmp_path / "out.arrow"
    for sources in ([partition, partition], [tmp_path, partition], [partition, log],
                    [log, partition, tmp_path]):
        summary = kcodec.export_segments(sources, target)
        assert (summary.records, summary.segments) == (5, 5)
        assert read_back(target).column("offset").to_pylist() == [0, 1, 2, 3, 6]
    monkeypatch.chdir(partition)
    for source in (".", log.name):
        kcodec.export_segments([source], target)
        table = read_back(target)
        assert set(table.column("topic").to_pylist()) == {"orders"}
        assert set(table.column("partition").to_pylist()) == {0}


def test_logs_named_otherwise_are_each_their_own(tmp_path: Path) -> None:
    """Files not named as segments (captures, copies) are each a log of their own, even in
    one directory: an offset range reads each, and a partial batch ending either is left
    out and reported, not taken for damage inside a partition."""
    for name, tag in (("a.log", b"A"), ("b.log", b"B")):
        builder = kcodec.BatchBuilder()
        for i in range(10):
            builder.append(tag + bytes([48 + i]), timestamp=1000 + i)
        (tmp_path / name).write_bytes(builder.build())
    sources = [tmp_path / "a.log", tmp_path / "b.log"]
    assert kcodec.export_segments(sources, tmp_path / "x.arrow", offsets=(5, 100)).records == 10
    data = (tmp_path / "a.log").read_bytes()
    (tmp_path / "a.log").write_bytes(data + data[:30])
    summary = kcodec.export_segments(sources, tmp_path / "x.arrow")
    assert summary.records == 20
    assert summary.partial_tails == ((tmp_path / "a.log", len(data), 30),)


def test_a_symbolic_link_into_a_partition_is_refused(tmp_path: Path) -> None:
    """A link whose target would become one of a partition's files (dangling, as that
    file is not there yet) is refused as the name itself would be."""
    partition = write_transactional_partition(tmp_path)
    link = tmp_path / "latest.parquet"
    link.symlink_to(partition / "00000000000000000100.log")
    with pytest.raises(ValueError, match="one of the files of a partition"):
        kcodec.export_segments([partition], link)
    assert not (partition / "00000000000000000100.log").exists()


def test_a_name_of_up_to_255_bytes(tmp_path: Path) -> None:
    """The temporary name beside the destination stays within a file name's 255 bytes."""
    partition = write_transactional_partition(tmp_path)
    target = tmp_path / ("é" * 123 + ".parquet")   # 254 bytes
    assert kcodec.export_segments([partition], target).records == 5
    assert read_back(target).num_rows == 5


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    partition = write_transactional_partition(tmp_path)
    target = tmp_path / "orders.arrow"
    assert main(["export", str(partition), "-o", str(target), "--read-committed",
                 "--headers", "--threads", "2"]) == 0
    assert f"{target}: 3 records from 5 segments, arrow" in capsys.readouterr().out
    table = read_back(target)
    assert "headers" in table.column_names and table.num_rows == 3
    assert main(["export", str(partition), "-o", str(tmp_path / "x.csv")]) == 1
    assert "cannot tell the format" in capsys.readouterr().err
    log = sorted(partition.glob("*.log"))[1]
    log.write_bytes(log.read_bytes()[:-1] + b"!")
    assert main(["export", str(partition), "-o", str(target)]) == 1
    assert capsys.readouterr().err.endswith(f"[Kafka CORRUPT_MESSAGE, code 2], in {log}\n")
    assert read_back(target).num_rows == 3   # the earlier export, untouched


def test_without_pyarrow_the_command_says_what_to_install(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    partition = write_transactional_partition(tmp_path)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *more: None if name == "pyarrow" else find_spec(name, *more))
    assert main(["export", str(partition), "-o", str(tmp_path / "out.parquet")]) == 2
    assert capsys.readouterr().err == ("kcodec export needs pyarrow: "
                                       "pip install 'kcodec[arrow]'\n")
    assert not (tmp_path / "out.parquet").exists()


def test_a_partial_batch_is_left_out_at_the_end_and_damage_before(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A partial batch ending a partition's last segment (a crash mid-write) is left out
    with a warning; one ending an earlier segment is damage (here a batch length that runs
    past the segment), an error naming it."""
    partition = write_transactional_partition(tmp_path)
    logs = sorted(partition.glob("*.log"))
    whole = segments.Segment(logs[-1])
    assert whole.partial_tail() is None
    whole.close()
    logs[-1].write_bytes(logs[-1].read_bytes() + b"\0\0\0\0\0\0\0\0\0\0\0\x50tail")
    target = tmp_path / "out.parquet"
    assert main(["export", str(partition), "-o", str(target)]) == 0
    size = logs[-1].stat().st_size
    err = capsys.readouterr().err
    assert err == (f"kcodec: warning: {logs[-1]}: 16 bytes at byte {size - 16} are not a "
                   "whole batch (left out)\n")
    summary = kcodec.export_segments([partition], target)
    assert summary.partial_tails == ((logs[-1], size - 16, 16),)
    damaged = bytearray(logs[1].read_bytes())
    struct.pack_into(">i", damaged, 8, 1 << 20)   # the first batch's length
    logs[1].write_bytes(damaged)
    assert main(["export", str(partition), "-o", str(target)]) == 1
    err = capsys.readouterr().err
    assert "are damage (at byte 0)" in err and err.endswith(f", in {logs[1]}\n")
    damaged[16] = 7   # whatever its magic byte: a file ends at a batch cut short
    logs[1].write_bytes(damaged)
    assert main(["export", str(partition), "-o", str(target)]) == 1
    assert "are damage (at byte 0)" in capsys.readouterr().err
    damaged[8:12] = logs[0].read_bytes()[8:12]   # whole again, of a magic no batch has:
    logs[1].write_bytes(damaged)                 # reading it names the error and the segment
    for read_committed in ([], ["--read-committed"]):
        assert main(["export", str(partition), "-o", str(target), *read_committed]) == 1
        err = capsys.readouterr().err
        assert "Invalid magic" in err and err.endswith(f", in {logs[1]}\n")


def test_files_and_partitions_are_fsynced_before_they_are_renamed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written aside, fsynced, renamed, and the rename made durable: an export's file, then
    its directory; a partition's segment files, its staging directory, then its parent."""
    synced: list[str] = []
    fsync = os.fsync

    def noted(fd: int) -> None:
        synced.append("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        fsync(fd)
    monkeypatch.setattr(os, "fsync", noted)
    batches = []
    for base in (0, 1):
        builder = kcodec.BatchBuilder(base_offset=base)
        builder.append(b"v", timestamp=1000)
        batches.append(builder.build())
    partition = segments.write_partition(tmp_path / "t-0", batches, segment_bytes=1)
    assert synced == ["file"] * 6 + ["directory", "directory"]   # two .log, .index, .timeindex
    synced.clear()
    kcodec.export_segments([partition], tmp_path / "out.arrow")
    assert synced == ["file", "directory"]
