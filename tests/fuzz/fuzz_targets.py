"""Fuzz targets: each takes one input and exercises one of kcodec's entry points for data.

A target returns normally or raises :class:`kcodec.errors.KcodecError` (what bad data must
give); any other exception, a crash, a hang or a runaway allocation is a bug. Some targets
also check an oracle (what kcodec writes, kcodec reads back) and raise AssertionError.

Inputs are mutated log entries, so most would fail their checksum: :func:`reseal` writes
the right CRCs so mutations reach the parsers behind the check. The first byte of an input
picks a target's options where it has some.
"""

from __future__ import annotations

import importlib.util
import struct
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import kcodec
from kcodec import codecs, kip931, plugins
from kcodec._headers_first import from_headers_first, to_headers_first
from kcodec._varint import decode_varint, encode_varint
from kcodec.dump import DumpFindings, dump_index_lines, dump_log_lines
from kcodec.errors import KcodecError
from kcodec.segments import Segment, read_offset_index, read_time_index

#: Bounds for the runs: small enough that a runaway allocation shows in the RSS limit.
MAX_DECOMPRESSED = 1 << 20
HAVE_ARROW = importlib.util.find_spec("pyarrow") is not None
#: A plugin the seeds use, so codec-5 batches reach a real codec.
PLUGIN = "fuzz-gzip"

if PLUGIN not in plugins.names():
    plugins.register(PLUGIN, plugins.BuiltinCodec("gzip"))
warnings.simplefilter("ignore", kcodec.LossyConversionWarning)


def reseal(data: bytes) -> bytes:
    """``data`` with the CRC of every top-level log entry recomputed (magic 0/1: CRC-32 of
    bytes 16.., magic 2/3: CRC-32C of bytes 21..); stops at the first entry that does not
    fit."""
    out = bytearray(data)
    position = 0
    while position + 17 <= len(out):
        (size,) = struct.unpack_from(">i", out, position + 8)
        end = position + 12 + size
        if size < 5 or end > len(out):
            break
        magic = out[position + 16]
        if magic >= 2 and size >= 9:
            struct.pack_into(">I", out, position + 17, kcodec.crc32c(out[position + 21:end]))
        elif magic < 2:
            struct.pack_into(">I", out, position + 12, kcodec.crc32(out[position + 16:end]))
        position = end
    return bytes(out)


def _options(data: bytes) -> tuple[int, bytes]:
    return (data[0], data[1:]) if data else (0, b"")


def _consume(data: bytes, validate_crc: bool, strict: bool) -> int:
    """Read every batch, record, key, value and header; the number of records."""
    count = 0
    for batch in kcodec.read_batches(data, validate_crc=validate_crc, strict=strict,
                                     max_decompressed_size=MAX_DECOMPRESSED,
                                     allow_magic3=True):
        batch.last_offset  # noqa: B018
        batch.max_timestamp  # noqa: B018
        for record in batch:
            count += 1
            record.key  # noqa: B018
            record.value  # noqa: B018
            record.timestamp  # noqa: B018
            record.headers  # noqa: B018
    return count


def read_batches(data: bytes) -> None:
    """The batch reader on every magic, with and without CRC checks and strict mode."""
    flags, data = _options(data)
    if flags & 1:
        data = reseal(data)
    try:
        _consume(data, validate_crc=bool(flags & 2), strict=bool(flags & 4))
    except KcodecError:
        pass


def decompress(data: bytes) -> None:
    """Each codec's decompressor (Kafka's framings, every magic), the prefix decompressor,
    and (on a flag) compress-then-decompress giving back the input."""
    flags, data = _options(data)
    codec = (flags & 7) % 6
    magic = (flags >> 3) & 3
    try:
        codecs.decompress(codec, data, magic, MAX_DECOMPRESSED,
                          plugin=PLUGIN if codec == 5 else None)
    except KcodecError:
        pass
    if 1 <= codec <= 4 and flags & 0x20:
        try:
            codecs.decompress_prefix(codec, data, flags, MAX_DECOMPRESSED)
        except KcodecError:
            pass
    if 1 <= codec <= 4 and flags & 0x40:
        try:
            packed = codecs.compress(codec, data, magic=magic)
        except KcodecError:
            return  # zstd below magic 2
        assert codecs.decompress(codec, packed, magic) == data, "compression round trip"


def columns(data: bytes) -> None:
    """The columnar decoder, all columns or the metadata-only projection, and Arrow (with
    binary views checked against Arrow's full validation and the binary layout)."""
    flags, data = _options(data)
    if flags & 1:
        data = reseal(data)
    chosen = None if flags & 2 else ("offset", "timestamp", "key", "headers")
    try:
        table = kcodec.decode_columns(data, columns=chosen, include_headers=True,
                                      include_control=bool(flags & 4), metadata=True,
                                      validate_crc=bool(flags & 8),
                                      max_decompressed_size=MAX_DECOMPRESSED,
                                      allow_magic3=True)
        assert len(table["offset"]) == table["count"]
        if flags & 0x10 and HAVE_ARROW:
            binary = kcodec.decode_arrow(data, validate_crc=False, include_headers=True,
                                         max_decompressed_size=MAX_DECOMPRESSED,
                                         allow_magic3=True)
            if flags & 0x20:
                views = kcodec.decode_arrow(data, validate_crc=False, include_headers=True,
                                            max_decompressed_size=MAX_DECOMPRESSED,
                                            allow_magic3=True, binary_view=True)
                views.validate(full=True)
                assert views.cast(binary.schema).equals(binary), "binary views"
    except KcodecError:
        pass


def _readable(data: bytes) -> bool:
    try:
        _consume(data, validate_crc=True, strict=False)
    except KcodecError:
        return False
    return True


def convert(data: bytes) -> None:
    """Conversion between magics and codecs; of data that reads, what it writes must read
    back (batches already in the target form are copied undecoded, readable or not)."""
    flags, data = _options(data)
    magic = flags & 3
    codec = (flags >> 2) & 7
    compression = None if codec > 4 else codec
    if magic < 2 and compression == 4:
        compression = 0
    data = reseal(data)
    try:
        out = kcodec.convert(data, magic=magic, compression=compression, on_loss="ignore")
    except KcodecError:
        return
    if _readable(data):
        _consume(out, validate_crc=True, strict=False)


def validate(data: bytes) -> None:
    """The broker's checks of produced data; what it accepts and writes must read back."""
    flags, data = _options(data)
    try:
        result = kcodec.validate(reseal(data), next_offset=flags, now=1_700_000_000_000,
                                 from_client=bool(flags & 1),
                                 produce_version=9 if flags & 2 else None)
    except KcodecError:
        return
    _consume(result.records, validate_crc=True, strict=False)


def _minimal_lengths(records: bytes, count: int) -> bytes:
    """The first ``count`` records of ``records`` (already checked) with each length
    prefix re-encoded in its shortest form, as every writer does."""
    out = bytearray()
    position = 0
    for _ in range(count):
        length, body = decode_varint(records, position)
        out += encode_varint(length) + records[body:body + length]
        position = body + length
    return bytes(out)


def headers_first(data: bytes) -> None:
    """KIP-931's headers-first layout on raw records: to it and back gives the records
    it took (length prefixes made minimal); magic-3 batches read and scanned."""
    flags, data = _options(data)
    count = flags & 0x7F
    has_attributes = not flags & 0x80
    try:
        layout = to_headers_first(data, count, has_attributes)
    except KcodecError:
        pass
    else:
        assert from_headers_first(layout, count, has_attributes, False) == _minimal_lengths(
            data, count), "headers-first round trip"
    try:
        from_headers_first(data, count, has_attributes, bool(flags & 1))
    except KcodecError:
        pass
    try:
        for batch in kcodec.read_batches(reseal(data), allow_magic3=True,
                                         max_decompressed_size=MAX_DECOMPRESSED):
            if isinstance(batch, kcodec.RecordBatch):
                kip931.scan(batch)
                kip931.measure_batch(batch)
    except KcodecError:
        pass


_directory = tempfile.TemporaryDirectory(prefix="kcodec-fuzz-")
_LOG = Path(_directory.name) / "00000000000000000000.log"


def segment(data: bytes) -> None:
    """A segment on disk: its offset and time indexes, the log, seeking and the dumps.

    Input: two bytes each give the offset and time index sizes, then the two indexes and
    the log.
    """
    if len(data) < 2:
        return
    index_size, time_size = data[0] * 8, data[1] * 12
    index = data[2:2 + index_size]
    times = data[2 + index_size:2 + index_size + time_size]
    log = data[2 + index_size + time_size:]
    _LOG.write_bytes(log)
    _LOG.with_suffix(".index").write_bytes(index)
    _LOG.with_suffix(".timeindex").write_bytes(times)
    try:
        read_offset_index(_LOG.with_suffix(".index"), 0)
        read_time_index(_LOG.with_suffix(".timeindex"), 0)
        with Segment(_LOG) as seg:
            for _ in seg.batches(validate_crc=False, max_decompressed_size=MAX_DECOMPRESSED):
                pass
            seg.verify_indexes()
            for _ in seg.seek(index_size + time_size, validate_crc=False,
                              max_decompressed_size=MAX_DECOMPRESSED):
                pass
            seg.offset_for_time(1_700_000_000_000)
        findings = DumpFindings()
        for _ in dump_log_lines(_LOG, deep=True, print_data=True, findings=findings):
            pass
        for suffix in (".index", ".timeindex"):
            for _ in dump_index_lines(_LOG.with_suffix(suffix), findings):
                pass
            for _ in dump_index_lines(_LOG.with_suffix(suffix), sanity_only=True):
                pass
        for _ in findings.lines():
            pass
    except KcodecError:
        pass


TARGETS: dict[str, Callable[[bytes], None]] = {
    "read_batches": read_batches,
    "decompress": decompress,
    "columns": columns,
    "convert": convert,
    "validate": validate,
    "headers_first": headers_first,
    "segment": segment,
}
