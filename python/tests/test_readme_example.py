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


def test_readme_edit_example_edits_a_real_neff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = readme_example("<!-- python-edit-example -->")
    path = next((p for p in REAL_NEFFS if "matmul_small" in p.name), None)
    if path is None:
        pytest.skip("the real NEFF ncc2.23_nkipy_matmul_small is missing")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace('"model.neff"', repr(str(path))), "README.md", "exec"), {})
    assert out.getvalue().strip() == "True"
    edited = neff.open(tmp_path / "edited.neff")
    report = neff.diff(path, tmp_path / "edited.neff")
    changed = sorted(m["name"] for m in report.members["changed"])
    assert changed == ["sg00/def.json", "sg00/value_sg0000_identity_82_CRSM.npy"]
    weights = edited.read("sg00/value_sg0000_identity_82_CRSM.npy")
    assert weights is not None and b"(64, 256)" in weights[:128]
    assert b'"size": 32768' in (edited.read("sg00/def.json") or b"")  # 64*256*2 bytes


def test_the_package_readme_runs_top_to_bottom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block of python/README.md between ``<!-- readme-block -->`` markers,
    in order, in one namespace, on a real NEFF as ``model.neff``."""
    pytest.importorskip("numpy")
    path = next((p for p in REAL_NEFFS if "matmul_small" in p.name), None)
    if path is None:
        pytest.skip("the real NEFF ncc2.23_nkipy_matmul_small is missing")
    text = (REPO / "python" / "README.md").read_text()
    blocks = text.split("<!-- readme-block -->")[1::2]
    assert len(blocks) == 5
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.neff").write_bytes(path.read_bytes())
    namespace: dict = {}  # type: ignore[type-arg]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            fenced = re.search(r"```python\n(.*?)```", block, re.S)
            assert fenced, block
            exec(compile(fenced.group(1), "python/README.md", "exec"), namespace)
    printed = out.getvalue()
    assert "Unreadable" in printed.splitlines()[-1]
    assert neff.verify(tmp_path / "tiny.neff").accepted
    assert neff.verify(tmp_path / "edited.neff").accepted
    assert "False" in printed
