"""The README's Python examples (the fenced blocks between two
``<!-- python-example -->`` and two ``<!-- python-builder-example -->``
markers) run: the first against a real NEFF, the second in a temp folder."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

import neff
from conftest import REAL_NEFFS, REPO

MARKER = "<!-- python-example -->"
BUILDER_MARKER = "<!-- python-builder-example -->"


def readme_example(marker: str = MARKER) -> str:
    """The code of the block between two `marker` lines of README.md."""
    parts = (REPO / "README.md").read_text().split(marker)
    assert len(parts) >= 3, f"README.md has no block between two {marker} markers"
    fenced = re.search(r"```python\n(.*?)```", parts[1], re.S)
    assert fenced, f"the block between the {marker} markers is not a ```python fence"
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


def test_readme_builder_example_writes_an_accepted_neff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = readme_example(BUILDER_MARKER)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    report = neff.verify(tmp_path / "m.neff")
    assert report.accepted and report.targeted_arches == ("cayman",)
    assert out.getvalue().strip().endswith("True")
