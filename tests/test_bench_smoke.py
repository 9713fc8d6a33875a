"""The benchmarks keep running (a quick pass; timing targets live in bench/, not here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT


def test_bench_records_quick() -> None:
    script = ROOT / "bench" / "bench_records.py"
    if not script.exists():
        pytest.skip("needs the source checkout")
    proc = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True,
                          text=True, cwd=ROOT / "tests", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "targets" in proc.stdout
