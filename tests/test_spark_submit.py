"""The cluster route, run locally: kcodec's wheel packed with venv-pack, shipped to Spark
with ``--archives`` and run by ``spark-submit`` (examples/spark-submit). Slow: it builds a
wheel and an environment; ``KCODEC_WHEEL`` names a wheel to use instead of building one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcodec.segments import Segment

from .conftest import ROOT, shared_path

pytest.importorskip("pyspark")
pytest.importorskip("venv_pack")
pytestmark = [pytest.mark.spark, pytest.mark.slow]

EXAMPLE = ROOT / "examples" / "spark-submit"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if not EXAMPLE.exists():
        pytest.skip("needs the source checkout")
    out = tmp_path_factory.mktemp("packed")
    command = ["bash", str(EXAMPLE / "pack.sh"), str(out)]
    if os.environ.get("KCODEC_WHEEL"):
        command.append(os.environ["KCODEC_WHEEL"])
    # packed with the Python running the tests, whether or not its environment is active
    subprocess.run(command, check=True, capture_output=True, timeout=900,
                   env={**os.environ, "PYTHON": sys.executable})
    yield out / "kcodec-env.tar.gz"


def private_spark_home(path: Path) -> Path:
    """pyspark's Spark home, linked entry by entry, so that local-cluster's executors work
    in ``path/work`` instead of inside the installed package."""
    import pyspark
    path.mkdir()
    for entry in Path(pyspark.__file__).parent.iterdir():
        if entry.name != "work":
            (path / entry.name).symlink_to(entry)
    return path


def expected_counts(log_dir: Path) -> Counter[tuple[str, int]]:
    counts: Counter[tuple[str, int]] = Counter()
    for path in sorted(log_dir.glob("*/*/*.log")):
        topic, partition = path.parent.name.rsplit("-", 1)
        with Segment(path) as segment:
            counts[topic, int(partition)] += sum(
                1 for batch in segment.batches() if not batch.is_control for _ in batch)
    return counts


@pytest.mark.parametrize("master", ["local[2]", "local-cluster[2,1,1024]"])
def test_spark_submit_runs_kcodec_from_the_archive(archive: Path, master: str,
                                                   tmp_path: Path) -> None:
    """local[2] runs its workers in the submitting directory, where the driver's copy of the
    archive is; local-cluster starts executors that unpack their own, as a cluster does."""
    log_dir = shared_path("testdata", "kafka-segments")
    env = {**os.environ, "SPARK_HOME": str(private_spark_home(tmp_path / "spark"))}
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH"):
        env.pop(name, None)
    result = subprocess.run(
        ["bash", str(EXAMPLE / "submit.sh"), str(archive), master, str(log_dir),
         str(tmp_path / "summary.json")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    found = {(p["topic"], p["partition"]): p["records"] for p in summary["partitions"]}
    assert found == dict(expected_counts(log_dir))
    environment = tmp_path.resolve() / "environment"
    assert Path(summary["kcodec"]["driver"]).is_relative_to(environment)
    unpacked_by = environment if master.startswith("local[") else tmp_path.resolve() / "spark" / "work"
    assert summary["kcodec"]["workers"]
    assert all(Path(p).is_relative_to(unpacked_by) for p in summary["kcodec"]["workers"]), \
        summary["kcodec"]
