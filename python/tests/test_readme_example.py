"""The README's Python example (the fenced block between two
``<!-- python-example -->`` markers) runs against a real NEFF."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

import neff
from conftest import REAL_NEFFS, REPO

MARKER = "<!-- python-example -->"


def readme_example() -> str:
    """The code of the marked block, or skip when the README has none."""
    parts = (REPO / "README.md").read_text().split(MARKER)
    if len(parts) < 3:
        pytest.skip(f"README.md has no block between two {MARKER} markers")
    fenced = re.search(r"```python\n(.*?)```", parts[1], re.S)
    assert fenced, f"the block between the {MARKER} markers is not a ```python fence"
    return fenced.group(1)


def test_readme_example_runs_on_a_real_neff() -> None:
    code = readme_example()
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    path = next((p for p in REAL_NEFFS if "matmul_small" in p.name), REAL_NEFFS[0])
    assert code.count('"model.neff"') == 1, "the example opens \"model.neff\" once, as `path`"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace('"model.neff"', repr(str(path))), "README.md", "exec"), {})
    n = neff.open(path)
    assert n.header is not None and str(n.header.uuid) in out.getvalue()
    assert "True" in out.getvalue()  # the verdict
