"""The benchmarks keep running (a quick pass; timing targets live in bench/, not here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ROOT


@pytest.mark.parametrize("name", ["bench_records.py", "bench_codecs.py", "bench_legacy.py",
                                  "bench_columnar.py", "bench_segments.py", "bench_spark.py",
                                  "bench_plugins.py", "bench_kip931.py"])
def test_bench_quick(name: str) -> None:
    script = ROOT / "bench" / name
    if not script.exists():
        pytest.skip("needs the source checkout")
    proc = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True,
                          text=True, cwd=ROOT / "tests", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "kcodec" in proc.stdout and ("MB/s" in proc.stdout or "rec/s" in proc.stdout)
