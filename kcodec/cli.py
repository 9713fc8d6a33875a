"""The ``kcodec`` command line."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import kcodec
from kcodec import Compression, ControlType
from kcodec.columnar import INT64_MAX, INT64_MIN
from kcodec.dump import (
    DumpEntries,
    DumpFindings,
    batch_json,
    codec_name,
    dump_index_lines,
    dump_log_lines,
    dump_producer_snapshot_lines,
    dump_transaction_index_lines,
    java_path,
    write_json,
)
from kcodec.errors import LossyConversionError, naming


def sample_events(count: int, start_ms: int) -> list[tuple[bytes, bytes, int, list[tuple[str, bytes]]]]:
    """JSON-like click events with keys and a trace header, as a producer would send them."""
    pages = ["/", "/cart", "/checkout", "/search", "/product/42"]
    events = []
    for i in range(count):
        user = f"user-{i % 97:03d}"
        body = {"user": user, "page": pages[i % len(pages)], "seq": i,
                "ts": start_ms + i * 7, "agent": "Mozilla/5.0 (X11; Linux x86_64)"}
        events.append((user.encode(), json.dumps(body).encode(), start_ms + i * 7,
                       [("trace-id", f"{i:016x}".encode())]))
    return events


def _batches(events: list[tuple[bytes, bytes, int, list[tuple[str, bytes]]]], batch_size: int,
             codec: str) -> tuple[bytes, int]:
    """Sample batches (plain, idempotent, transactional with COMMIT markers) in one codec."""
    out = bytearray()
    offset = markers = 0
    for n, start in enumerate(range(0, len(events), batch_size)):
        transactional = n % 3 == 2
        producer = n % 3 != 0
        builder = kcodec.BatchBuilder(compression=codec, base_offset=offset,
                                      producer_id=1000 if producer else -1,
                                      producer_epoch=0 if producer else -1,
                                      base_sequence=offset if producer else -1,
                                      is_transactional=transactional)
        for key, value, ts, headers in events[start:start + batch_size]:
            builder.append(value, key=key, timestamp=ts, headers=headers)
        out += builder.build()
        offset = builder.next_offset
        if transactional:
            out += kcodec.BatchBuilder.end_txn_marker(
                ControlType.COMMIT, producer_id=1000, producer_epoch=0, coordinator_epoch=1,
                base_offset=offset, timestamp=ts)
            offset += 1
            markers += 1
    return bytes(out), markers


def tour(args: argparse.Namespace) -> int:
    """Build sample batches in every codec, read them back, convert and validate them
    (in this process, without Spark)."""
    events = sample_events(args.records, 1_700_000_000_000)
    raw_size = sum(len(k) + len(v) for k, v, _, _ in events)
    print(f"kcodec {kcodec.__version__} demo (crc32c backend: {kcodec.crc32c_backend()})")
    print(f"{len(events)} JSON-like events, {raw_size} bytes of keys and values, "
          f"batches of {args.batch_size}")
    print(f"{'codec':<7} {'bytes':>9} {'ratio':>6} {'build ms':>9} {'read ms':>8}  records")
    plain = b""
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        began = time.perf_counter()
        data, markers = _batches(events, args.batch_size, codec)
        built = time.perf_counter() - began
        began = time.perf_counter()
        records = sum(1 for batch in kcodec.read_batches(data) for record in batch
                      if not batch.is_control)
        read = time.perf_counter() - began
        print(f"{codec:<7} {len(data):>9} {raw_size / len(data):>6.2f} {built * 1e3:>9.1f} "
              f"{read * 1e3:>8.1f}  {records} (+{markers} COMMIT markers)")
        plain = plain or data
    first = next(iter(next(kcodec.read_batches(plain))))
    print(f"first record: offset {first.offset}, key {first.key!r}, headers {first.headers!r}")
    old, report = kcodec.convert(plain, magic=1, compression="gzip", on_loss="ignore",
                                 report=True)
    print(f"for a magic-1 consumer: {len(old)} bytes of gzip wrappers; "
          f"{'; '.join(report.losses())}")
    single = next(kcodec.read_batches(plain)).buffer
    result = kcodec.validate(bytes(single), next_offset=5000, now=1_700_000_100_000,
                             config={"compression.type": "lz4"})
    print(f"validated as a broker with compression.type=lz4: offsets {result.first_offset}-"
          f"{result.last_offset}, {'rebuilt' if result.rebuilt else 'patched in place'}, "
          f"{len(result.records)} bytes")
    return 0


def demo(args: argparse.Namespace) -> int:
    """Write sample partitions (one per codec), read them through the kafka-log data source
    on Spark's local mode, run the compression study on Spark and write a report (Markdown
    and PNG) to a directory it prints. Needs the spark extra."""
    try:
        from kcodec.spark.demo import run
    except ImportError as exc:
        print(f"kcodec demo needs Spark: pip install 'kcodec[spark]' ({exc})", file=sys.stderr)
        return 2
    return run(args.output, args.records, args.batch_size, args.cores)


class Progress:
    """A one-line progress count on stderr, shown only on a terminal."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done = total, label, 0
        self.enabled = sys.stderr.isatty() and total > 1

    def step(self, name: str) -> None:
        self.done += 1
        if self.enabled:
            print(f"\r{self.label} {self.done}/{self.total} {name[-50:]:<50}", end="",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled:
            print("\r" + " " * 80 + "\r", end="", file=sys.stderr, flush=True)


def _log_files(paths: Sequence[str], suffixes: tuple[str, ...] = (".log",)) -> list[Path]:
    """The files named, with the files under each directory named whose suffix is one of
    ``suffixes`` (but in directories readers pass over, :func:`kcodec.segments.set_aside`)."""
    from kcodec.segments import set_aside
    files: list[Path] = []
    for name in paths:
        p = Path(name)
        if p.is_dir():
            files += sorted(f for suffix in suffixes for f in p.rglob(f"*{suffix}")
                            if not set_aside(f, p))
        else:
            files.append(p)
    return files


def dump(args: argparse.Namespace) -> int:
    """Print segments, KRaft snapshots, indexes, transaction indexes and producer snapshots
    as kafka-dump-log does (segments and KRaft snapshots also as JSON). A corrupt producer
    snapshot is reported and the dump goes on, as kafka-dump-log's does; the command then
    ends with status 1."""
    status = 0
    findings = DumpFindings()
    for name in _dump_names(args):
        suffix = Path(name).suffix
        if suffix == ".snapshot":
            status |= _dump_snapshot(name)
            continue
        if suffix in (".index", ".timeindex"):
            lines = dump_index_lines(name, findings, args.verify_index_only,
                                     args.index_sanity_check)
        elif suffix == ".txnindex":
            lines = dump_transaction_index_lines(name)
        elif suffix not in _RECORD_FILES:
            print(f"Dumping {java_path(name)}")
            print(f"Ignoring unknown file {java_path(name)}", file=sys.stderr)
            continue
        elif args.json or args.jsonl:
            _dump_json(Path(name), args)
            continue
        else:
            lines = dump_log_lines(name, args.deep_iteration, args.print_data_log,
                                   args.skip_record_metadata, args.max_bytes, findings)
        with naming(name):
            for line in lines:
                print(line)
    sys.stdout.flush()
    for line in findings.lines():
        print(line, file=sys.stderr)
    return status


def _dump_names(args: argparse.Namespace) -> list[str]:
    """The files to dump: each as named (kafka-dump-log prints a path as it was given,
    ``./`` and all), and a directory's segments and KRaft snapshots under it."""
    names: list[str] = []
    for name in args.files:
        if Path(name).is_dir() and not args.index_files:
            names += [str(f) for f in _log_files([name], _RECORD_FILES)]
        else:
            names.append(name)
    return names


_RECORD_FILES = (".log", ".checkpoint")   # a segment, a KRaft snapshot: batches, dumped alike


def _dump_snapshot(path: str) -> int:
    """A producer snapshot's lines; a corrupt one said on stderr (1), as kafka-dump-log
    prints a CorruptSnapshotException's message and goes on."""
    try:
        with naming(path):
            for line in dump_producer_snapshot_lines(path):
                print(line)
    except kcodec.errors.KcodecError as exc:
        _say_error(exc)
        return 1
    return 0


def _dump_json(path: Path, args: argparse.Namespace) -> None:
    """A segment's batches up to --max-bytes as one JSON document (without --max-bytes, with
    the bytes after the last whole batch) or as a JSON line each, written as they are read:
    a batch at a time, its records one at a time."""
    from kcodec.segments import Segment
    out = sys.stdout
    with Segment(path) as segment, naming(path):
        reader = DumpEntries(segment, args.max_bytes,
                             headers_only=not (args.deep_iteration or args.print_data_log))
        if not args.jsonl:   # (as json.dumps(..., indent=1) writes the document)
            out.write(f"{{\n \"file\": {json.dumps(str(path))},\n \"batches\": [")
        written = 0
        for b in reader:
            item = batch_json(b, args.deep_iteration, args.print_data_log, lazy=True)
            if args.jsonl:   # (json's C encoder a record at a time: several times faster)
                records = item.pop("records", None)
                line = json.dumps({"file": str(path), **item})
                if records is None:
                    out.write(line + "\n")
                else:
                    out.write(line[:-1] + ', "records": [')
                    for i, record in enumerate(records):
                        out.write((", " if i else "") + json.dumps(record))
                    out.write("]}\n")
            else:
                out.write(",\n  " if written else "\n  ")
                write_json(item, out, indent=1, depth=2)
            written += 1
        if not args.jsonl:
            trailing = reader.trailing_bytes if args.max_bytes is None else None
            out.write(f"{chr(10) + ' ' if written else ''}],\n \"trailing_bytes\": "
                      f"{json.dumps(trailing)}\n}}\n")


def verify(args: argparse.Namespace) -> int:
    """Check CRCs, record structure and index consistency; exit 1 on any problem."""
    from kcodec.segments import Segment, merged_segment_files
    files = [log for _, logs in merged_segment_files(args.paths) for log in logs]
    progress = Progress(len(files), "verify")
    problems = batches = records = 0
    for path in files:
        progress.step(str(path))
        with Segment(path) as segment:
            failed = False
            try:
                reader = segment.reader()
                for batch in reader:
                    batches += 1
                    records += sum(1 for _ in batch)   # (each read, none held)
                if reader.trailing_bytes:   # what Kafka's recovery would truncate
                    problems += 1
                    print(f"{path}: {reader.trailing_bytes} bytes at byte {reader.valid_bytes} "
                          "are not a whole batch")
            except kcodec.errors.KcodecError as exc:
                problems += 1
                failed = True
                print(f"{path}: {exc}")
            try:
                index_problems = segment.verify_indexes()
            except kcodec.errors.KcodecError as exc:   # a log that cannot be framed, said above
                index_problems = [] if failed else [str(exc)]
            for problem in index_problems:
                problems += 1
                print(f"{path}: {problem}")
    progress.close()
    for staging in _staging_directories(args.paths):
        problems += 1
        print(f"{staging}: a directory kcodec was writing, left by a write that was stopped "
              "(or still under way); remove it: a broker refuses to start with it in a log "
              "directory")
    print(f"verified {len(files)} segments, {batches} batches, {records} records: "
          f"{'no problems' if not problems else f'{problems} problems'}")
    return 1 if problems else 0


def _staging_directories(paths: Sequence[str]) -> list[Path]:
    """The hidden directories kcodec writes partitions in, found under ``paths`` (but
    those inside another: they go with it)."""
    from kcodec._atomic import ASIDE_NAME
    from kcodec.segments import set_aside
    return sorted(found for name in paths if Path(name).is_dir()
                  for found in Path(name).rglob(".*.partial")
                  if found.is_dir() and ASIDE_NAME.match(found.name)
                  and not set_aside(found, Path(name)))


_STAT_SUMS = ("segments", "batches", "records", "bytes", "record_bytes",
              "transactional_batches", "control_batches", "trailing_bytes")


def _empty_stats() -> dict[str, Any]:
    return {**dict.fromkeys(_STAT_SUMS, 0), "codecs": {}, "magics": {}, "producers": set(),
            "min_timestamp": None, "max_timestamp": None,
            "first_offset": None, "last_offset": None}


def _stats_for(paths: list[Path]) -> dict[str, Any]:
    """A partition's (or a segment's) figures; its producers as a set of ids."""
    from kcodec.segments import Segment
    out = _empty_stats()
    out["segments"] = len(paths)
    for path in paths:
        with Segment(path) as segment, naming(path):
            reader = segment.reader()
            for batch in reader:
                out["batches"] += 1
                out["bytes"] += batch.size
                codec = codec_name(batch)
                out["codecs"][codec] = out["codecs"].get(codec, 0) + 1
                out["magics"][batch.magic] = out["magics"].get(batch.magic, 0) + 1
                if batch.producer_id >= 0:
                    out["producers"].add(batch.producer_id)
                out["transactional_batches"] += batch.is_transactional
                out["control_batches"] += batch.is_control
                for r in batch:
                    out["records"] += 1
                    out["record_bytes"] += len(r.key or b"") + len(r.value or b"")
                    _widen_times(out, r.timestamp, r.timestamp)
                    if out["first_offset"] is None:
                        out["first_offset"] = r.offset
                    out["last_offset"] = r.offset
            out["trailing_bytes"] += reader.trailing_bytes
    return out


def _widen_times(out: dict[str, Any], low: int | None, high: int | None) -> None:
    if low is not None and low >= 0:
        out["min_timestamp"] = low if out["min_timestamp"] is None else min(out["min_timestamp"], low)
    if high is not None and high >= 0:
        out["max_timestamp"] = high if out["max_timestamp"] is None else max(out["max_timestamp"], high)


def _overall(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The partitions' figures together (offsets are per partition: none overall)."""
    out = _empty_stats()
    for part in parts:
        for key in _STAT_SUMS:
            out[key] += part[key]
        for key in ("codecs", "magics"):
            for name, count in part[key].items():
                out[key][name] = out[key].get(name, 0) + count
        out["producers"] |= part["producers"]
        _widen_times(out, part["min_timestamp"], part["max_timestamp"])
    return out


def _finished(stats: dict[str, Any]) -> dict[str, Any]:
    """Figures as reported: producers counted, the compression ratio added."""
    ratio = round(stats["record_bytes"] / stats["bytes"], 3) if stats["bytes"] else None
    return {**stats, "producers": len(stats["producers"]), "compression_ratio": ratio}


def _named_partitions(paths: Sequence[str]) -> list[tuple[str, list[Path]]]:
    """Each partition the paths name, once, with its segments (each once): named by its
    directory, or by the segments themselves when only those were named."""
    from kcodec.segments import is_segment_file, merged_segment_files
    named = [os.path.realpath(path) for path in paths if Path(path).is_dir()]

    def whole(directory: Path) -> bool:   # at or below a directory named
        real = os.path.realpath(directory)
        return any(os.path.commonpath([real, top]) == top for top in named)
    return [(str(directory) if whole(directory) and is_segment_file(logs[0])
             else ", ".join(map(str, logs)), logs)
            for directory, logs in merged_segment_files(paths)]


def stats(args: argparse.Namespace) -> int:
    """Per partition and overall: batches, records, bytes, codecs, ratio, magics, time range
    (with --kip931: what KIP-931's magic 3 would save instead)."""
    if args.kip931:
        return _kip931_stats(args)
    parts: dict[str, dict[str, Any]] = {}
    named = _named_partitions(args.paths)
    progress = Progress(len(named), "stats")
    for name, files in named:
        progress.step(name)
        parts[name] = _stats_for(files)
    progress.close()
    report = {name: _finished(part) for name, part in parts.items()}
    overall = _finished(_overall(list(parts.values()))) if len(parts) > 1 else None
    if args.json:
        print(json.dumps({"partitions": report, "overall": overall}, indent=1))
        return 0
    for name, item in list(report.items()) + ([("overall", overall)] if overall else []):
        offsets = ("" if name == "overall" else
                   f"offsets {item['first_offset']}-{item['last_offset']}, ")
        tail = (f", {item['trailing_bytes']} bytes after the last whole batch"
                if item["trailing_bytes"] else "")
        print(f"{name}: {item['batches']} batches, {item['records']} records, {item['bytes']} "
              f"bytes (ratio {item['compression_ratio']}), codecs {item['codecs']}, magics "
              f"{item['magics']}, {offsets}time "
              f"{item['min_timestamp']}-{item['max_timestamp']}, {item['producers']} producers, "
              f"{item['transactional_batches']} transactional and {item['control_batches']} "
              f"control batches{tail}")
    return 0


def _kip931_stats(args: argparse.Namespace) -> int:
    from kcodec.kip931 import Savings, measure
    from kcodec.segments import Segment
    report: dict[str, Any] = {}
    overall = Savings()
    for name, files in _named_partitions(args.paths):
        savings = Savings()
        for path in files:
            with Segment(path) as segment, naming(path):   # (read from the map, not copied)
                savings.add(measure(segment.framed_data()))
        overall.add(savings)
        report[name] = savings.report()
    if args.json:
        print(json.dumps({"partitions": report, "overall": overall.report()}, indent=1))
        return 0
    for name, item in [*report.items(), ("overall", overall.report())]:
        print(f"{name}: {item['batches']} batches, {item['records']} records; magic 3 saves "
              f"{item['header_bytes_saved_per_batch']} header bytes a batch and "
              f"{item['record_bytes_saved_per_record']} bytes a record: "
              f"{item['saved_uncompressed']} bytes uncompressed "
              f"({item['saved_percent_uncompressed']}%), {item['saved_compressed']} with each "
              f"batch's codec ({item['saved_percent_compressed']}%)")
    return 0


def convert_command(args: argparse.Namespace) -> int:
    """Rewrite a segment, partition directory or log directory to another magic, codec or
    level; partitions keep their aborted transactions (.txnindex) where the magic can hold
    them. A partial batch ending a partition's last segment is left out, with a warning;
    one ending any other segment is damage, an error. The partitions written appear
    together, once all are (none if one fails)."""
    from kcodec._atomic import directories_together
    from kcodec.segments import (
        Segment,
        aborted_transactions,
        base_offset_of,
        companion,
        partial_tails,
        read_transaction_index,
        segment_files,
        write_partition,
    )
    root, destination = Path(args.source), Path(args.destination)
    partitions = segment_files(root)
    _refuse_destination_in_source(root, destination)
    progress = Progress(sum(len(files) for _, files in partitions), "convert")
    said = []
    with directories_together(destination) as place:
        targets = []   # (all named first: one that exists fails the command before any work)
        for directory, _ in partitions:
            name = (root.stem if root.is_file()
                    else Path(os.path.abspath(directory)).name if directory == root  # also "."
                    else str(directory.relative_to(root)))
            targets.append((name, place(name)))
        for (directory, files), (name, target) in zip(partitions, targets, strict=True):
            if root.is_file():
                txnindex = companion(root, ".txnindex")
                aborted = read_transaction_index(txnindex) if txnindex.exists() else []
            else:
                aborted = aborted_transactions(directory)
            _warn_of_partial_tails(partial_tails(files))
            # an empty last segment (the cleaner's or retention's) holds the log end offset
            end = base_offset_of(files[-1]) if files and not files[-1].stat().st_size else None
            write_partition(target, _converted(files, args, progress),
                            aborted=aborted if args.magic >= 2 else (), log_end_offset=end)
            written = 0
            for log in sorted(target.glob("*.log")):
                with Segment(log) as segment:
                    written += sum(1 for _ in segment.reader())
            said.append(f"{root if root.is_file() else directory} -> {destination / name}: "
                        f"{written} batches written and read back")
    progress.close()
    for line in said:
        print(line)
    return 0


def _converted(files: Sequence[Path], args: argparse.Namespace,
               progress: Progress) -> Iterator[kcodec.RecordBatch | kcodec.LegacyBatch]:
    """The batches of the segments ``files`` converted as ``args`` say, a batch at a time;
    a loss not allowed is an error at the end of the segment it happened in."""
    from kcodec.convert import ConversionReport, iter_convert, loss_text
    from kcodec.segments import Segment
    for path in files:
        progress.step(str(path))
        report = ConversionReport()
        with Segment(path) as segment, naming(path):
            for piece in iter_convert(segment.framed_data(), magic=args.magic,
                                      compression=args.compression, level=args.level,
                                      plugin=args.plugin, report=report):
                yield from kcodec.read_batches(piece, validate_crc=False)
            if report.lossy and not args.allow_loss:
                raise LossyConversionError(loss_text(args.magic, report))


def _refuse_destination_in_source(root: Path, destination: Path) -> None:
    """ValueError if ``destination`` is, or lies in, the directory read for ``root`` (a
    tree, or a segment's partition): its output would be read as input by every later
    reader of the tree, the records twice."""
    from kcodec.segments import is_segment_file
    read = root if root.is_dir() else root.parent if is_segment_file(root) else None
    if read is None:
        return
    inside, where = Path(os.path.realpath(destination)), Path(os.path.realpath(read))
    if inside == where or where in inside.parents:
        raise ValueError(f"{destination} lies in {read}, which convert reads: its partitions "
                         "would be read with the source's; choose a destination outside")


def _warn_of_partial_tails(tails: Sequence[tuple[Path, int, int]]) -> None:
    for log, position, size in tails:
        print(f"kcodec: warning: {log}: {size} bytes at byte {position} are not a whole batch "
              "(left out)", file=sys.stderr)


def export_command(args: argparse.Namespace) -> int:
    """Write the records of segments, partitions or log directories to one Parquet or Arrow
    IPC file, as a consumer reads them (control records out; --read-committed leaves out
    aborted transactions). Needs pyarrow (the arrow extra)."""
    if importlib.util.find_spec("pyarrow") is None:   # (imported as the export starts)
        print("kcodec export needs pyarrow: pip install 'kcodec[arrow]'", file=sys.stderr)
        return 2
    from kcodec.export import export_segments
    summary = export_segments(
        args.sources, args.output, format=args.format,
        compression=None if args.compression == "none" else args.compression,
        include_headers=args.headers, metadata=args.metadata,
        offsets=(args.start_offset, args.end_offset),
        timestamps=(args.start_timestamp, args.end_timestamp),
        include_control=args.include_control, read_committed=args.read_committed,
        threads=args.threads)
    _warn_of_partial_tails(summary.partial_tails)
    print(f"{summary.path}: {summary.records} records from {summary.segments} segments, "
          f"{summary.format}, {summary.bytes} bytes")
    return 0


def gen(args: argparse.Namespace) -> int:
    """Write sample partitions: JSON-like events in several codecs, keys, headers,
    transactions; they appear together, once all are written."""
    from kcodec._atomic import directories_together
    from kcodec.segments import split_entries, write_partition
    codecs, destination = args.codecs, Path(args.destination)
    names = [f"{args.topic}-{partition}" for partition in range(args.partitions)]
    with directories_together(destination) as place:
        targets = [place(name) for name in names]
        for partition, target in enumerate(targets):
            events = sample_events(args.records, 1_700_000_000_000 + partition)
            data, _ = _batches(events, args.batch_size, codecs[partition % len(codecs)])
            write_partition(target, split_entries(data), segment_bytes=args.segment_bytes)
    for partition, name in enumerate(names):
        print(f"{destination / name}: {args.records} records, {codecs[partition % len(codecs)]}")
    return 0


def bench(args: argparse.Namespace) -> int:
    """Time kcodec on sample data here: build, read, columns, per codec (records/s)."""
    events = sample_events(args.records, 1_700_000_000_000)
    print(f"{'codec':<7} {'build':>12} {'read':>12} {'columns':>12}   (records/s, best of 5)")
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        def best(fn: Any) -> float:
            times = []
            for _ in range(5):
                began = time.perf_counter()
                fn()
                times.append(time.perf_counter() - began)
            return len(events) / min(times)
        data, _ = _batches(events, args.batch_size, codec)
        build = best(lambda: _batches(events, args.batch_size, codec))
        read = best(lambda: [r.value for b in kcodec.read_batches(data) for r in b])
        columns = best(lambda: kcodec.decode_columns(data))
        print(f"{codec:<7} {build:>12,.0f} {read:>12,.0f} {columns:>12,.0f}")
    print("the comparisons with other libraries are in bench/ of the source tree")
    return 0


def plugins_command(args: argparse.Namespace) -> int:
    """List the compression plugins (codec id 5) this installation can read and write."""
    for name in kcodec.plugins.names():
        print(name)
    return 0


def _whole(text: str, least: int) -> int:
    """An argument's number, ``least`` or more (argparse reports the error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} is below {least}")
    return value


def _builtin_codecs(text: str) -> list[str]:
    """Comma-separated names of built-in codecs, each checked before anything is written."""
    names = text.split(",")
    for name in names:
        try:
            codec = Compression.parse(name)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if codec is Compression.PLUGGABLE:
            raise argparse.ArgumentTypeError("sample partitions use the built-in codecs; "
                                             "convert them to a plugin's with kcodec convert")
    return names


def _positive(text: str) -> int:
    return _whole(text, 1)


def _non_negative(text: str) -> int:
    return _whole(text, 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcodec", description=kcodec.__doc__)
    parser.add_argument("--version", action="version", version=f"kcodec {kcodec.__version__}")
    parser.add_argument("--max-decompressed-size", type=_non_negative, metavar="BYTES",
                        default=None, help="the most one batch may decompress to (default: 256 MiB; "
                        "more is an error, Kafka's MESSAGE_TOO_LARGE)")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, fn: Any, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=fn.__doc__)
        sub.set_defaults(run=fn)
        return sub

    demo_parser = command("demo", demo, "sample partitions read on Spark, and a compression "
                          "study report")
    demo_parser.add_argument("--output", help="report directory (default: a new temporary one)")
    demo_parser.add_argument("--records", type=_positive, default=50_000,
                             help="records per partition")
    demo_parser.add_argument("--batch-size", type=_positive, default=1000, help="records per batch")
    demo_parser.add_argument("--cores", type=_positive, default=2, help="Spark local[N]")

    tour_parser = command("tour", tour, "build and read sample Kafka record batches")
    tour_parser.add_argument("--records", type=_positive, default=10_000, help="records to generate")
    tour_parser.add_argument("--batch-size", type=_positive, default=500, help="records per batch")

    dump_parser = command("dump", dump, "print segments as kafka-dump-log does")
    dump_parser.add_argument("files", nargs="+", help=".log, .checkpoint (KRaft snapshots), .index, .timeindex, .txnindex "
                             "or .snapshot files, or directories (their .log and .checkpoint files)")
    dump_parser.add_argument("--deep-iteration", action="store_true", help="print records")
    dump_parser.add_argument("--print-data-log", action="store_true",
                             help="print keys and values (implies --deep-iteration)")
    dump_parser.add_argument("--skip-record-metadata", action="store_true",
                             help="with --print-data-log, print only keys and payloads")
    dump_parser.add_argument("--max-bytes", type=_non_negative, default=None,
                             help="read only a log's first MAX_BYTES bytes, up to the last "
                                  "batch ending within them")
    dump_parser.add_argument("--json", action="store_true", help="one JSON document per file")
    dump_parser.add_argument("--jsonl", action="store_true", help="one JSON line per batch")
    dump_parser.add_argument("--index-files", action="store_true",
                             help="take the arguments as files even if directories")
    dump_parser.add_argument("--verify-index-only", action="store_true",
                             help="check .index and .timeindex entries against their segment "
                                  "without printing them")
    dump_parser.add_argument("--index-sanity-check", action="store_true",
                             help="check .index and .timeindex files as a broker does at "
                                  "start-up (to decide whether to rebuild them), nothing more")

    verify_parser = command("verify", verify, "check CRCs, records and indexes")
    verify_parser.add_argument("paths", nargs="+", help="segments, partition or log directories")

    stats_parser = command("stats", stats, "per-partition and overall statistics")
    stats_parser.add_argument("paths", nargs="+", help="segments, partition or log directories")
    stats_parser.add_argument("--json", action="store_true", help="print one JSON document")
    stats_parser.add_argument("--kip931", action="store_true",
                              help="bytes KIP-931's magic 3 would save against magic 2")

    convert_parser = command("convert", convert_command,
                             "rewrite segments to another magic, codec or level")
    convert_parser.add_argument("source", help="a .log file, partition or log directory")
    convert_parser.add_argument("destination", help="directory to write partitions into")
    convert_parser.add_argument("--magic", type=int, default=2, choices=(0, 1, 2),
                                help="record format to write (default: 2)")
    convert_parser.add_argument("--compression", default=None, help="codec (default: keep)")
    convert_parser.add_argument("--level", type=int, default=None,
                                help="the codec's level (default: Kafka's for the codec)")
    convert_parser.add_argument("--plugin", default=None,
                                help="with --compression pluggable: the plugin's name")
    convert_parser.add_argument("--allow-loss", action="store_true",
                                help="drop what the target magic cannot hold")

    export_parser = command("export", export_command,
                            "write records to a Parquet or Arrow IPC file")
    export_parser.add_argument("sources", nargs="+",
                               help=".log files, partition or log directories")
    export_parser.add_argument("-o", "--output", required=True,
                               help="the file to write (.parquet or .arrow)")
    export_parser.add_argument("--format", choices=("parquet", "arrow"), default=None,
                               help="default: from the output's suffix")
    export_parser.add_argument("--compression", default="zstd",
                               help="the file's codec, or none (default: zstd)")
    export_parser.add_argument("--headers", action="store_true", help="add the headers column")
    export_parser.add_argument("--metadata", action="store_true",
                               help="add the batch-level columns (magic, producer id, ...)")
    export_parser.add_argument("--start-offset", type=int, default=INT64_MIN,
                               help="first offset kept")
    export_parser.add_argument("--end-offset", type=int, default=INT64_MAX,
                               help="first offset left out")
    export_parser.add_argument("--start-timestamp", type=int, default=INT64_MIN,
                               help="first timestamp kept (ms)")
    export_parser.add_argument("--end-timestamp", type=int, default=INT64_MAX,
                               help="first timestamp left out (ms)")
    export_parser.add_argument("--include-control", action="store_true",
                               help="keep control records (transaction markers)")
    export_parser.add_argument("--read-committed", action="store_true",
                               help="leave out aborted transactions (from .txnindex files)")
    export_parser.add_argument("--threads", type=_positive, default=os.cpu_count() or 1,
                               help="decoding threads (default: one a core)")

    gen_parser = command("gen", gen, "write sample partitions")
    gen_parser.add_argument("destination", help="log directory to write <topic>-<n> into")
    gen_parser.add_argument("--topic", default="events", help="topic name (default: events)")
    gen_parser.add_argument("--partitions", type=_positive, default=3,
                            help="partitions to write (default: 3)")
    gen_parser.add_argument("--records", type=_positive, default=10_000,
                            help="records per partition (default: 10000)")
    gen_parser.add_argument("--batch-size", type=_positive, default=500,
                            help="records per batch (default: 500)")
    gen_parser.add_argument("--codecs", type=_builtin_codecs, default="none,gzip,snappy,lz4,zstd",
                            help="comma-separated codecs, taken in turn by the partitions "
                                 "(default: none,gzip,snappy,lz4,zstd)")
    gen_parser.add_argument("--segment-bytes", type=_positive, default=1 << 30,
                            help="roll a segment past this size, as segment.bytes "
                                 "(default: 1 GiB)")

    command("plugins", plugins_command, "list installed compression plugins")

    bench_parser = command("bench", bench, "time kcodec on sample data")
    bench_parser.add_argument("--records", type=_positive, default=20_000,
                              help="records per codec (default: 20000)")
    bench_parser.add_argument("--batch-size", type=_positive, default=1000,
                              help="records per batch (default: 1000)")
    return parser


def _say_error(exc: kcodec.errors.KcodecError) -> None:
    """One line on stderr: the error, then the files its notes name."""
    where = "".join(f", {note}" for note in getattr(exc, "__notes__", ()))
    print(f"kcodec: error: {exc}{where}", file=sys.stderr)


class _Terminated(BaseException):
    """SIGTERM (kill, timeout, a container stopping), raised where Python runs next; as
    KeyboardInterrupt, not an Exception, so that no handler of errors takes it."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    limit = kcodec.codecs.get_max_decompressed_size()   # (restored after: main may be called)
    if args.max_decompressed_size is not None:
        kcodec.codecs.set_max_decompressed_size(args.max_decompressed_size)
    in_main_thread = threading.current_thread() is threading.main_thread()
    on_sigterm = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    try:
        return int(args.run(args))
    except _Terminated:   # as Ctrl-C: what was being written is gone (written aside)
        print("kcodec: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:  # Ctrl-C: what was being written is gone (written aside)
        print("kcodec: interrupted", file=sys.stderr)
        return 130
    except kcodec.errors.KcodecError as exc:
        _say_error(exc)
        return 1
    except (OSError, ValueError) as exc:
        print(f"kcodec: error: {exc}", file=sys.stderr)
        return 1
    finally:
        kcodec.codecs.set_max_decompressed_size(limit)
        if on_sigterm is not None:
            signal.signal(signal.SIGTERM, on_sigterm)
