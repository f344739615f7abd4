"""Shared fixtures: the real NEFFs, the CLI binary, and an independent reader
(Python's own struct/gzip/tarfile/hashlib) to check the package against."""

from __future__ import annotations

import gzip
import io
import os
import shutil
import struct
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
# The real compilers' NEFFs: NEFF_REAL_NEFFS (relative to the repository), as for
# the Rust tests (tests/real-neffs.md); those tests are skipped without them.
REAL_DIR = REPO / (os.environ.get("NEFF_REAL_NEFFS") or "../shared/real-neffs")
REAL_NEFFS = sorted(REAL_DIR.glob("*.neff")) if REAL_DIR.is_dir() else []


def real_neffs() -> List[Any]:
    """Each real NEFF as a pytest param (one skipped param when there are none)."""
    if not REAL_NEFFS:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no real NEFFs in {REAL_DIR}"))]
    return [pytest.param(p, id=p.name) for p in REAL_NEFFS]


def real_neff(part: str) -> List[Any]:
    """The real NEFF whose name contains ``part``, as a pytest param (a
    skipped param when it is missing)."""
    found = [p for p in REAL_NEFFS if part in p.name]
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no real NEFF *{part}* in {REAL_DIR}"))]
    return [pytest.param(found[0], id=found[0].name)]


def cli() -> Optional[Path]:
    """The `neff` binary: $NEFF_CLI, else $CARGO_TARGET_DIR or target/, debug or release."""
    if os.environ.get("NEFF_CLI"):
        return Path(os.environ["NEFF_CLI"])
    targets = [Path(os.environ["CARGO_TARGET_DIR"])] if os.environ.get("CARGO_TARGET_DIR") else []
    for t in targets + [REPO / "target"]:
        for profile in ("debug", "release"):
            if (t / profile / "neff").is_file():
                return t / profile / "neff"
    found = shutil.which("neff")
    return Path(found) if found else None


@pytest.fixture
def neff_cli() -> Path:
    """The CLI binary, or skip."""
    path = cli()
    if path is None:
        pytest.skip("the neff CLI is not built (cargo build)")
    return path


def run_cli(binary: Path, *args: str) -> "subprocess.CompletedProcess[str]":
    """Runs the CLI, capturing text output."""
    return subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)


@dataclass
class Independent:
    """A NEFF as Python's standard library reads it."""

    fields: Dict[str, Any]
    payload: bytes
    members: Dict[str, bytes]
    sizes: Dict[str, int]


def read_independently(path: Path) -> Independent:
    """Header fields by struct, members by gzip + tarfile."""
    raw = path.read_bytes()

    def u64(at: int) -> int:
        return int(struct.unpack_from("<Q", raw, at)[0])

    def u32(at: int) -> int:
        return int(struct.unpack_from("<I", raw, at)[0])

    def text(at: int, n: int) -> str:
        return raw[at:at + n].split(b"\0", 1)[0].decode()

    fields: Dict[str, Any] = {
        "pkg_version": u64(0x000), "header_size": u64(0x008), "data_size": u64(0x010),
        "neff_version_major": u64(0x018), "neff_version_minor": u64(0x020),
        "build_version": text(0x028, 128), "unused_0": u32(0x0A8), "hash": raw[0x0AC:0x0CC],
        "uuid": raw[0x0CC:0x0DC], "name": text(0x0DC, 256), "requested_tpb_count": u32(0x1DC),
        "tpb_per_node": raw[0x1E0:0x220], "feature_bits": u64(0x220), "vnc_size": u32(0x228),
    }
    payload = raw[1024:1024 + fields["data_size"]]
    tar = gzip.decompress(payload) if payload[:2] == b"\x1f\x8b" else payload
    members: Dict[str, bytes] = {}
    sizes: Dict[str, int] = {}
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        for m in t.getmembers():
            key = m.name[2:] if m.name.startswith("./") else m.name
            sizes[key] = m.size
            f = t.extractfile(m)
            if f is not None:
                members[key] = f.read()
    return Independent(fields, payload, members, sizes)
