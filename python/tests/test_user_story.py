"""The whole story a Python user walks on a real NEFF: open it as a context
manager, iterate, read five members in one pass, load every weight as an
array (bfloat16 included), edit one weight through the builder, write,
verify."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import neff
from conftest import read_independently, real_neff


@pytest.mark.parametrize("path", real_neff("ncc1.15"))
def test_open_iterate_read_weights_edit_write_verify(path: Path, tmp_path: Path) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    ind = read_independently(path)
    with neff.open(path) as n:
        names = list(n)
        assert names and all(name in n for name in names)
        five = names[:5]
        got = n.read_many(five)
        assert [got[k] for k in five] == [ind.members[k] for k in five]
        weights = n.weights()
        assert len(weights) == sum(len(g.weights) for g in n.graphs)
        bf16 = [k for k, a in weights.items() if a.dtype == np.dtype(ml_dtypes.bfloat16)]
        assert bf16, "this neuron-cc 1.15 NEFF has bfloat16 weights"
        first = n.graphs[0].weights[0]
    assert n.closed

    # Edit one weight through the builder: same shape, new values.
    builder = neff.lift(path, tmp_path / "tree")
    original = weights[first.name]
    replacement = np.zeros_like(original)
    builder.replace_weight(first.name, replacement)
    out = builder.write(tmp_path / "edited.neff")
    assert out.accepted

    report = neff.verify(tmp_path / "edited.neff")
    assert report.accepted
    with neff.open(tmp_path / "edited.neff") as edited:
        assert np.array_equal(edited.weight(first.name), replacement)
        changed = [m["name"] for m in neff.diff(path, tmp_path / "edited.neff").members["changed"]]
        assert str(first.member) in changed
