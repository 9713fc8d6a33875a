from __future__ import annotations

import subprocess
import sys

import pytest

from kcodec.cli import main


def test_tour_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tour", "--records", "1000", "--batch-size", "100"]) == 0
    out = capsys.readouterr().out
    assert "1000 JSON-like events" in out and "(+3 COMMIT markers)" in out
    assert "zstd" in out and "magic-1 consumer" in out and "offsets 5000-5099" in out


def test_module_entry_point_and_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "kcodec", "demo", "--help"],
                          capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0 and "--records" in proc.stdout
