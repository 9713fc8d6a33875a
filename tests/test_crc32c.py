from __future__ import annotations

import mmap
import os
import platform
import random
import subprocess
import sys
import zlib

import crc32c as crc32c_package
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kcodec


def test_check_values() -> None:
    assert kcodec.crc32c(b"123456789") == 0xE3069283
    assert kcodec.crc32c(b"Some String") == 608512271  # Kafka's own unit test
    assert kcodec.crc32c(b"") == 0


def test_backend_is_hardware_where_available() -> None:
    assert kcodec.crc32c_backend() in {"vpclmulqdq", "sse4.2", "armv8", "portable"}
    if os.environ.get("KCODEC_CRC32C") != "portable" and sys.platform == "linux":
        if platform.machine() in ("x86_64", "aarch64"):
            assert kcodec.crc32c_backend() != "portable"


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 767, 768, 769, 24575, 24576, 24577,
                                  65536, 100_003, 1 << 20])
@pytest.mark.parametrize("misalign", [0, 1, 5])
def test_matches_reference_on_every_lane_boundary(size: int, misalign: int) -> None:
    data = os.urandom(size + misalign)
    view = memoryview(data)[misalign:]
    assert kcodec.crc32c(view) == crc32c_package.crc32c(bytes(view))


@given(st.binary(max_size=3000), st.binary(max_size=3000))
def test_continuation(a: bytes, b: bytes) -> None:
    assert kcodec.crc32c(b, kcodec.crc32c(a)) == kcodec.crc32c(a + b)


def test_any_buffer() -> None:
    data = b"123456789"
    expected = 0xE3069283
    assert kcodec.crc32c(bytearray(data)) == expected
    assert kcodec.crc32c(memoryview(data)) == expected
    with mmap.mmap(-1, len(data)) as m:
        m.write(data)
        assert kcodec.crc32c(m) == expected
    with pytest.raises(TypeError):
        kcodec.crc32c("123456789")  # type: ignore[arg-type]


PORTABLE_SCRIPT = """
import os, kcodec
assert kcodec.crc32c_backend() == "portable", kcodec.crc32c_backend()
for size in (0, 1, 9, 800, 30000, 1 << 20):
    data = bytes((i * 7 + size) & 0xFF for i in range(size))
    print(size, kcodec.crc32c(data))
"""


def test_portable_backend_forced_by_environment() -> None:
    env = dict(os.environ, KCODEC_CRC32C="portable")
    out = subprocess.run([sys.executable, "-c", PORTABLE_SCRIPT], env=env, check=True,
                         capture_output=True, text=True, cwd=os.path.dirname(__file__)).stdout
    for line in out.splitlines():
        size, value = map(int, line.split())
        data = bytes((i * 7 + size) & 0xFF for i in range(size))
        assert value == kcodec.crc32c(data) == crc32c_package.crc32c(data)


def test_portable_backend_decodes_batches(vectors: dict[str, bytes]) -> None:
    script = (
        "import sys, kcodec\n"
        "data = bytes.fromhex(sys.argv[1])\n"
        "assert kcodec.crc32c_backend() == 'portable'\n"
        "print([r.value for b in kcodec.read_batches(data) for r in b])\n"
    )
    env = dict(os.environ, KCODEC_CRC32C="portable")
    out = subprocess.run([sys.executable, "-c", script, vectors["v2_two_nullkey"].hex()],
                         env=env, check=True, capture_output=True, text=True,
                         cwd=os.path.dirname(__file__)).stdout
    assert out.strip() == "[b'a', None]"


BACKEND_SCRIPT = """
import random, sys, kcodec
assert kcodec.crc32c_backend() == sys.argv[1], kcodec.crc32c_backend()
for size in map(int, sys.argv[2:]):
    data = random.Random(size).randbytes(size + 3)
    for misalign in (0, 3):
        view = memoryview(data)[misalign:misalign + size]
        print(kcodec.crc32c(view), kcodec.crc32c(view, 0xDEADBEEF),
              kcodec.crc32(view), kcodec.crc32(view, 0xDEADBEEF))
"""

# around every boundary of the backends: 8-byte words, 16-byte and 64-byte folds, the
# 256 bytes a fold step takes, the CRC instruction's 768-byte and 24 KiB lane chunks, and
# the IEEE CRC-32's 16-byte start of folding and its 64-byte steps
BOUNDARY_SIZES = [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 79, 80, 127, 128,
                  129, 143, 255, 256, 257, 271, 272, 319, 320, 511,
                  512, 513, 767, 768, 769, 1023, 1024, 1025, 2047, 2048, 2049, 2303, 2304,
                  24575, 24576, 24577, 100_003, 1 << 20]


# the backends built for this kind of CPU (a CPU without one's instructions refuses it)
ARCH_BACKENDS = {"x86_64": ["sse4.2", "vpclmulqdq"], "AMD64": ["sse4.2", "vpclmulqdq"],
                 "aarch64": ["armv8"], "arm64": ["armv8"]}.get(platform.machine(), [])


@pytest.mark.parametrize("backend", ["portable", *ARCH_BACKENDS])
def test_every_backend_the_machine_runs_matches_the_reference(backend: str) -> None:
    """Each backend, chosen by KCODEC_CRC32C, against the crc32c package (and the IEEE
    CRC-32 it sets up against zlib); a backend this CPU or build lacks refuses to load
    instead."""
    env = dict(os.environ, KCODEC_CRC32C=backend)
    proc = subprocess.run([sys.executable, "-c", BACKEND_SCRIPT, backend,
                           *map(str, BOUNDARY_SIZES)], env=env, capture_output=True,
                          text=True, cwd=os.path.dirname(__file__))
    if proc.returncode and "not a CRC-32C backend this CPU and build have" in proc.stderr:
        assert backend != kcodec.crc32c_backend()
        pytest.skip(f"no {backend} here")
    assert proc.returncode == 0, proc.stderr
    got = iter(proc.stdout.splitlines())
    for size in BOUNDARY_SIZES:
        data = random.Random(size).randbytes(size + 3)
        for misalign in (0, 3):
            view = bytes(data[misalign:misalign + size])
            assert next(got) == (f"{crc32c_package.crc32c(view)} "
                                 f"{crc32c_package.crc32c(view, 0xDEADBEEF)} "
                                 f"{zlib.crc32(view)} {zlib.crc32(view, 0xDEADBEEF)}"), (
                size, misalign)


def test_bad_backend_name_is_refused_as_what_it_is() -> None:
    """A value error naming the variable, not the ImportError of a broken installation."""
    env = dict(os.environ, KCODEC_CRC32C="quantum")
    proc = subprocess.run([sys.executable, "-c", "import kcodec"], env=env,
                          capture_output=True, text=True, cwd=os.path.dirname(__file__))
    assert proc.returncode != 0
    assert "ValueError: KCODEC_CRC32C='quantum'" in proc.stderr
    assert "install kcodec with pip" not in proc.stderr


@given(st.binary(max_size=3000), st.binary(max_size=3000))
def test_ieee_continuation(a: bytes, b: bytes) -> None:
    assert kcodec.crc32(b, kcodec.crc32(a)) == kcodec.crc32(a + b) == zlib.crc32(a + b)


@pytest.mark.parametrize("backend", ["portable", *ARCH_BACKENDS])
def test_every_length_and_alignment(backend: str) -> None:
    """Every length up to 600 bytes at eight alignments (each remainder of 8, 16 and 64
    bytes, words loaded unaligned, the IEEE CRC-32's tail folded with the last lane or
    left to the table), against the crc32c package and zlib."""
    script = ("import sys, zlib, random, crc32c, kcodec\n"
              "rng = random.Random(5)\n"
              "for size in range(600):\n"
              "    data = rng.randbytes(size + 7)\n"
              "    for misalign in range(8):\n"
              "        view = data[misalign:misalign + size]\n"
              "        if kcodec.crc32c(view, 99) != crc32c.crc32c(view, 99):\n"
              "            sys.exit(f'CRC-32C {size} {misalign}')\n"
              "        if kcodec.crc32(view, 99) != zlib.crc32(view, 99):\n"
              "            sys.exit(f'CRC-32 {size} {misalign}')\n")
    proc = subprocess.run([sys.executable, "-c", script],
                          env=dict(os.environ, KCODEC_CRC32C=backend), capture_output=True,
                          text=True, cwd=os.path.dirname(__file__))
    if proc.returncode and "not a CRC-32C backend this CPU and build have" in proc.stderr:
        pytest.skip(f"no {backend} here")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("size", [0, 1, 9, 1000, 100_003])
def test_ieee_crc32_matches_zlib(size: int) -> None:
    data = os.urandom(size)
    assert kcodec.crc32(data) == zlib.crc32(data)
    assert kcodec.crc32(data[size // 2:], kcodec.crc32(data[:size // 2])) == zlib.crc32(data)
    assert kcodec.crc32(b"123456789") == 0xCBF43926
