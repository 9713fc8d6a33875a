"""Compressed batches decoded block by block or in a pass without the GIL keep every
verdict of the row reader."""

from __future__ import annotations

from typing import Any

import pytest

import kcodec
from kcodec.errors import CompressionError, DecompressionLimitError, InvalidRecordError, KcodecError

from .columnar_rows import (
    TS,
    arrow_rows,
    batch_of,
    batch_of_section,
    batch_of_values,
    column_rows,
    rows,
    views,
)


def _compressed_batch_of_records(codec: str, header: bytes, records: bytes, count: int,
                                 base_offset: int = 0) -> bytes:
    """``header`` (an uncompressed v2 batch's first 61 bytes) made a batch of the (possibly
    malformed) records region ``records`` compressed with ``codec``."""
    from kcodec import codecs
    return batch_of_section(header, codecs.compress(codec, records), codec, count, base_offset)


LAYOUTS = ["binary", "views", "scan"]


def _decode(log: bytes, layout: str, **options: Any) -> Any:
    """decode_columns (binary), decode_arrow with binary views, or a scan without values."""
    if layout == "views":
        return kcodec.decode_arrow(log, binary_view=True, **options)
    if layout == "scan":
        return kcodec.decode_columns(log, columns=["offset", "timestamp", "key", "headers"],
                                     **options)
    return kcodec.decode_columns(log, **options)


@pytest.mark.parametrize("count", [8000, 16000])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd"])
def test_batches_decoded_block_by_block_keep_every_verdict(codec: str, layout: str,
                                                          count: int) -> None:
    """LZ4, snappy and zstd batches are decoded as each block (of zstd, 512 KiB window) is
    decompressed (without views, from a buffer that drops the records decoded past 512 KiB,
    or for snappy's values straight in the value column); a zstd frame framed to at most
    4 MiB is decompressed in one call by libzstd from C instead. A batch that goes wrong
    part way is undone and given the ordinary verdict, and the batches before it are
    intact."""
    good = batch_of(0, count, 300)   # 16 000: 5 MiB of records, ~80 LZ4 (~160 snappy) blocks
    header, records = good[:61], good[61:]
    compressed_good = _compressed_batch_of_records(codec, header, records, count)
    assert column_rows(kcodec.decode_columns(compressed_good, include_headers=True)) == (
        column_rows(kcodec.decode_columns(good, include_headers=True)))
    if layout == "views":
        assert _decode(compressed_good, layout).column("value").to_pylist() == [
            bytes([i % 251]) * 300 for i in range(count)]
    if layout == "scan":
        scan = _decode(compressed_good, layout)
        assert column_rows(scan) == column_rows(_decode(good, layout))
    damaged = bytearray(records)
    at = 0
    for _ in range(count * 15 // 16):   # to a record in a late block
        length, after = kcodec.decode_varint(records, at)
        at = after + length
    damaged[at] = damaged[at] & 0x80 | (damaged[at] + 2) & 0x7F   # its length, 1 more
    empty = bytearray(records)
    empty[at:at + 2] = b"\0\0"   # its length 0, then a record of length 0 too
    for bad in [_compressed_batch_of_records(codec, header, bytes(damaged), count, count),
                _compressed_batch_of_records(codec, header, bytes(empty), count, count),
                _compressed_batch_of_records(codec, header, records, count + 1, count),
                _compressed_batch_of_records(codec, header, records + b"\0\0", count, count),
                _compressed_batch_of_records(codec, header, records, 2**31 - 1, count)]:
        with pytest.raises(InvalidRecordError) as caught:
            _decode(compressed_good + bad, layout)
        assert caught.value.position == len(compressed_good)
    truncated = bytearray(compressed_good[:-9])   # the stream loses its last bytes
    truncated[8:12] = (len(truncated) - 12).to_bytes(4, "big")
    truncated[17:21] = kcodec.crc32c(bytes(truncated[21:])).to_bytes(4, "big")
    with pytest.raises(KcodecError) as ordinary:   # the row reader's verdict
        [r for b in kcodec.read_batches(bytes(truncated)) for r in b]
    with pytest.raises(type(ordinary.value)):
        _decode(bytes(truncated), layout)
    # the limit counts every byte decompressed, also those decoded and dropped on the way,
    # and each batch's alone (not the values of the batches before it in the same column)
    assert _decode(compressed_good * 2, layout, max_decompressed_size=len(records))
    with pytest.raises(DecompressionLimitError):
        _decode(compressed_good, layout, max_decompressed_size=len(records) - 1)
    with pytest.raises(DecompressionLimitError):
        _decode(good + compressed_good, layout, max_decompressed_size=len(records) - 1)


def _lz4_batch_of_blocks(header: bytes, records: bytes, count: int, base_offset: int) -> bytes:
    """An LZ4 batch whose frame holds ``records`` as a block kcodec's decoder decides and a
    last block of 15 literals it leaves to liblz4 (which decodes it)."""
    import cramjam

    from kcodec import _frames
    first = bytes(cramjam.lz4.compress_block(records[:-15], store_size=False))
    last = b"\xf0\x00" + records[-15:]   # (a literal length that ends where the input does)
    descriptor = b"\x60\x40"
    frame = (b"\x04\x22\x4d\x18" + descriptor
             + bytes([_frames.lz4_header_checksum(descriptor, 2)])
             + b"".join(len(b).to_bytes(4, "little") + b for b in (first, last)) + b"\0" * 4)
    return batch_of_section(header, frame, "lz4", count, base_offset)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd"])
def test_small_frames_decoded_in_one_pass_keep_every_verdict(codec: str, layout: str) -> None:
    """Small LZ4, snappy and zstd batches are queued with the uncompressed ones around them
    and decompressed in one pass without the GIL (with binary views, into one buffer the
    views share); a batch that pass cannot decide (a block only the library decides, a
    damaged record, a limit) is undone and given the ordinary verdict, and the batches
    before and after it are decoded as ever."""
    plain = [batch_of(base, 10, 50) for base in range(0, 100, 10)]
    small = [_compressed_batch_of_records(codec, b[:61], b[61:], 10, base)
             for base, b in zip(range(0, 100, 10), plain)]
    assert all(len(b) < 2000 for b in small)
    mixed = b"".join(small[i] if i % 3 else plain[i] for i in range(10))
    expected = column_rows(kcodec.decode_columns(b"".join(plain), include_headers=True))
    for threads in (1, 2):
        assert column_rows(kcodec.decode_columns(b"".join(small), include_headers=True,
                                                 threads=threads)) == expected
        assert column_rows(kcodec.decode_columns(mixed, include_headers=True,
                                                 threads=threads)) == expected
    if layout == "scan":
        assert column_rows(_decode(mixed, layout)) == column_rows(
            _decode(b"".join(plain), layout))
    if layout == "views":
        for threads in (1, 2):
            table = views(mixed, include_headers=True, threads=threads)
            assert arrow_rows(table) == expected
            for chunk in table.column("value").chunks:
                # validity, views, copied values: then the input and the frames' buffer
                assert len(chunk.buffers()) <= 5
    header, records = plain[5][:61], plain[5][61:]
    if codec == "lz4":   # a batch in the middle that only liblz4 decides
        undecided = _lz4_batch_of_blocks(header, records, 10, 50)
        log = b"".join(small[:5]) + undecided + b"".join(small[6:])
        assert column_rows(kcodec.decode_columns(log, include_headers=True)) == expected
        if layout == "scan":
            assert column_rows(_decode(log, layout)) == column_rows(
                _decode(b"".join(plain), layout))
        if layout == "views":
            assert arrow_rows(views(log, include_headers=True)) == expected
    damaged = bytearray(records)
    damaged[0] += 2   # the first record's length, 1 more
    before = b"".join(small[:5])
    for bad in [_compressed_batch_of_records(codec, header, bytes(damaged), 10, 50),
                _compressed_batch_of_records(codec, header, records, 11, 50),
                _compressed_batch_of_records(codec, header, records + b"\0\0", 10, 50)]:
        with pytest.raises(InvalidRecordError) as invalid:
            _decode(before + bad + b"".join(small[6:]), layout)
        assert invalid.value.position == len(before)
    corrupt = bytearray(small[5])
    corrupt[-12:-4] = b"\xff" * 8   # the frame's last bytes
    corrupt[17:21] = kcodec.crc32c(bytes(corrupt[21:])).to_bytes(4, "big")
    with pytest.raises(KcodecError) as ordinary:
        [r for b in kcodec.read_batches(before + bytes(corrupt)) for r in b]
    with pytest.raises(type(ordinary.value)) as same:
        _decode(before + bytes(corrupt), layout)
    assert same.value.position == ordinary.value.position
    crc = bytearray(small[5])
    crc[-1] ^= 1
    with pytest.raises(kcodec.errors.ChecksumError) as mismatch:
        _decode(before + bytes(crc), layout)
    assert mismatch.value.position == len(before)
    most = max(len(b) - 61 for b in plain)
    assert _decode(mixed, layout, max_decompressed_size=most)
    with pytest.raises(DecompressionLimitError) as rows_limit:
        [r for b in kcodec.read_batches(mixed, max_decompressed_size=most - 1) for r in b]
    with pytest.raises(DecompressionLimitError) as limit:
        _decode(mixed, layout, max_decompressed_size=most - 1)
    assert limit.value.position == rows_limit.value.position == len(plain[0]) + 61


def test_small_zstd_frames_of_every_kind_without_the_gil() -> None:
    """libzstd is called without the GIL through python-zstandard's CFFI backend (cffi
    comes with kcodec), with contexts kept from decode to decode (until the spare buffers
    are released). Small zstd batches decode as the row reader reads them whether
    their frame states its content size or not (zstd-jni's does not) and with a content
    checksum; a frame whose framing allows more than one call takes (1 MiB), a damaged
    checksum, and concatenated frames are left to the ordinary path, which decides them."""
    import zstandard

    from kcodec import _libzstd
    assert _libzstd.available()
    plain = [batch_of(base, 10, 50) for base in range(0, 40, 10)]
    sized, unsized, checked = (zstandard.ZstdCompressor(write_content_size=size,
                                                        write_checksum=checksum)
                               for size, checksum in [(True, False), (False, False),
                                                      (False, True)])

    def batch(header: bytes, section: bytes, count: int, base: int) -> bytes:   # zstd's
        return batch_of_section(header, section, "zstd", count, base)
    zeros = batch_of_values(40, [bytes(2000)] * 600)   # 1.2 MB of records, a few KB zstd
    compressors = [sized, unsized, checked, unsized]
    batches = [batch(b[:61], c.compress(b[61:]), 10, base)
               for base, b, c in zip(range(0, 40, 10), plain, compressors)]
    twice = bytes(plain[0][61:])
    batches.append(batch(zeros[:61], unsized.compress(zeros[61:]), 600, 40))
    batches.append(batch(plain[0][:61], sized.compress(twice[:100]) +
                         sized.compress(twice[100:]), 10, 640))
    log = b"".join(batches)
    assert all(b.size < 16384 for b in kcodec.read_batches(log))
    expected = rows(log)
    for threads in (1, 2, 1):   # (decompression contexts kept, freed, and made again)
        assert column_rows(kcodec.decode_columns(log, include_headers=True,
                                                 threads=threads)) == expected
        assert arrow_rows(views(log, include_headers=True, threads=threads)) == expected
        kcodec.columnar.release_spare_buffers()
    damaged = bytearray(batch(plain[1][:61], checked.compress(plain[1][61:]), 10, 10))
    damaged[-1] ^= 1   # the content checksum
    damaged[17:21] = kcodec.crc32c(bytes(damaged[21:])).to_bytes(4, "big")
    with pytest.raises(CompressionError) as ordinary:
        rows(batches[0] + bytes(damaged))
    with pytest.raises(CompressionError) as caught:
        kcodec.decode_columns(batches[0] + bytes(damaged))
    assert (str(caught.value), caught.value.position) == (str(ordinary.value),
                                                          ordinary.value.position)


def _zstd_frame(descriptor: bytes, kind: int, size: int, content: bytes,
                last: bool = True) -> bytes:
    """A zstd frame made by hand: the magic number, ``descriptor`` (the rest of the frame
    header) and one block of ``kind`` (0 raw, 1 RLE) and ``size``, the last one unless not
    ``last``."""
    header = last | kind << 1 | size << 3
    return b"\x28\xb5\x2f\xfd" + descriptor + header.to_bytes(3, "little") + content


# frame header descriptors: two that state no content size but a window, one that states it
_UNSIZED_2MIB, _UNSIZED_1KIB = bytes([0, 11 << 3]), bytes([0, 0])


_SIZED_200K = b"\xa0" + (200_000).to_bytes(4, "little")


_EMPTY_LAST_BLOCK = b"\x01\x00\x00"


@pytest.mark.parametrize("frame, accepted", [
    (_zstd_frame(_UNSIZED_2MIB, 1, 100_000, b"x"), True),
    (_zstd_frame(_UNSIZED_2MIB, 1, 200_000, b"x"), False),      # past 128 KiB
    (_zstd_frame(_UNSIZED_1KIB, 0, 1000, bytes(1000)), True),
    (_zstd_frame(_UNSIZED_1KIB, 0, 2000, bytes(2000)), False),  # past the 1 KiB window
    (_zstd_frame(_SIZED_200K, 1, 200_000, b"x"), True),         # the one-call decoder's
    (_zstd_frame(_SIZED_200K, 1, 100_000, b"x"), False),        # short of its size
    (_zstd_frame(_SIZED_200K, 1, 100_000, b"x", last=False) + _EMPTY_LAST_BLOCK, False),
])
def test_zstd_blocks_are_decided_as_python_zstandard_decides(frame: bytes,
                                                             accepted: bool) -> None:
    """A zstd block decompresses to at most the frame's block size (its window, and never
    more than 128 KiB: RFC 8878, 3.1.1.2.3). libzstd's streaming decoder, which Java's
    reader and python-zstandard's decompressor use, refuses a block past it, but hands a
    frame that states its content size to its one-call decoder, which does not: kcodec
    decides each frame as python-zstandard's decompressor does, in rows and in every
    columnar layout, whichever path decompresses it."""
    import zstandard

    from kcodec import codecs
    try:
        peer: bytes | None = zstandard.ZstdDecompressor().decompress(frame,
                                                                     max_output_size=1 << 22)
    except zstandard.ZstdError:
        peer = None
    assert (peer is not None) == accepted
    if accepted:
        assert codecs.decompress("zstd", frame) == peer
    else:
        with pytest.raises(CompressionError, match="corrupt zstd data"):
            codecs.decompress("zstd", frame)
    log = batch_of_section(batch_of(0, 1, 10)[:61], frame, "zstd", 1, 0)
    with pytest.raises(KcodecError) as ordinary:
        rows(log)
    assert isinstance(ordinary.value, CompressionError) != accepted
    for layout in LAYOUTS:
        for threads in (1, 2):
            with pytest.raises(KcodecError) as caught:
                _decode(log, layout, threads=threads)
            assert (type(caught.value), str(caught.value), caught.value.position) == (
                type(ordinary.value), str(ordinary.value), ordinary.value.position)


@pytest.mark.parametrize("values", [10, 1000])
def test_truncated_zstd_batches_fail_as_rows_fail(values: int) -> None:
    """A zstd batch whose section ends inside its frame (a small one, queued; a large one,
    read a window at a time) fails in every layout with the row reader's error, at its
    position, after the batch before it."""
    import random
    rng = random.Random(values)
    plain = batch_of_values(10, [rng.randbytes(100) for _ in range(values)])
    from kcodec import codecs
    section = codecs.compress("zstd", plain[61:])
    before = _compressed_batch_of_records("zstd", plain[:61], plain[61:], values, 0)
    for cut in (len(section) // 2, len(section) - 3):
        log = before + batch_of_section(plain[:61], section[:cut], "zstd", values, values)
        with pytest.raises(CompressionError) as ordinary:
            rows(log)
        assert ordinary.value.position == len(before) + 61   # (its records section)
        for layout in LAYOUTS:
            for threads in (1, 2):
                with pytest.raises(CompressionError) as caught:
                    _decode(log, layout, threads=threads)
                assert (str(caught.value), caught.value.position) == (
                    str(ordinary.value), ordinary.value.position)


def _gzip_member(data: bytes, name: bytes = b"") -> bytes:
    """One gzip member of ``data`` (with a file name in its header when given)."""
    import gzip
    import io
    out = io.BytesIO()
    with gzip.GzipFile(filename=name.decode(), mode="wb", fileobj=out, mtime=0) as member:
        member.write(data)
    return out.getvalue()


def test_small_gzip_batches_of_every_kind_without_the_gil() -> None:
    """zlib is called without the GIL through the functions of the library the zlib module
    uses, with streams kept from decode to decode (until the spare buffers are released).
    Small gzip batches decode as the row reader reads them, whatever the member's header
    holds; several members, bytes after the member (which Java ignores), a member that
    inflates past what its trailer states or past 16 KiB when it is 1 KiB or more (left to
    cramjam) are left to the ordinary path, which decides them."""
    import random

    from kcodec import _libz
    assert _libz.available()
    rng = random.Random(38)
    plain = [batch_of(base, 10, 50) for base in range(0, 40, 10)]
    records = [bytes(b[61:]) for b in plain]
    sections = [_gzip_member(records[0]), _gzip_member(records[1], name=b"records.bin"),
                _gzip_member(records[2][:200]) + _gzip_member(records[2][200:]),
                _gzip_member(records[3]) + b"\x00\x00 after"]
    batches = [batch_of_section(b[:61], section, "gzip", 10, base)
               for base, b, section in zip(range(0, 40, 10), plain, sections)]

    def letters(n: int) -> bytes:   # (2 bits a byte: gzip takes them to about a quarter)
        return bytes(rng.choice(b"acgt") for _ in range(n))
    queued = batch_of_values(40, [letters(400) for _ in range(20)])    # ~8 KB, ~2 KB gzip
    larger = batch_of_values(60, [letters(600) for _ in range(30)])    # ~18 KB, ~5 KB
    zeros = batch_of_values(90, [bytes(2000)] * 600)   # 1.2 MB of records, a few KB gzip
    batches += [batch_of_section(b[:61], _gzip_member(bytes(b[61:])), "gzip", n, base)
                for b, n, base in [(queued, 20, 40), (larger, 30, 60), (zeros, 600, 90)]]
    log = b"".join(batches)
    assert [1024 < b.size < 16384 for b in kcodec.read_batches(log)][-3:] == [True] * 3
    expected = rows(log)
    for threads in (1, 2, 1):   # (streams kept, freed, and made again)
        assert column_rows(kcodec.decode_columns(log, include_headers=True,
                                                 threads=threads)) == expected
        assert arrow_rows(views(log, include_headers=True, threads=threads)) == expected
        kcodec.columnar.release_spare_buffers()


@pytest.mark.parametrize("damage", ["trailer crc", "trailer size", "truncated", "limit"])
def test_small_gzip_batches_fail_as_rows_fail(damage: str) -> None:
    """A small gzip batch whose member is damaged (its trailer's CRC-32 or size, cut short)
    or that inflates past the limit fails in every layout with the row reader's error, at
    its position, after the batch before it."""
    plain = batch_of(10, 10, 50)
    section = bytearray(_gzip_member(bytes(plain[61:])))
    first = batch_of(0, 5, 50)   # (within the limit)
    before = _compressed_batch_of_records("gzip", first[:61], first[61:], 5, 0)
    limit = None
    if damage == "trailer crc":
        section[-8] ^= 1
    elif damage == "trailer size":
        section[-4] -= 1
    elif damage == "truncated":
        section = section[:-9]
    else:
        limit = len(plain) - 61 - 1
    log = before + batch_of_section(plain[:61], bytes(section), "gzip", 10, 10)
    error = DecompressionLimitError if damage == "limit" else CompressionError
    with pytest.raises(error) as ordinary:
        list(r for b in kcodec.read_batches(log, max_decompressed_size=limit) for r in b)
    assert ordinary.value.position == len(before) + 61   # (its records section)
    for layout in LAYOUTS:
        for threads in (1, 2):
            with pytest.raises(error) as caught:
                _decode(log, layout, threads=threads, max_decompressed_size=limit)
            assert (str(caught.value), caught.value.position) == (
                str(ordinary.value), ordinary.value.position), (layout, threads)


@pytest.mark.parametrize("per_batch", [10, 100])
def test_many_small_frames_are_decoded_a_few_megabytes_at_a_time(per_batch: int) -> None:
    """Queued frames are decoded once they hold 4 MiB or number 1024: with binary views,
    each such pass's frames share a buffer of their own, so none grows past what a view's
    offset reaches."""
    import random
    rng = random.Random(5)
    log = b"".join(_compressed_batch_of_records(
        "lz4", b[:61], b[61:], per_batch, base) for base in range(0, 50_000, per_batch)
        for b in [batch_of_values(base, [rng.randbytes(100) for _ in range(per_batch)])])
    assert len(log) > 5 << 20
    expected = rows(log)
    assert column_rows(kcodec.decode_columns(log, include_headers=True)) == expected
    table = views(log, include_headers=True)
    assert arrow_rows(table) == expected
    passes = 2 if per_batch == 100 else -(-5000 // 1024)   # by bytes, by frames
    assert len(table.column("value").chunks[0].buffers()) == 3 + passes   # a pass's buffer


@pytest.mark.parametrize("first", ["none", "lz4", "snappy"])
@pytest.mark.parametrize("then", ["gzip", "zstd", "lz4"])
def test_the_first_bad_batch_fails_first(first: str, then: str) -> None:
    """Whatever order batches are decoded in (queued, decompressed at once, or block by
    block), the error raised is the row reader's, for the first bad batch."""
    plain = batch_of(0, 10, 50)
    damaged = bytearray(plain[61:])
    damaged[0] += 2   # the first record's length, 1 more
    if first == "none":
        bad_first = bytearray(plain[:61]) + damaged
        bad_first[17:21] = kcodec.crc32c(bytes(bad_first[21:])).to_bytes(4, "big")
    else:
        bad_first = bytearray(_compressed_batch_of_records(first, plain[:61], bytes(damaged), 10))
    corrupt_then = bytearray(_compressed_batch_of_records(then, plain[:61], plain[61:], 10, 10))
    corrupt_then[70:78] = b"\xff" * 8   # inside the compressed data
    corrupt_then[17:21] = kcodec.crc32c(bytes(corrupt_then[21:])).to_bytes(4, "big")
    log = (_compressed_batch_of_records("lz4", plain[:61], plain[61:], 10, 20) + bytes(bad_first)
           + bytes(corrupt_then))
    with pytest.raises(KcodecError) as ordinary:
        rows(log)
    assert ordinary.value.position is not None
    assert ordinary.value.position < len(log) - len(corrupt_then)   # the first bad one's
    for threads in (1, 2):
        with pytest.raises(KcodecError) as caught:
            kcodec.decode_columns(log, threads=threads)
        assert (type(caught.value), str(caught.value)) == (type(ordinary.value),
                                                           str(ordinary.value))


@pytest.mark.parametrize("first", ["none", "lz4"])
def test_a_bad_batch_fails_before_a_bad_count_or_framing_after_it(first: str) -> None:
    """A batch whose CRC fails comes first, before a later batch's negative record count or
    input that cannot be framed (which the decoder meets before it decodes a thing)."""
    plain = batch_of(0, 10, 50)
    bad = bytearray(plain if first == "none" else
                    _compressed_batch_of_records(first, plain[:61], plain[61:], 10))
    bad[-1] ^= 1
    negative = bytearray(batch_of(10, 10, 50))
    negative[57:61] = b"\xff" * 4
    negative[17:21] = kcodec.crc32c(bytes(negative[21:])).to_bytes(4, "big")
    unframable = (20).to_bytes(8, "big") + (5).to_bytes(4, "big") + b"\0" * 5
    for then in (bytes(negative), unframable):
        log = batch_of(30, 10, 50) + bytes(bad) + then
        with pytest.raises(KcodecError) as ordinary:
            rows(log)
        assert isinstance(ordinary.value, kcodec.errors.ChecksumError)
        for threads in (1, 2):
            with pytest.raises(KcodecError) as caught:
                kcodec.decode_columns(log, threads=threads)
            assert (type(caught.value), str(caught.value)) == (type(ordinary.value),
                                                               str(ordinary.value))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd"])
def test_records_longer_than_many_blocks(codec: str, layout: str) -> None:
    """A record that spans many blocks, between short ones, lands whole (also past the
    512 KiB from which decoded records are dropped)."""
    values = [b"short %d" % i for i in range(50)]
    values += [bytes(range(256)) * 4096 + b"end"]   # 1 MiB: 16 LZ4 or 32 snappy blocks
    values += [b"after %d" % i for i in range(50)]
    values += [bytes(range(255, -1, -1)) * 20480 + b"end"]   # 5 MiB
    values += [b"last %d" % i for i in range(50)]
    builder = kcodec.BatchBuilder(compression=codec)
    for value in values:
        builder.append(value, key=b"k", timestamp=TS)
    log = builder.build()
    if layout == "views":
        assert _decode(log, layout).column("value").to_pylist() == values
    elif layout == "scan":
        assert column_rows(_decode(log, layout)) == [
            (i, TS, b"k", None, []) for i in range(len(values))]
    else:
        cols = kcodec.decode_columns(log, include_headers=True)
        assert column_rows(cols) == [(i, TS, b"k", v, []) for i, v in enumerate(values)]


def test_binary_views_of_a_batch_guessed_short_point_at_its_values(empty_pools: None) -> None:
    """With views, LZ4 and zstd batches of 512 KiB and more are decompressed into a buffer in
    cache and streamed to the buffer the views keep, sized by a guess: zstd frames state no
    size, so a batch whose values compress ~15x, after one compressing ~2x, is guessed at
    a seventh of its size and the kept buffer grows (and moves) on the way."""
    pytest.importorskip("pyarrow")
    import random

    from kcodec.columnar import release_spare_buffers
    noise = random.Random(7)

    def zstd_batch(values: list[bytes], base_offset: int) -> bytes:
        builder = kcodec.BatchBuilder(compression="zstd", base_offset=base_offset)
        for value in values:
            builder.append(value, key=b"k", timestamp=TS)
        return builder.build()

    low = [noise.randbytes(512) + bytes(512) for _ in range(1000)]
    high = [noise.randbytes(64) + bytes([i % 251]) * 960 for i in range(4000)]
    log = zstd_batch(low, 0) + zstd_batch(high, 1000)
    release_spare_buffers()   # (no spare of the builders' holds the second batch)
    table = kcodec.decode_arrow(log, binary_view=True)
    assert table.column("value").to_pylist() == low + high
    assert table.column("offset").to_pylist() == list(range(5000))


def test_binary_views_of_large_lz4_and_zstd_batches_keep_every_record() -> None:
    """Views of LZ4 and zstd batches of 512 KiB and more point into the copies made as the
    records are decoded: every record's bytes are copied, those a range leaves out too, in
    one thread or two, with records of every length and headers."""
    pa = pytest.importorskip("pyarrow")
    import random
    noise = random.Random(3)
    log = b""
    values: list[bytes] = []
    headers: list[list[dict[str, Any]]] = []
    for codec in ["lz4", "zstd"]:
        for _ in range(2):
            builder = kcodec.BatchBuilder(compression=codec, base_offset=len(values))
            for i in range(1500):   # ~1.3 MB of records a batch
                value = noise.randbytes(noise.randrange(40)) + bytes([i % 251]) * noise.randrange(
                    300, 1500)
                values.append(value)
                headers.append([{"key": "h", "value": b"x" * (i % 5)}])
                builder.append(value, key=b"k%d" % i, timestamp=TS + i,
                               headers=[("h", b"x" * (i % 5))])
            log += builder.build()
    for threads in (1, 2):
        table = kcodec.decode_arrow(log, binary_view=True, include_headers=True,
                                    threads=threads)
        table.validate(full=True)
        assert table.schema.field("value").type == pa.binary_view()
        assert table.column("value").to_pylist() == values
        assert table.column("headers").to_pylist() == headers
        part = kcodec.decode_arrow(log, binary_view=True, threads=threads,
                                   offsets=(1000, 5000))
        assert part.column("value").to_pylist() == values[1000:5000]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_raw_snappy_batches(layout: str) -> None:
    """A snappy batch of one raw block, as librdkafka writes, decodes through the same
    block-by-block path; a corrupt one keeps the ordinary verdict."""
    import cramjam
    good = batch_of(0, 500, 100)
    header, records = good[:61], good[61:]
    raw = bytearray(header) + bytes(cramjam.snappy.compress_raw(records))
    raw[22] |= int(kcodec.Compression.SNAPPY)
    raw[8:12] = (len(raw) - 12).to_bytes(4, "big")
    raw[17:21] = kcodec.crc32c(bytes(raw[21:])).to_bytes(4, "big")
    if layout == "views":
        assert _decode(bytes(raw), layout).column("value").to_pylist() == [
            bytes([i % 251]) * 100 for i in range(500)]
    elif layout == "scan":
        assert column_rows(_decode(bytes(raw), layout)) == column_rows(_decode(good, layout))
    else:
        assert column_rows(kcodec.decode_columns(bytes(raw), include_headers=True)) == (
            column_rows(kcodec.decode_columns(good, include_headers=True)))
    assert _decode(bytes(raw) * 2, layout, max_decompressed_size=len(records))
    with pytest.raises(DecompressionLimitError):
        _decode(good + bytes(raw), layout, max_decompressed_size=len(records) - 1)
    raw[-20] ^= 0xFF
    raw[17:21] = kcodec.crc32c(bytes(raw[21:])).to_bytes(4, "big")
    with pytest.raises(KcodecError) as caught:
        _decode(bytes(raw), layout)
    with pytest.raises(type(caught.value)):
        [r for b in kcodec.read_batches(bytes(raw)) for r in b]


def test_a_large_zstd_batch_without_a_limit() -> None:
    """max_decompressed_size=sys.maxsize (no bound): a zstd batch of more than 4 MiB of
    records, read a window at a time, decodes (the window's size had overflowed, asking
    for 2**63 bytes)."""
    import random
    import sys
    noise = random.Random(5)
    builder = kcodec.BatchBuilder(compression="zstd")
    for i in range(600):
        builder.append(noise.randbytes(16) * 600, key=b"k%d" % i, timestamp=TS)
    data = builder.build()
    assert kcodec.decode_columns(data, max_decompressed_size=sys.maxsize)["count"] == 600
    assert kcodec.decode_columns(data, max_decompressed_size=sys.maxsize,
                                 threads=2)["count"] == 600
