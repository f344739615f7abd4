"""neff.pack / neff.unpack, and NEFFs crossing between Python and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest

import neff
from conftest import REAL_NEFFS, REPO, read_independently, run_cli

EXAMPLE_TREE = REPO / "examples" / "allreduce"


@pytest.fixture
def real() -> Path:
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    return next((p for p in REAL_NEFFS if "matmul_small" in p.name), REAL_NEFFS[0])


def test_unpack_then_pack_rebuilds_the_same_bytes(real: Path, tmp_path: Path) -> None:
    tree, header = tmp_path / "tree", tmp_path / "h.json"
    s = neff.unpack(real, tree, header_out=header)
    ind = read_independently(real)
    assert s.files == len(ind.members) and s.bytes == sum(len(b) for b in ind.members.values())
    assert all((tree / k).read_bytes() == b for k, b in ind.members.items())
    assert s.byte_identical_repack and header.is_file()
    assert s.deflate_proof is not None and s.deflate_proof["compared"] == s.deflate_proof["stream"] > 0
    out = neff.pack(tree, tmp_path / "again.neff", header=header)
    assert out.report.accepted and Path(out.file).read_bytes() == real.read_bytes()
    assert out.payload_matches_source is True
    plain = neff.pack(tree, tmp_path / "plain.neff", recorded_header=False)
    assert plain.payload_matches_source is None
    assert out.files == s.files and out.header.uuid == neff.open(real).header.uuid
    # Without header=, the header and framing the unpack recorded in the tree.
    assert s.recorded_header == str(tree / ".neff-unpack.header.json")
    kept = neff.pack(tree, tmp_path / "kept.neff")
    assert Path(kept.file).read_bytes() == real.read_bytes() and kept.files == s.files


def test_unpack_then_pack_keeps_the_header_of_a_built_neff(tmp_path: Path) -> None:
    built = tmp_path / "m.neff"
    neff.pack(EXAMPLE_TREE, built, name="kept", build_version="9.9", feature_bits=0x2000, framing="neuronx-cc")
    s = neff.unpack(built, tmp_path / "tree")
    assert s.recorded_header is not None
    again = neff.pack(tmp_path / "tree", tmp_path / "again.neff")
    assert again.header.name == "kept" and again.header.feature_bits & 0x2000
    assert (tmp_path / "again.neff").read_bytes() == built.read_bytes()
    bare = neff.unpack(built, tmp_path / "tree", force=True, record_header=False)
    assert bare.recorded_header is None and not (tmp_path / "tree" / ".neff-unpack.header.json").exists()


def test_python_packed_neff_is_verified_by_the_cli(real: Path, tmp_path: Path, neff_cli: Path) -> None:
    neff.unpack(real, tmp_path / "tree")
    out = neff.pack(tmp_path / "tree", tmp_path / "py.neff", name="from-python", feature_bits=["vnc", 0x400],
                    vnc_size=2)
    assert out.header.name == "from-python" and out.header.feature_bits == 0x400 and out.header.vnc_size == 2
    done = run_cli(neff_cli, "verify", "--json", str(tmp_path / "py.neff"))
    assert done.returncode == 0 and json.loads(done.stdout)["accepted"]
    same = run_cli(neff_cli, "pack", str(tmp_path / "tree"), "-o", str(tmp_path / "cli.neff"),
                   "--name", "from-python", "--feature-bits", "0x400", "--vnc-size", "2")
    assert same.returncode == 0, same.stderr
    assert (tmp_path / "cli.neff").read_bytes() == (tmp_path / "py.neff").read_bytes()


def test_cli_packed_neff_opens_in_python(real: Path, tmp_path: Path, neff_cli: Path) -> None:
    neff.unpack(real, tmp_path / "tree")
    out = tmp_path / "cli.neff"
    done = run_cli(neff_cli, "pack", str(tmp_path / "tree"), "-o", str(out), "--framing", "neuronx-cc",
                   "--vnc-size", "2")
    assert done.returncode == 0, done.stderr
    n = neff.open(out)
    assert n.report.accepted and n.header is not None and n.header.hash_layout == "word-reversed"
    assert n.read("neff.json") == (tmp_path / "tree" / "neff.json").read_bytes()
    assert [g.name for g in n.graphs] == [g.name for g in neff.open(real).graphs]


def test_refused_pack_raises_rejected_and_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "readme.txt").write_text("no neff.json here")
    out = tmp_path / "bad.neff"
    with pytest.raises(neff.Rejected) as caught:
        neff.pack(tmp_path / "tree", out)
    e = caught.value
    assert e.gate == "G13" and e.status_name == "NRT_INVALID" and e.status == 2
    assert e.detail and "neff.json" in e.detail and e.report is not None and e.report["accepted"] is False
    assert isinstance(e, neff.NeffError) and not out.exists()
    kept = neff.pack(tmp_path / "tree", out, keep_refused=True)
    assert out.exists() and not kept.report.accepted and kept.report.gate == "G13"
    assert not neff.verify(out).accepted  # verify reports, never raises


def test_unpack_refuses_a_non_empty_folder_unless_forced(real: Path, tmp_path: Path) -> None:
    neff.unpack(real, tmp_path)
    with pytest.raises(neff.NeffError) as caught:
        neff.unpack(real, tmp_path)
    assert caught.value.kind == "NotEmpty" and caught.value.path == str(tmp_path)
    assert neff.unpack(real, tmp_path, force=True).files > 0


def test_pack_infers_the_virtual_core_of_a_two_graph_tree(tmp_path: Path) -> None:
    b = neff.Builder(name="two")
    for name in ("sg00", "sg01"):
        b.subgraph(name).input("x", "float32", (4,)).output("y", "float32", (4,))
    b.write(tmp_path / "two.neff")
    neff.unpack(tmp_path / "two.neff", tmp_path / "tree")
    out = neff.pack(tmp_path / "tree", tmp_path / "again.neff")
    assert out.report.accepted and out.header.vnc_size == 2
    assert out.header.feature_names == ("neff_feature_vnc",) and out.header.digest == out.report.digest


def test_weights_go_to_safetensors_and_back_byte_for_byte(tmp_path: Path) -> None:
    numpy = pytest.importorskip("numpy")
    built = tmp_path / "m.neff"
    b = neff.Builder()
    with b.subgraph("sg00") as sg:
        sg.input("x", "float32", (4,)).output("y", "float32", (4,))
        sg.weight("w", numpy.arange(8, dtype="float32"))
    b.write(built)
    assert neff.export_weights(built, tmp_path / "w.safetensors") == 1
    out = neff.import_weights(built, tmp_path / "w.safetensors", tmp_path / "same.neff")
    assert out.report.accepted and (tmp_path / "same.neff").read_bytes() == built.read_bytes()
    with pytest.raises(neff.NeffError, match="not a safetensors file"):
        neff.import_weights(built, built, tmp_path / "x.neff")


def test_shrink_takes_a_python_predicate_and_raises_what_it_raises(tmp_path: Path) -> None:
    built = tmp_path / "m.neff"
    b = neff.Builder(target="cayman")
    b.subgraph("sg00").input("x", "float32", (4,)).output("y", "float32", (4,))
    b.write(built)
    calls: List[str] = []

    def refused_on_sunda(path: str) -> bool:
        calls.append(path)
        return neff.verify(path, "sunda").gate == "G17"

    size = neff.shrink(built, tmp_path / "small.neff", refused_on_sunda)
    assert size == (tmp_path / "small.neff").stat().st_size and len(calls) > 1
    assert neff.verify(tmp_path / "small.neff", "sunda").gate == "G17"

    def broken(path: str) -> bool:
        raise RuntimeError("the predicate broke")

    with pytest.raises(RuntimeError, match="the predicate broke"):
        neff.shrink(built, tmp_path / "x.neff", broken)


def test_cache_scan_and_verify_read_a_libneuronxla_cache(tmp_path: Path) -> None:
    built = tmp_path / "m.neff"
    b = neff.Builder(target="cayman")
    b.subgraph("sg00").input("x", "float32", (4,)).output("y", "float32", (4,))
    b.write(built)
    version = tmp_path / "cache" / "neuronxcc-2.21.0+abc"
    (version / "MODULE_1+a").mkdir(parents=True)
    (version / "MODULE_1+a" / "model.neff").write_bytes(built.read_bytes())
    (version / "MODULE_1+a" / "model.done").write_bytes(b"")
    (version / "MODULE_2+a").mkdir()
    (version / "MODULE_2+a" / "model.log").write_text("error")
    entries = list(neff.cache.scan(tmp_path / "cache"))
    assert [(e["module"], e["state"]) for e in entries] == [("1", "ok"), ("2", "failed")]
    assert entries[0]["compiler"] == "2.21.0+abc" and entries[0]["graphs"] == 1
    on_sunda = neff.cache.verify(tmp_path / "cache", "sunda")
    assert on_sunda[0]["state"] == "refused" and "G17" in on_sunda[0]["refusal"]
