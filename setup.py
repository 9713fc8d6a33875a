"""Build of kcodec's compiled core: Cython modules over the C sources in csrc/.

Set KCODEC_SANITIZE=1 to build with AddressSanitizer and UndefinedBehaviorSanitizer (gcc or
clang; undefined behaviour aborts). Python itself is not instrumented, so the runtime must
be preloaded. KCODEC_FUZZ=1 (with CC=clang) adds libFuzzer's coverage instrumentation, for
atheris to see the compiled code. See the README's Hardening section.
"""
import os
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

CSRC = "csrc"


def compile_args() -> list[str]:
    if sys.platform == "win32":
        return ["/O2"]
    args = ["-O3", "-std=c11", "-Wno-unused-function"]
    if os.environ.get("KCODEC_SANITIZE"):
        args += ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                 "-fno-omit-frame-pointer", "-O1", "-g"]
    if os.environ.get("KCODEC_FUZZ"):
        args += ["-fsanitize=fuzzer-no-link"]
    return args


def link_args() -> list[str]:
    if sys.platform != "win32" and os.environ.get("KCODEC_SANITIZE"):
        return ["-fsanitize=address,undefined"]
    return []


def build_base() -> str:
    """Instrumented builds keep their objects apart: setuptools reuses objects by date, not
    by flags."""
    variant = "-".join(v for v in ("fuzz", "sanitize") if os.environ.get(f"KCODEC_{v.upper()}"))
    return f"build/{variant}" if variant else "build"


def extension(name: str, *sources: str) -> Extension:
    return Extension(
        f"kcodec.{name}",
        [f"kcodec/{name}.pyx", *(f"{CSRC}/{s}" for s in sources)],
        include_dirs=[CSRC],
        extra_compile_args=compile_args(),
        extra_link_args=link_args(),
    )


EXTENSIONS = [
    extension("_crc32c", "crc32c.c"),
    extension("_scratch"),
    extension("_varint"),
    extension("_libz"),
    extension("_libzstd"),
    extension("_frames", "xxh32.c", "lz4_block.c", "snappy_block.c", "size_hint.c"),
    extension("_record"),
    extension("_legacy"),
    extension("_batch"),
    extension("_builder"),
    extension("_headers_first"),
    extension("_column_buffers"),
    extension("_columns", "columns.c", "size_hint.c", "snappy_block.c"),
    extension("_select"),
    extension("_groups"),
    extension("_cuts"),
    extension("_bitmaps"),
    extension("_handoff"),
]

setup(
    ext_modules=cythonize(
        EXTENSIONS,
        compiler_directives={"language_level": "3", "embedsignature": True},
        nthreads=os.cpu_count() or 1,
    ),
    options={"build_ext": {"parallel": os.cpu_count() or 1},
             "build": {"build_base": build_base()}},
)
