"""neff.lift: a real NEFF as the typed model, written back byte for byte, and edited."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import neff
from conftest import real_neffs


@pytest.mark.parametrize("path", real_neffs())
def test_lift_writes_back_the_same_bytes(path: Path, tmp_path: Path) -> None:
    builder = neff.lift(path, tmp_path / "tree")
    out = tmp_path / "same.neff"
    outcome = builder.write(out, fsync=False)
    assert outcome.accepted
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", real_neffs())
def test_an_edit_changes_that_member_and_the_uuid(path: Path, tmp_path: Path) -> None:
    builder = neff.lift(path, tmp_path / "tree")
    defs = [m for m in builder.spec()["payload"] if m["name"].endswith("def.json")]
    def_member: Any = defs[0]
    folder = def_member["name"].rpartition("/")[0]
    pe = f"{folder}/{def_member['def_json']['pe']}"
    builder.payload(pe)["engine"]["name"] = "edited_in_python"
    out = tmp_path / "edited.neff"
    outcome = builder.write(out, fsync=False)
    assert outcome.accepted
    original, edited = neff.open(path), neff.open(out)
    assert edited.header.uuid != original.header.uuid
    assert b"edited_in_python" in edited.read(pe)
    report = neff.diff(path, out)
    assert [m["name"] for m in report.members["changed"]] == [pe]


def test_payload_names_a_missing_member() -> None:
    with pytest.raises(neff.NeffError, match="no member"):
        neff.Builder().payload("sg00/def.json")
