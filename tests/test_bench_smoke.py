"""The benchmarks keep running (a quick pass; timing targets live in bench/, not here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


def run_bench(name: str, *args: str) -> str:
    script = ROOT / "bench" / name
    if not script.exists():
        pytest.skip("needs the source checkout")
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True,
                          text=True, cwd=ROOT / "tests", timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("name", ["bench_records.py", "bench_codecs.py", "bench_legacy.py",
                                  "bench_segments.py", "bench_spark.py", "bench_plugins.py",
                                  "bench_kip931.py"])
def test_bench_quick(name: str) -> None:
    out = run_bench(name, "--quick")
    assert "kcodec" in out and ("MB/s" in out or "rec/s" in out)


def test_columnar_bench_and_its_tables(tmp_path: Path) -> None:
    """bench_columnar's figures saved with --json make the README's tables, the median of
    the runs given."""
    saved = tmp_path / "run.json"
    out = run_bench("bench_columnar.py", "--quick", "--json", str(saved))
    assert "kcodec" in out and "rec/s" in out
    figures = json.loads(saved.read_text())
    rate = figures["cases"]["none 100 B"]["columns"]
    assert f"{rate:.1f}" in out
    tables = run_bench("columnar_runs.py", str(saved), str(saved), "--ranges")
    assert f"| uncompressed, 100 B | {rate:.1f} M rec/s |" in tables
    assert "| lz4, 1 KiB |" in tables and "| 10 |" in tables
    assert "| uncompressed, 100 B, 1 000 000 records |" in tables
    assert "2 runs; with two threads this machine copied memory" in tables
