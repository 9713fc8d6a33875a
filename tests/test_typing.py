"""Static checks: mypy (strict) on the package stubs and the tests, the stubs against the
compiled modules, and ruff (pyflakes errors, import order) on all Python code."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT


def test_mypy_strict_on_package_and_tests() -> None:
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("needs the source checkout")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_stubs_match_the_compiled_modules() -> None:
    modules = ["kcodec._batch", "kcodec._builder", "kcodec._crc32c", "kcodec._varint",
               "kcodec._scratch", "kcodec._frames",
               "kcodec._record", "kcodec._legacy", "kcodec._columns", "kcodec._bitmaps",
               "kcodec._headers_first", "kcodec._select", "kcodec._groups",
               "kcodec._column_buffers", "kcodec._cuts", "kcodec._handoff", "kcodec._libz",
               "kcodec._libzstd"]
    allowlist = ROOT / "tests" / "stubtest-allowlist.txt"
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", *modules,
                           "--ignore-missing-stub", "--allowlist", str(allowlist)],
                          cwd=ROOT / "tests", capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff() -> None:
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("needs the source checkout")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "kcodec", "tests", "bench",
                           "examples"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
