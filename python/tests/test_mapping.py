"""`neff.open` as tarfile/safetensors users expect: a context manager and a
read-only mapping of the runtime's member map, read in one pass."""

from __future__ import annotations

import collections.abc
import io
from pathlib import Path
from typing import List

import pytest

import neff
from conftest import read_independently, real_neff, real_neffs


@pytest.mark.parametrize("path", real_neffs())
def test_the_mapping_is_the_member_map_and_its_bytes_are_tarfiles(path: Path) -> None:
    ind = read_independently(path)
    # The runtime skips *wavegraph-bin.json (neuron-cc 1.x writes one).
    stored = {k: v for k, v in ind.members.items() if not k.endswith("wavegraph-bin.json")}
    with neff.open(path) as n:
        assert isinstance(n, collections.abc.Mapping)
        assert set(n) == set(stored) and len(n) == len(stored)
        assert n.names() == list(n) and list(n.keys()) == list(n)
        assert "neff.json" in n and "no-such-member" not in n
        assert n["neff.json"] == ind.members["neff.json"]
        assert dict(n.items()) == stored
        assert n.get("no-such-member") is None
    assert n.closed


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_opened_from_a_path_bytes_or_a_file_object(path: Path) -> None:
    with neff.open(path) as a, neff.open(path.read_bytes()) as b:
        with path.open("rb") as f, neff.open(f) as c:
            assert a.names() == b.names() == c.names()
            assert dict(a.items()) == dict(b.items()) == dict(c.items())
    # A file object of a file on disk is read by its path (nothing copied);
    # any other binary stream is read whole.
    with path.open("rb") as f:
        assert neff.open(f).inspect()["file"] == str(path)
    assert neff.open(io.BytesIO(path.read_bytes())).names() == a.names()
    with pytest.raises(TypeError, match="binary mode"):
        neff.open(io.StringIO("text"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="binary file object"):
        neff.open(3.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_read_many_reads_what_it_is_asked_in_one_pass(path: Path) -> None:
    ind = read_independently(path)
    n = neff.open(path)
    five = list(n)[-5:]
    got = n.read_many(reversed(five))
    assert set(got) == set(five) and all(got[k] == ind.members[k] for k in five)
    # In archive order, whatever order they were asked in.
    assert list(got) == five
    with pytest.raises(neff.MemberNotFound, match="no member 'nope'"):
        n.read_many(["neff.json", "nope"])
    with pytest.raises(KeyError):
        n["nope"]


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_read_members_reads_them_in_one_checked_pass_without_opening(path: Path) -> None:
    ind = read_independently(path)
    names = list(neff.open(path))
    asked = [names[-1], names[0], names[len(names) // 2]]
    got = neff.read_members(path, asked)
    # The data tarfile reads, in the order asked; from a path, bytes or a file.
    assert list(got) == asked and all(got[k] == ind.members[k] for k in asked)
    assert neff.read_members(path.read_bytes(), asked) == got
    with path.open("rb") as f:
        assert neff.read_members(f, asked[:1]) == {asked[0]: got[asked[0]]}
    with pytest.raises(neff.MemberNotFound, match="no member 'nope'"):
        neff.read_members(path, ["neff.json", "nope"])
    # A payload that cannot be read names the refusing gate.
    with pytest.raises(neff.NeffError, match="not a readable NEFF: G3"):
        neff.read_members(b"garbage" * 300, ["neff.json"])
    # So does one the container gates refuse (here the payload hash, G9): the
    # runtime would not load it, so its members are not handed out.
    raw = bytearray(path.read_bytes())
    raw[0xAC] ^= 0xFF
    with pytest.raises(neff.NeffError, match="refused by the container gates: G9"):
        neff.read_members(bytes(raw), asked)


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_a_closed_neff_refuses_reads_but_keeps_its_header(path: Path) -> None:
    n = neff.open(path)
    n.close()
    n.close()
    assert n.header.uuid and "closed" in repr(n)
    for read in (lambda: n.read("neff.json"), lambda: n["neff.json"], lambda: list(n.items())):
        with pytest.raises(ValueError, match="closed"):
            read()


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_extract_writes_the_members(path: Path, tmp_path: Path) -> None:
    ind = read_independently(path)
    sources: List[neff.Source] = [path, path.read_bytes()]
    for i, source in enumerate(sources):
        out = tmp_path / f"tree{i}"
        summary = neff.open(source).extract(out)
        assert summary.files >= len(ind.members)
        for key, data in ind.members.items():
            assert (out / key).read_bytes() == data


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_an_abandoned_iteration_ends_cleanly(path: Path) -> None:
    n = neff.open(path)
    it = n.iter_members()
    first = next(it)
    assert first[0] == n.names()[0]
    del it
    assert n["neff.json"]
