"""Property-based tests: round trips, and hostile mutations of valid batches."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec.errors import KcodecError

blobs = st.one_of(st.none(), st.binary(max_size=300))
header_lists = st.lists(st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=40))),
                        max_size=5)
timestamps = st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**50))
records = st.lists(st.tuples(blobs, blobs, timestamps, header_lists, st.integers(0, 3)),
                   min_size=1, max_size=30)
codecs_and_levels = st.sampled_from([
    ("none", None), ("gzip", None), ("gzip", 1), ("gzip", 9), ("snappy", None), ("lz4", None),
    ("lz4", 1), ("lz4", 12), ("lz4", 17), ("zstd", None), ("zstd", -5), ("zstd", 1),
    ("zstd", 19),
])
options = st.fixed_dictionaries({
    "base_offset": st.integers(0, 2**62),
    "partition_leader_epoch": st.integers(-1, 2**31 - 1),
    "producer_id": st.integers(-1, 2**62),
    "producer_epoch": st.integers(-1, 2**15 - 1),
    "base_sequence": st.integers(-1, 2**31 - 1),
    "is_transactional": st.booleans(),
})

Content = list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]


def build(opts: dict[str, int | bool], recs: list,
          codec: tuple[str, int | None] = ("none", None)) -> tuple[bytes, Content]:
    builder = kcodec.BatchBuilder(compression=codec[0], level=codec[1],
                                  **opts)  # type: ignore[arg-type]
    expected: Content = []
    offset = int(opts["base_offset"])
    for key, value, ts, headers, gap in recs:
        offset += gap if expected else 0
        builder.append(value, key=key, timestamp=ts, headers=headers, offset=offset)
        expected.append((offset, ts, key, value, headers))
        offset += 1
    return builder.build(), expected


def content(data: bytes | bytearray, validate_crc: bool = True) -> Content:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers)
            for b in kcodec.read_batches(data, validate_crc=validate_crc) for r in b]


@given(options, records, codecs_and_levels)
def test_round_trip(opts: dict[str, int | bool], recs: list,
                    codec: tuple[str, int | None]) -> None:
    data, expected = build(opts, recs, codec)
    assert content(data) == expected
    (batch,) = kcodec.read_batches(data)
    assert batch.base_offset == opts["base_offset"]
    assert batch.last_offset == expected[-1][0]
    assert batch.record_count == len(expected)
    assert batch.max_timestamp == max(max(e[1] for e in expected), -1)


mutations = st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(options, records, mutations, st.booleans(), st.integers(0, 10**6), codecs_and_levels)
def test_mutations_decode_the_same_or_raise_a_kcodec_error(
        opts: dict[str, int | bool], recs: list, changes: list[tuple[int, int]],
        validate_crc: bool, cut: int, codec: tuple[str, int | None]) -> None:
    data, expected = build(opts, recs, codec)
    mutated = bytearray(data)
    for position, byte in changes:
        mutated[position % len(mutated)] = byte
    del mutated[len(mutated) - cut % 8:]  # sometimes truncate too
    try:
        got = content(mutated, validate_crc=validate_crc)
    except KcodecError:
        return
    if validate_crc and len(mutated) == len(data):
        # the CRC does not cover offsets 0-20: only those may change what is decoded
        assert got == expected or any(p % len(data) < 21 for p, _ in changes)


def _seed_batches() -> list[bytes]:
    seeds = []
    for codec in ("none", "gzip", "lz4", "zstd"):
        b = kcodec.BatchBuilder(compression=codec)
        for i in range(8):
            b.append(b"v%d" % i * 5, key=b"k%d" % i, timestamp=1700000000000 + i,
                     headers=[("h", b"x")])
        seeds.append(b.build())
    for magic in (0, 1):
        for codec in ("none", "gzip"):
            b = kcodec.BatchBuilder(magic=magic, compression=codec)
            for i in range(6):
                b.append(b"v%d" % i, key=b"k%d" % i, timestamp=1700000000000 + i)
            seeds.append(b.build())
    return seeds


SEEDS = _seed_batches()
# Inputs found by fuzzing, once: negative record counts, offsets that go backwards or lie
# further apart than a v2 batch can span, empty v2 batches in validation.
REGRESSIONS = [
    "000000000000000000000039ffffffff026c958ff40000000000000000018bcfe5684a0000018bcfe56800"
    "ffffffffffffffffffffffffffa0b2813945d6dfff000000010e00000003027600",
    "2c0000000078006400000031000000070251f661db000000000004ffffffffffffffff0000018bcfe56809"
    "00000000000003e800050000002800000000",
]


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=150, deadline=None)
@given(st.sampled_from(SEEDS), mutations, st.integers(0, 10**6), st.sampled_from([0, 1, 2]))
def test_every_api_raises_only_kcodec_errors(seed: bytes, changes: list[tuple[int, int]],
                                             cut: int, magic: int) -> None:
    data = bytearray(seed)
    for position, byte in changes:
        data[position % len(data)] = byte
    del data[len(data) - cut % 8:]
    _only_kcodec_errors(bytes(data), magic)


@pytest.mark.parametrize("hex_text", REGRESSIONS)
def test_fuzz_regressions(hex_text: str) -> None:
    for magic in (0, 1, 2):
        _only_kcodec_errors(bytes.fromhex(hex_text), magic)


def _only_kcodec_errors(data: bytes, magic: int) -> None:
    calls: list[Callable[[], object]] = [
        lambda: [r for b in kcodec.read_batches(data, validate_crc=False) for r in b],
        lambda: kcodec.decode_columns(data, validate_crc=False, include_headers=True,
                                      metadata=True, include_control=True),
        lambda: kcodec.convert(data, magic=magic, on_loss="ignore"),
        lambda: kcodec.validate(data, next_offset=0, now=1700000000000, from_client=False),
    ]
    for call in calls:
        try:
            call()
        except KcodecError:
            pass
