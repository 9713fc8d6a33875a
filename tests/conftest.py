"""Shared fixtures: the reference vectors and real broker data in ../shared."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# a build instrumented for fuzzing needs libFuzzer loaded first (tests/fuzz's modules are
# imported by name: it has no package of its own)
sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))
from instrumented_build import load_libfuzzer_if_needed  # noqa: E402

load_libfuzzer_if_needed()

from hypothesis import settings  # noqa: E402

import kcodec  # noqa: E402
from kcodec import ControlType, segments  # noqa: E402

# examples run on shared machines of two cores, beside other tests' threads: their time
# says nothing, so no example has a deadline
settings.register_profile("kcodec", deadline=None)
settings.load_profile("kcodec")

ROOT = Path(__file__).resolve().parent.parent
#: Under AddressSanitizer (the sanitizer build's tests preload it), freed memory waits in
#: quarantine and realloc always moves: memory reuse is not measurable there.
UNDER_ASAN = "asan" in os.environ.get("LD_PRELOAD", "")
SHARED = Path(os.environ.get("KCODEC_SHARED", ROOT.parent / "shared"))


#: optional dependencies (extras) whose absence skips the tests that need them
OPTIONAL = ("pyarrow", "pandas", "pyspark", "aiokafka")


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> object:
    """A test that meets an optional dependency missing (on musl: no pyarrow or aiokafka
    wheels) skips instead of failing, however deep the import."""
    try:
        return (yield)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in OPTIONAL:
            pytest.skip(f"needs {exc.name}")
        raise


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without pyarrow (the ``arrow`` extra; no wheels for musl), the tests that build
    Arrow tables skip before they run (those that meet it deeper skip as they do, above)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        skip = pytest.mark.skip(reason="needs pyarrow")
        for item in items:
            function = getattr(item, "function", None)
            if function is not None and re.search(r"\b(decode_arrow|iter_arrow|pyarrow)\b|"
                                                  r"README", inspect.getsource(function)):
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def every_thread_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' inputs are small, and a decode gives each thread it uses
    RECORDS_A_THREAD records at least (and decode_columns has threads frame stretches of
    FRAMED_BY_THREADS_FROM_ENTRIES batches or more): every thread asked for decodes and
    frames here, so that splitting and joining are tested on them (test_columnar_threads
    tests the rule itself)."""
    from kcodec import columnar
    monkeypatch.setattr(columnar, "RECORDS_A_THREAD", 1)
    monkeypatch.setattr(columnar, "FRAMED_BY_THREADS_FROM_ENTRIES", 0)


def damaged(section: bytes, where: int, damage: str, bit: int) -> bytes:
    """``section`` with a bit flipped, cut short or a run of it repeated (at ``where``), its
    start appended, or as it is ("none"): what the damaged-input property tests feed."""
    out = bytearray(section)
    at = where % len(out)
    if damage == "flip":
        out[at] ^= 1 << bit % 8
    elif damage == "cut":
        del out[at:]
    elif damage == "grow":
        out[at:at] = out[at:at + bit % 64]
    elif damage == "append":
        out += out[:bit % 40]
    return bytes(out)


@pytest.fixture
def empty_pools() -> Iterator[None]:
    """The spare buffers' pools empty before and after the test (some hold hundreds of MB)."""
    from kcodec.columnar import release_spare_buffers
    release_spare_buffers()
    yield
    release_spare_buffers()


#: Measurements tests record (``record_property``) and the summary prints, by section.
SUMMARY_SECTIONS = {"fuzz": "fuzzing", "memory": "resident memory"}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The fuzz runs' counts (tests/fuzz/test_fuzz.py) and the resident memory measured
    around the long runs (tests/test_stability.py)."""
    reports = terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", [])
    for key, title in SUMMARY_SECTIONS.items():
        lines = [str(value) for report in reports
                 for name, value in report.user_properties if name == key]
        if lines:
            terminalreporter.section(title)
            for line in lines:
                terminalreporter.write_line(line)


def pytest_report_header() -> list[str]:
    return [
        f"kcodec {kcodec.__version__} from {Path(kcodec.__file__).parent}",
        f"crc32c backend: {kcodec.crc32c_backend()}; shared data: {SHARED}",
    ]


def shared_path(*parts: str) -> Path:
    """A path under shared/; skips the test when shared/ is absent, unless it is required."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        if os.environ.get("KCODEC_REQUIRE_SHARED"):
            raise FileNotFoundError(f"{path} is missing (KCODEC_REQUIRE_SHARED is set)")
        pytest.skip(f"{path} not available")
    return path


class Vectors(dict[str, bytes]):
    """name -> bytes of every vector in shared/spec/vectors.txt; a test that asks for one
    without shared/ is skipped (or fails, when shared/ is required), as by shared_path."""

    def __missing__(self, name: str) -> bytes:
        shared_path("spec", "vectors.txt")
        raise KeyError(name)


def load_vectors() -> Vectors:
    """name -> bytes of every vector in shared/spec/vectors.txt."""
    vectors = Vectors()
    path = SHARED / "spec" / "vectors.txt"
    if not path.exists():
        return vectors
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, hex_text = line.split()
            vectors[name] = bytes.fromhex(hex_text)
    return vectors


def load_java_results() -> dict[str, str]:
    """name -> Java's decode result line ('# java: name: ...')."""
    results: dict[str, str] = {}
    path = SHARED / "spec" / "vectors.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("# java: "):
                name, _, result = line[len("# java: "):].partition(": ")
                results[name] = result
    return results


VECTORS = load_vectors()
JAVA_RESULTS = load_java_results()


@pytest.fixture(scope="session")
def shared_root() -> Path | None:
    """The shared/ directory, or None when it is absent (and not required)."""
    if not SHARED.exists() and os.environ.get("KCODEC_REQUIRE_SHARED"):
        raise FileNotFoundError(f"{SHARED} is missing (KCODEC_REQUIRE_SHARED is set)")
    return SHARED if SHARED.exists() else None


@pytest.fixture(scope="session")
def vectors() -> dict[str, bytes]:
    shared_path("spec", "vectors.txt")
    return VECTORS


def resealed(data: bytes | bytearray) -> bytes:
    """A v2 or magic-3 batch with its length and CRC made right again after an edit."""
    out = bytearray(data)
    out[8:12] = (len(out) - 12).to_bytes(4, "big")
    out[17:21] = kcodec.crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def real_segments() -> list[Path]:
    """Every .log file under shared/testdata/kafka-segments (none without shared/)."""
    return sorted((SHARED / "testdata" / "kafka-segments").glob("*/*/*.log"))


def shared_segments() -> list[Path]:
    """real_segments(), for a test that needs them: skipped without shared/, as by
    shared_path."""
    shared_path("testdata", "kafka-segments")
    return real_segments()


def example_plugin_site(site: Path) -> str:
    """examples/zstd-dict laid out in ``site`` as pip installs it (the package and its
    dist-info with the entry point); returns the plugin's name. Skips without a checkout."""
    example = ROOT / "examples" / "zstd-dict"
    if not example.exists():
        pytest.skip("needs the source checkout")
    declared = (example / "pyproject.toml").read_text().split('."kcodec.codecs"]')[1]
    entry = re.search(r'^"([^"]+)" = "([^"]+)"$', declared, re.M)
    assert entry is not None
    name, target = entry.groups()
    shutil.copytree(example / "kcodec_zstd_dict", site / "kcodec_zstd_dict",
                    ignore=shutil.ignore_patterns("__pycache__"))
    info = site / "kcodec_zstd_dict-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kcodec-zstd-dict\n"
                                   "Version: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[kcodec.codecs]\n{name} = {target}\n")
    return name


TRANSACTIONAL_TS = 1_700_000_000_000


def write_transactional_partition(directory: Path) -> Path:
    """orders-0, a segment a batch: pid 1 commits offsets 0-1, pid 2's transaction (2-3)
    is aborted by a marker in a later segment (5), plain data at 6; the .txnindex beside
    the marker's segment lists the aborted transaction, as a broker writes it."""
    def data(pid: int, base: int) -> bytes:
        builder = kcodec.BatchBuilder(base_offset=base, producer_id=pid, producer_epoch=0,
                                      base_sequence=0, is_transactional=True)
        builder.append(b"p%d-a" % pid, key=b"k", timestamp=TRANSACTIONAL_TS)
        builder.append(b"p%d-b" % pid, key=b"k", timestamp=TRANSACTIONAL_TS + 1)
        return builder.build()

    def marker(kind: ControlType, pid: int, offset: int) -> bytes:
        return kcodec.BatchBuilder.end_txn_marker(kind, producer_id=pid, producer_epoch=0,
                                                  coordinator_epoch=0, base_offset=offset,
                                                  timestamp=TRANSACTIONAL_TS + 2)
    plain = kcodec.BatchBuilder(base_offset=6)
    plain.append(b"plain", timestamp=TRANSACTIONAL_TS + 3)
    partition = directory / "orders-0"
    segments.write_partition(partition, [data(1, 0), data(2, 2), marker(ControlType.COMMIT, 1, 4),
                                         marker(ControlType.ABORT, 2, 5), plain.build()],
                             segment_bytes=1)
    (partition / f"{5:020d}.txnindex").write_bytes(segments.TXN_ENTRY.pack(0, 2, 2, 5, 2))
    return partition
