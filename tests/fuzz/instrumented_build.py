"""kcodec built for coverage-guided fuzzing, imported outside a fuzzing run.

A build with ``KCODEC_FUZZ=1`` (clang's ``-fsanitize=fuzzer-no-link``) refers to libFuzzer's
symbols, which only atheris's libFuzzer defines: ``fuzz.py`` has atheris load it, global,
before kcodec is imported. Any other process that imports such a build (the suite, the
seeds' writer, a replay) calls :func:`load_libfuzzer_if_needed` first; a normal build
loads nothing.
"""

from __future__ import annotations

import os
import sys

#: How the loader reports a build that refers to libFuzzer's symbols without them.
_UNRESOLVED = ("undefined symbol: __sancov", "undefined symbol: __sanitizer_cov")


def load_libfuzzer_if_needed() -> None:
    """Makes ``import kcodec`` work in this process, with atheris's libFuzzer loaded
    beside kcodec if kcodec is a build instrumented for it."""
    try:
        import kcodec  # noqa: F401
    except ImportError as error:
        if not any(text in str(error) for text in _UNRESOLVED):
            raise
        flags = sys.getdlopenflags()
        sys.setdlopenflags(flags | os.RTLD_GLOBAL)
        try:
            import atheris.core_with_libfuzzer  # noqa: F401
        finally:
            sys.setdlopenflags(flags)
