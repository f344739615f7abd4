"""A NEFF refused in its first graph still shows every graph in Python, each
marked with how far it was read (``Graph.partial``, ``MemoryFigures.partial``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import neff
from conftest import REAL_DIR, run_cli

SOURCE = REAL_DIR / "ncc2.24_nki-moe-megakernel_ref_ws3.neff"


@pytest.mark.skipif(not SOURCE.is_file(), reason=f"no {SOURCE.name} in {REAL_DIR}")
def test_graphs_after_a_refusal_are_shown_and_marked(tmp_path: Path, neff_cli: Path) -> None:
    tree = tmp_path / "tree"
    assert run_cli(neff_cli, "unpack", str(SOURCE), "-o", str(tree), "-q").returncode == 0
    pool = tree / "sg00" / "Pool0.json"
    doc = json.loads(pool.read_text())
    del doc["dma"][0]["desc"][0]["to_dtype"]
    pool.write_text(json.dumps(doc))
    refused = tmp_path / "refused.neff"
    packed = run_cli(neff_cli, "pack", str(tree), "-o", str(refused), "--keep-refused", "-q", "--no-fsync")
    assert packed.returncode == 0, packed.stderr

    n = neff.open(refused)
    assert not n.verify().accepted
    graphs = n.graphs
    assert [g.name for g in graphs] == ["sg00", "sg01"]
    assert graphs[0].partial is not None and graphs[0].partial.startswith("read up to the refusal (G26")
    assert graphs[1].partial is not None and "past the refusal by G26" in graphs[1].partial
    cores = n.memory().cores
    assert [c.partial is not None for c in cores] == [True, True]
    # A NEFF read whole has no marks.
    assert all(g.partial is None for g in neff.open(SOURCE).graphs)
