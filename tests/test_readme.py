"""The README's tour runs as written (its ```python blocks; ```py blocks need real files)."""

from __future__ import annotations

import re
import warnings

import pytest

import kcodec

from .conftest import ROOT


def test_readme_python_blocks_run() -> None:
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("needs the source checkout")
    code = "\n".join(re.findall(r"```python\n(.*?)```", readme.read_text(), re.S))
    # the error example reads a buffer it calls `corrupted`
    code = code.replace("kcodec.read_batches(corrupted)", "kcodec.read_batches(data[:-1] + b'!')")
    limit = kcodec.codecs.get_max_decompressed_size()   # (the tour sets the global bound)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, str(readme), "exec"), {"print": lambda *args, **kwargs: None})
    finally:
        kcodec.codecs.set_max_decompressed_size(limit)
