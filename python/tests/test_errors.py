"""One test per error kind: each Rust error reaches Python as the right class,
with where it happened."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

import neff
from conftest import REAL_NEFFS


def test_missing_file_is_an_oserror_with_the_filename(tmp_path: Path) -> None:
    missing = tmp_path / "missing.neff"
    for call in (lambda: neff.open(missing), lambda: neff.verify(missing), lambda: neff.verify_many([missing])):
        with pytest.raises(FileNotFoundError) as caught:
            call()
        e = caught.value
        assert isinstance(e, neff.NeffIOError) and isinstance(e, neff.NeffError)
        assert e.filename == str(missing) and e.errno == errno.ENOENT and e.kind == "Read"


def test_garbage_bytes_are_a_neff_error_at_the_header_field() -> None:
    with pytest.raises(neff.NeffError) as caught:
        neff.open(b"garbage!" * 200)
    e = caught.value
    assert e.kind == "Unreadable" and e.offset == 0x008  # header_size
    assert e.report is not None and e.report["gate"] == "G3" and "G3" in str(e)
    assert not isinstance(e, neff.Rejected)


def test_short_bytes_are_a_neff_error() -> None:
    with pytest.raises(neff.NeffError) as caught:
        neff.open(b"\x02" + b"\0" * 100)
    assert caught.value.report is not None and caught.value.report["gate"] == "G2"


def test_bad_profile_knobs_are_value_errors() -> None:
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    path = REAL_NEFFS[0]
    with pytest.raises(ValueError, match="sideways"):
        neff.verify(path, hash_layout="sideways")
    with pytest.raises(neff.NeffValueError, match="unknown feature"):
        neff.verify(path, supported_features="warp_drive")
    with pytest.raises(ValueError, match="unknown field `instance`"):
        neff.verify(path, instance="sunda")
    with pytest.raises(ValueError, match="arch"):
        neff.verify(path, instance_arch="vax")
    with pytest.raises(ValueError, match="level 12"):
        neff.pack(path.parent, path.parent / "x.neff", level=12)
    with pytest.raises(ValueError, match="unknown --ignore name"):
        neff.diff(path, path, ignore=("colour",))


def test_missing_member_is_a_key_error_naming_the_members() -> None:
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    with pytest.raises(KeyError) as caught:
        neff.open(REAL_NEFFS[0]).read("no/such/member")
    e = caught.value
    assert isinstance(e, neff.MemberNotFound) and e.member == "no/such/member" and "neff.json" in str(e)


def test_damaged_payload_read_names_the_offset(tmp_path: Path) -> None:
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    data = bytearray(REAL_NEFFS[0].read_bytes())
    n = neff.open(bytes(data))
    last = n.members()[-1]
    data[1024 + 20:] = bytes(len(data) - 1024 - 20)  # zero the deflate stream after the gzip header
    with pytest.raises(neff.NeffError) as caught:
        neff._native.read_member(bytes(data), last.key)
    assert caught.value.kind.startswith("Gzip") and caught.value.offset is not None


def test_pack_output_inside_the_folder_is_a_conflict(tmp_path: Path) -> None:
    (tmp_path / "neff.json").write_text("{}")
    with pytest.raises(neff.NeffError) as caught:
        neff.pack(tmp_path, tmp_path / "out.neff")
    assert caught.value.kind == "Conflict" and not isinstance(caught.value, neff.Rejected)


def test_pack_missing_folder_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        neff.pack(tmp_path / "nope", tmp_path / "out.neff")
    assert caught.value.filename == str(tmp_path / "nope")
