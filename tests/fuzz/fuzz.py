"""Fuzz kcodec: ``python tests/fuzz/fuzz.py TARGET [libFuzzer options] CORPUS [SEEDS...]``
runs one target under atheris (libFuzzer) with kcodec's Python modules instrumented for
coverage, and its compiled core too when built with ``KCODEC_FUZZ=1 CC=clang``;
``--seeds DIR [SHARED]`` writes the seed corpora; ``--replay TARGET PATH...`` runs every
input in the files or folders once, without atheris (as under a sanitizer build)."""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Callable
from pathlib import Path

from instrumented_build import load_libfuzzer_if_needed


def replay(target: str, paths: list[Path]) -> None:
    from fuzz_targets import TARGETS
    files = [f for p in paths for f in (sorted(p.iterdir()) if p.is_dir() else [p])]
    for path in files:
        try:
            TARGETS[target](path.read_bytes())
        except BaseException:
            print(f"{target}: {path} failed", file=sys.stderr)
            raise
    print(f"{target}: {len(files)} inputs replayed, 0 failures")


def target_names() -> list[str]:
    """The keys of fuzz_targets.TARGETS, read without importing it: kcodec may be imported
    only once libFuzzer is loaded."""
    tree = ast.parse((Path(__file__).parent / "fuzz_targets.py").read_text())
    for node in tree.body:
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and node.target.id == "TARGETS" and isinstance(node.value, ast.Dict)):
            return [key.value for key in node.value.keys
                    if isinstance(key, ast.Constant) and isinstance(key.value, str)]
    raise LookupError("no TARGETS in fuzz_targets.py")


def main(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[1] in ("--seeds", "--replay"):
        load_libfuzzer_if_needed()   # kcodec is imported here without fuzzing
    if len(argv) >= 2 and argv[1] == "--seeds":
        from fuzz_seeds import write_seeds
        shared = Path(argv[3]) if len(argv) > 3 else None
        for target, folder in write_seeds(Path(argv[2]), shared).items():
            print(f"{target}: {sum(1 for _ in folder.iterdir())} seeds in {folder}")
        return
    if len(argv) >= 3 and argv[1] == "--replay":
        replay(argv[2], [Path(p) for p in argv[3:]])
        return
    names = target_names()
    if len(argv) < 2 or argv[1] not in names:
        # checked before libFuzzer starts, which would take an exit for a crash (and save
        # the input it was running)
        sys.exit(f"usage: fuzz.py {{{','.join(names)}}} [libFuzzer options] CORPUS...")
    import atheris
    chosen: list[Callable[[bytes], None]] = []

    def one_input(data: bytes) -> None:
        if not chosen:  # kcodec is imported once libFuzzer is loaded (see below)
            with atheris.instrument_imports(include=["kcodec"]):
                from fuzz_targets import TARGETS
            chosen.append(TARGETS[argv[1]])
        chosen[0](data)

    # atheris loads libFuzzer when fuzzing starts; with its symbols global, a build with
    # KCODEC_FUZZ=1 links its coverage counters to them (a normal build uses none).
    sys.setdlopenflags(sys.getdlopenflags() | os.RTLD_GLOBAL)
    atheris.Setup([argv[0], *argv[2:]], one_input)
    atheris.Fuzz()

if __name__ == "__main__":
    main(sys.argv)
