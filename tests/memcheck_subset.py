"""A representative pass over kcodec's compiled code, small enough for valgrind's memcheck:
every magic and codec built, read (rows and columns), converted, validated, broken inputs
refused, and the fuzz regression corpus replayed. Run by tests/test_memcheck.py."""

from __future__ import annotations

import sys
from pathlib import Path

import kcodec
from kcodec import columnar
from kcodec._bitmaps import pack_bitmaps
from kcodec._columns import decode_chunk
from kcodec.columnar import ALL_COLUMNS
from kcodec.errors import KcodecError

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def batches() -> list[bytes]:
    out = []
    for magic in (0, 1, 2, 3):
        for codec in CODECS:
            if codec == "zstd" and magic < 2:
                continue
            builder = kcodec.BatchBuilder(magic=magic, compression=codec, base_offset=10,
                                          headers_first=magic == 3)
            for i in range(20):
                builder.append(b"value %d " % i * 8 if i % 5 else None, key=b"key-%d" % i,
                               timestamp=1_700_000_000_000 + i,
                               headers=[("h", b"%d" % i), ("n", None)] if magic >= 2 else ())
            out.append(builder.build())
    return out


def main() -> None:
    data = batches()
    log = b"".join(b for b in data if b[16] < 3)
    for read in kcodec.read_batches(b"".join(data), allow_magic3=True):
        for record in read:
            record.headers  # noqa: B018
    kcodec.decode_columns(log, include_headers=True, metadata=True)
    kcodec.decode_columns(log, include_headers=True, threads=3)   # small records: in place
    columnar.GATHER_FROM_RECORD_BYTES = 0
    kcodec.decode_columns(log, include_headers=True, threads=3)   # parts joined by gathering
    # Arrow's layouts, written by the decoder, and the bitmaps (without pyarrow)
    pack_bitmaps(decode_chunk(list(kcodec.read_batches(log)), columnar._want(ALL_COLUMNS),
                              arrow=True))
    compressed = b"".join(b for b in data if b[16] == 2 and b[22] & 7)   # v2, codec bits
    kcodec.decode_columns(compressed, include_headers=True, threads=3)   # appended in place
    kcodec.decode_columns(b"".join(data), columns=("offset", "key", "headers"),
                          allow_magic3=True)
    for magic in (0, 1, 2, 3):
        kcodec.convert(log, magic=magic, compression="lz4" if magic < 2 else "zstd",
                       on_loss="ignore")
    in_place = bytearray(data[-6])   # a compressed v2 batch, at base offset 0 as Kafka
    in_place[0:8] = bytes(8)          # appends one in place (else it cannot rebuild it)
    kcodec.validate(bytes(in_place), next_offset=100, now=1_700_000_000_000, from_client=False)
    for entry in data:
        for cut in (1, 20, 61, len(entry) // 2, len(entry) - 1):
            broken = bytearray(entry)
            broken[cut] ^= 0xA5
            try:
                for batch in kcodec.read_batches(bytes(broken), validate_crc=False,
                                                 allow_magic3=True):
                    list(batch)
                kcodec.decode_columns(bytes(broken), validate_crc=False, allow_magic3=True)
            except KcodecError:
                pass
    corpus = Path(__file__).parent / "fuzz"
    sys.path.insert(0, str(corpus))
    from fuzz_targets import TARGETS
    for folder in sorted((corpus / "corpus").iterdir()):
        for path in sorted(folder.iterdir()):
            TARGETS[folder.name](path.read_bytes())
    print("memcheck subset done")


if __name__ == "__main__":
    main()
