"""neff.open and neff.verify read a NEFF inside a compile-cache HLO module
and a torch-neuronx TorchScript zip as the NEFF itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pytest

import neff
from conftest import REAL_DIR


def carried_pairs() -> List[Any]:
    pairs = [
        ("ncc2.24_nki-moe-megakernel_wrapped_neff.hlo", "ncc2.24_nki-moe-megakernel_ref_ws3.neff"),
        ("ncc2.6_optimum-neuron_neuronx_model.neuron", "ncc2.6_optimum-neuron_neuronx_model.neff"),
    ]
    found = [(REAL_DIR / c, REAL_DIR / n) for c, n in pairs if (REAL_DIR / c).is_file()]
    if not found:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no carriers in {REAL_DIR}"))]
    return [pytest.param(c, n, id=c.name) for c, n in found]


@pytest.mark.parametrize("carrier,inner", carried_pairs())
def test_a_carrier_reads_as_the_neff_inside(carrier: Path, inner: Path) -> None:
    a, b = neff.open(carrier), neff.open(inner)
    assert a.header == b.header
    assert [(m.key, m.size) for m in a.members()] == [(m.key, m.size) for m in b.members()]
    assert a.read("neff.json") == b.read("neff.json")
    assert neff.verify(carrier).accepted and neff.verify(inner).accepted
    assert neff.verify(carrier).digest == neff.verify(inner).digest
