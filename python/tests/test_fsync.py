"""``fsync=False`` on the writing functions (the CLI's ``--no-fsync``): the same
bytes, and, where strace can count them, no fsync at all, while the default
syncs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest

import neff

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "examples" / "allreduce"

BUILD = (
    "b = neff.Builder(name='m', target='cayman')\n"
    "sg = b.subgraph('sg00')\n"
    "sg.input('x', 'float32', (4,)).output('y', 'float32', (4,)).evtaccel().engine('pe', instr=bytes(64))\n"
)

# Each writing function as a script: {out} is its output, {neff} a NEFF to read.
SCRIPTS: Dict[str, str] = {
    "pack": f"neff.pack({str(TREE)!r}, {{out!r}}, fsync={{fsync}})",
    "unpack": "neff.unpack({neff!r}, {out!r}, fsync={fsync})",
    "Builder.write": BUILD + "b.write({out!r}, fsync={fsync})",
}


def run(kind: str, out: Path, packed: Path, fsync: bool) -> None:
    exec(SCRIPTS[kind].format(out=str(out), neff=str(packed), fsync=fsync), {"neff": neff})


def contents(path: Path) -> Dict[str, bytes]:
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture
def packed(tmp_path: Path) -> Path:
    out = tmp_path / "in.neff"
    neff.pack(TREE, out)
    return out


@pytest.mark.parametrize("kind", sorted(SCRIPTS))
def test_fsync_false_writes_the_same_output(kind: str, tmp_path: Path, packed: Path) -> None:
    synced, unsynced = tmp_path / "synced", tmp_path / "unsynced"
    run(kind, synced, packed, True)
    run(kind, unsynced, packed, False)
    assert contents(synced) and contents(synced) == contents(unsynced)


def sync_calls(script: str, log: Path) -> Tuple[int, int]:
    """(fsync + fdatasync, syncfs) calls of a Python process running ``script``."""
    done = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,syncfs", "-o", str(log),
         sys.executable, "-c", "import neff\n" + script],
        capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    calls = [line.split()[1] for line in log.read_text().splitlines() if len(line.split()) > 1]
    fsyncs = sum(c.startswith(("fsync(", "fdatasync(")) for c in calls)
    return fsyncs, sum(c.startswith("syncfs(") for c in calls)


@pytest.mark.parametrize("kind", sorted(SCRIPTS))
def test_fsync_false_makes_no_sync_call(kind: str, tmp_path: Path, packed: Path) -> None:
    if shutil.which("strace") is None or subprocess.run(
            ["strace", "-o", "/dev/null", "true"], capture_output=True, check=False).returncode != 0:
        pytest.skip("strace is not installed or cannot trace here")
    counts = {}
    for fsync in (True, False):
        script = SCRIPTS[kind].format(out=str(tmp_path / f"out-{fsync}"), neff=str(packed), fsync=fsync)
        counts[fsync] = sync_calls(script, tmp_path / f"log-{fsync}")
    assert sum(counts[True]) >= 1, counts
    assert counts[False] == (0, 0), counts
