from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kcodec
from kcodec.errors import InvalidRecordError

# FORMAT.md §1.3, from Java's ByteUtils
JAVA_VARINTS = [
    (0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (-64, "7f"), (64, "8001"),
    (300, "d804"), (8191, "fe7f"), (-8192, "ff7f"), (8192, "808001"),
    (2147483647, "feffffff0f"), (-2147483648, "ffffffff0f"),
]
JAVA_VARLONGS = [
    (1700000000000, "80a0abfef962"),
    (2**63 - 1, "feffffffffffffffff01"),
    (-(2**63), "ffffffffffffffffff01"),
]


@pytest.mark.parametrize(("value", "hex_text"), JAVA_VARINTS)
def test_varint_matches_java(value: int, hex_text: str) -> None:
    encoded = bytes.fromhex(hex_text)
    assert kcodec.encode_varint(value) == encoded
    assert kcodec.decode_varint(encoded) == (value, len(encoded))
    # in int32 range varlongs are the same bytes
    assert kcodec.encode_varlong(value) == encoded
    assert kcodec.decode_varlong(encoded) == (value, len(encoded))


@pytest.mark.parametrize(("value", "hex_text"), JAVA_VARLONGS)
def test_varlong_matches_java(value: int, hex_text: str) -> None:
    encoded = bytes.fromhex(hex_text)
    assert kcodec.encode_varlong(value) == encoded
    assert kcodec.decode_varlong(encoded) == (value, len(encoded))


@pytest.mark.parametrize(("hex_text", "value"), [
    ("8000", 0),                 # non-minimal, accepted
    ("8280808000", 1),
    ("ffffffff7f", -2147483648),  # excess bits of the 5th byte dropped
])
def test_java_leniency_and_strict_mode(hex_text: str, value: int) -> None:
    data = bytes.fromhex(hex_text)
    assert kcodec.decode_varint(data) == (value, len(data))
    with pytest.raises(InvalidRecordError, match="minimal"):
        kcodec.decode_varint(data, strict=True)


def test_too_long_and_truncated() -> None:
    with pytest.raises(InvalidRecordError, match="too long") as info:
        kcodec.decode_varint(bytes.fromhex("828080808000"))
    assert info.value.error_code == 87
    assert info.value.position == 0
    with pytest.raises(InvalidRecordError, match="too long"):
        kcodec.decode_varlong(bytes.fromhex("80" * 10 + "00"))
    assert kcodec.decode_varlong(bytes.fromhex("80" * 9 + "7e")) == (0, 10)  # bits dropped
    with pytest.raises(InvalidRecordError, match="ends inside"):
        kcodec.decode_varint(b"\x80\x80", 0)
    with pytest.raises(InvalidRecordError) as info:
        kcodec.decode_varint(b"\x00\x80", 1)
    assert info.value.position == 1


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    encoded = kcodec.encode_varint(value)
    assert kcodec.decode_varint(encoded, strict=True) == (value, len(encoded))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    encoded = kcodec.encode_varlong(value)
    assert kcodec.decode_varlong(encoded, strict=True) == (value, len(encoded))


def test_encode_range_checked() -> None:
    with pytest.raises(OverflowError):
        kcodec.encode_varint(2**31)
