"""Opening and verifying a NEFF streams it: peak memory stays far below the
size of its members (measured in a child process with getrusage)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import neff
from conftest import REAL_NEFFS

BIG_MIB = 96


def peak_rss_mib(code: str) -> float:
    """Peak RSS of a child Python running ``code`` after ``import neff``, MiB."""
    script = f"import resource, neff\n{code}\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024


def test_open_and_verify_do_not_hold_the_members(tmp_path: Path) -> None:
    real = next((p for p in REAL_NEFFS if "matmul_small" in p.name), None)
    if real is None:
        pytest.skip("needs the real NEFF ncc2.23_nkipy_matmul_small.neff")
    tree = tmp_path / "tree"
    neff.unpack(real, tree)
    with (tree / "big.bin").open("wb") as f:
        for i in range(BIG_MIB):
            f.write(bytes([i % 251]) * (1 << 20))
    big = tmp_path / "big.neff"
    neff.pack(tree, big, vnc_size=2)
    assert neff.open(big).report.accepted
    baseline = peak_rss_mib("")
    opened = peak_rss_mib(f"n = neff.open({str(big)!r}); n.verify(); n.read('neff.json')")
    assert opened - baseline < BIG_MIB / 2, (baseline, opened)
    read = peak_rss_mib(f"assert len(neff.open({str(big)!r}).read('big.bin')) == {BIG_MIB << 20}")
    # The check can see a member held in memory (read() holds it once).
    assert read >= BIG_MIB * 0.9, (opened, read)
