"""valgrind's memcheck over a representative subset (tests/memcheck_subset.py): no invalid
read or write, no use of uninitialised memory, in a stack that passes through kcodec's
compiled modules. CPython and the dynamic loader have reports of their own under
valgrind; those are counted and shown, not judged."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SUBSET = Path(__file__).parent / "memcheck_subset.py"
#: Frames in kcodec's own code: its extension modules, their Cython and C sources.
OURS = re.compile(r"kcodec/_\w+|/kcodec/|csrc/")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
@pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""), reason="not under ASan")
def test_memcheck_subset(tmp_path: Path, record_property: object) -> None:
    log = tmp_path / "memcheck.log"
    # sys.executable as it is, not resolved: a virtual environment's python is a link,
    # and only through it does the interpreter find the environment (and kcodec)
    run = subprocess.run(
        ["valgrind", "--tool=memcheck", "--leak-check=no", "--num-callers=40",
         f"--log-file={log}", sys.executable, str(SUBSET)],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONMALLOC": "malloc"})
    assert run.returncode == 0, run.stderr
    assert "memcheck subset done" in run.stdout
    blocks = [b for b in re.split(r"\n==\d+== \n", log.read_text())
              if re.search(r"==\d+== (Invalid|Conditional|Use of|Syscall|Mismatched|"
                           r"Source and destination)", b)]
    ours = [b for b in blocks if OURS.search(b)]
    assert callable(record_property)
    record_property("memory", f"valgrind memcheck: {len(ours)} errors in kcodec's code, "
                              f"{len(blocks) - len(ours)} in CPython or the loader")
    assert not ours, "\n\n".join(ours[:3])
