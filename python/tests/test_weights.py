"""Weights as numpy arrays, bfloat16 as the compilers write it."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import neff
from conftest import read_independently, real_neffs


@pytest.mark.parametrize("path", real_neffs())
def test_every_real_weight_loads_as_numpy_loads_it(path: Path) -> None:
    ind = read_independently(path)
    n = neff.open(path)
    arrays = n.weights()
    weights = [w for g in n.graphs for w in g.weights if w.member is not None]
    assert len(arrays) == len(weights)
    for w in weights:
        key = w.name if w.name in arrays else next(k for k in arrays if k.endswith("/" + w.name))
        expected = np.load(io.BytesIO(ind.members[str(w.member)]), allow_pickle=False)
        got = arrays[key]
        assert got.shape == expected.shape and got.tobytes() == expected.tobytes(), w.name
        if expected.dtype.kind != "V":
            assert got.dtype == expected.dtype
    if weights:
        first = weights[0].name
        assert np.array_equal(n.weight(first), arrays[first]) if first in arrays else True
    with pytest.raises(neff.MemberNotFound, match="no weight 'nope'"):
        n.weights(["nope"])


def _bf16_model(tmp_path: Path, data: object, **kw: object) -> neff.Neff:
    b = neff.Builder(name="bf16")
    with b.subgraph("sg00") as sg:
        sg.input("x", "bfloat16", (2, 4)).output("y", "bfloat16", (2, 4))
        sg.weight("w", data, **kw)  # type: ignore[arg-type]
    out = tmp_path / "m.neff"
    b.write(out)
    return neff.open(out)


def test_a_uint16_array_given_as_bfloat16_is_written_as_the_compilers_do(tmp_path: Path) -> None:
    bits = np.arange(8, dtype=np.uint16).reshape(2, 4) + 0x3F80
    n = _bf16_model(tmp_path, bits, dtype="bfloat16")
    (w,) = n.graphs[0].weights
    assert w.dtype == "bfloat16" and w.shape == (2, 4) and w.size == 16
    member = n[str(w.member)]
    assert b"'descr': '<V2'" in member
    ml_dtypes = pytest.importorskip("ml_dtypes")
    got = n.weight("w")
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    assert got.view(np.uint16).tolist() == bits.tolist()


def test_ml_dtypes_bfloat16_round_trips(tmp_path: Path) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.array([[1.0, -2.0, 0.5, 3.0]], dtype=ml_dtypes.bfloat16)
    b = neff.Builder(name="bf16")
    with b.subgraph("sg00") as sg:
        sg.input("x", "bfloat16", (1, 4)).output("y", "bfloat16", (1, 4))
        sg.weight("w", values)
    b.write(tmp_path / "m.neff")
    n = neff.open(tmp_path / "m.neff")
    assert n.graphs[0].weights[0].dtype == "bfloat16"
    assert n.weight("w").astype(np.float32).tolist() == [[1.0, -2.0, 0.5, 3.0]]


def test_without_ml_dtypes_bfloat16_is_uint16_with_a_warning(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    bits = np.full((2, 4), 0x3F80, dtype=np.uint16)
    n = _bf16_model(tmp_path, bits, dtype="bfloat16")
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with pytest.warns(UserWarning, match="bfloat16: returned as uint16"):
        got = n.weight("w")
    assert got.dtype == np.uint16 and got.tolist() == bits.tolist()


def test_raw_weights_take_dtype_and_shape_from_def_json(tmp_path: Path) -> None:
    values = np.arange(6, dtype=np.int32)
    b = neff.Builder(name="raw")
    with b.subgraph("sg00") as sg:
        sg.input("x", "int32", (2, 3)).output("y", "int32", (2, 3))
        sg.weight("w", values.tobytes(), "int32", (2, 3))
    b.write(tmp_path / "m.neff")
    n = neff.open(tmp_path / "m.neff")
    assert n.graphs[0].weights[0].size == 24
    assert n.weight("w").tolist() == values.reshape(2, 3).tolist()
