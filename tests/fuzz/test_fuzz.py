"""Fuzzing in the suite: the regression corpus (inputs that once found bugs) replayed, and
a bounded atheris run of every target whose counts the test summary prints.

By default every run uses the same libFuzzer seed and number of inputs (about 4 s per
target here), so each run of a commit's suite explores the same ground rather than a new
random sample. ``KCODEC_FUZZ_SECONDS=N`` makes it a campaign instead: N seconds per target from a
random seed, to find new bugs (CI's fuzz job). ``KCODEC_FUZZ_CORPUS=DIR`` keeps the corpora
the runs grow in ``DIR/<target>`` (and starts from them next time)."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# tests/fuzz's modules, on sys.path from the conftest
import fuzz_targets
from fuzz_seeds import MAX_LEN, write_seeds
from instrumented_build import load_libfuzzer_if_needed

HERE = Path(__file__).parent

CORPUS = HERE / "corpus"
CAMPAIGN_SECONDS = int(os.environ.get("KCODEC_FUZZ_SECONDS", "0"))
#: Inputs per target in the reproducible runs (about half of what 8 s gives here).
RUNS = {"read_batches": 15_000, "decompress": 75_000, "columns": 15_000, "convert": 40_000,
        "validate": 50_000, "headers_first": 30_000, "segment": 3_000}


def regression_inputs() -> list[tuple[str, Path]]:
    return [(folder.name, path) for folder in sorted(CORPUS.iterdir())
            for path in sorted(folder.iterdir())]


@pytest.mark.parametrize(("target", "path"), regression_inputs(),
                         ids=[f"{t}/{p.name}" for t, p in regression_inputs()])
def test_regression_corpus(target: str, path: Path) -> None:
    fuzz_targets.TARGETS[target](path.read_bytes())


def test_every_regression_names_a_target() -> None:
    assert {folder.name for folder in CORPUS.iterdir()} <= set(fuzz_targets.TARGETS)


def test_import_errors_not_of_an_instrumented_build_are_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kcodec", None)   # kcodec that fails to import otherwise
    with pytest.raises(ImportError, match="kcodec"):
        load_libfuzzer_if_needed()


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory, shared_root: Path | None) -> dict[str, Path]:
    folders: dict[str, Path] = write_seeds(tmp_path_factory.mktemp("seeds"), shared_root)
    return folders


# libFuzzer's -rss_limit_mb reads the peak resident size (getrusage), which a program
# started by exec inherits from the process that forked it: this one, which earlier tests
# may have grown past the limit. The run is forked from a small process of its own.
FORK_THEN_RUN = ("import os, sys\n"
                 "if os.fork() == 0:\n"
                 "    os.execv(sys.argv[1], sys.argv[1:])\n"
                 "sys.exit(os.waitstatus_to_exitcode(os.wait()[1]))")


def _stat(pattern: str, text: str) -> str:
    found = re.findall(pattern, text)
    return found[-1] if found else "?"


@pytest.mark.fuzz
@pytest.mark.parametrize("target", list(fuzz_targets.TARGETS))
def test_fuzz(target: str, seeds: dict[str, Path], tmp_path: Path,
              record_property: object) -> None:
    pytest.importorskip("atheris", reason="atheris has wheels for Linux x86_64 only")
    kept = os.environ.get("KCODEC_FUZZ_CORPUS")
    corpus = Path(kept) / target if kept else tmp_path / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    regressions = [str(CORPUS / target)] if (CORPUS / target).exists() else []
    budget = ([f"-max_total_time={CAMPAIGN_SECONDS}"] if CAMPAIGN_SECONDS else
              ["-seed=1", f"-runs={RUNS[target]}", "-max_total_time=120"])
    command = [sys.executable, str(HERE / "fuzz.py"), target, *budget,
               "-timeout=10", "-rss_limit_mb=2048", f"-max_len={MAX_LEN}",
               "-print_final_stats=1", f"-artifact_prefix={tmp_path}/",
               str(corpus), str(seeds[target]), *regressions]
    # (libFuzzer ends the process without Python's clean-up, so the targets' temporary
    # files go in the test's own folder)
    run = subprocess.run([sys.executable, "-c", FORK_THEN_RUN, *command],
                         capture_output=True, text=True,
                         timeout=(CAMPAIGN_SECONDS or 120) + 300, cwd=tmp_path,
                         env={**os.environ, "PYTHONHASHSEED": "0", "TMPDIR": str(tmp_path)})
    output = run.stdout + run.stderr
    failure = output.find("=== Uncaught Python exception")
    runs = _stat(r"stat::number_of_executed_units:\s+(\d+)", output)
    seconds = _stat(r"Done \d+ runs in (\d+) second", output)
    size = _stat(r"corp: (\d+)/", output)
    rss = _stat(r"stat::peak_rss_mb:\s+(\d+)", output)
    found = sorted(tmp_path.glob("crash-*")) + sorted(tmp_path.glob("timeout-*")) + sorted(
        tmp_path.glob("oom-*"))
    assert callable(record_property)
    record_property("fuzz", f"{target}: {runs} runs in {seconds} s, corpus {size} inputs, "
                            f"peak RSS {rss} MB, {len(found)} failures")
    assert run.returncode == 0 and not found, (
        f"fuzz target {target} failed (exit {run.returncode}); keep the input in "
        f"tests/fuzz/corpus/{target}/ once fixed\n{output[failure:][:4000] if failure >= 0 else output[-4000:]}\n" + "\n".join(
            f"{p.name}: {base64.b64encode(p.read_bytes()).decode()}" for p in found))
