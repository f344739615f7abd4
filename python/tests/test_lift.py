"""neff.lift: a real NEFF as the typed model, written back byte for byte, and edited."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pytest

import neff
from conftest import real_neff, real_neffs


@pytest.mark.parametrize("path", real_neffs())
def test_lift_writes_back_the_same_bytes(path: Path, tmp_path: Path) -> None:
    builder = neff.lift(path, tmp_path / "tree")
    out = tmp_path / "same.neff"
    outcome = builder.write(out, fsync=False)
    assert outcome.accepted and outcome.payload_matches_source is True
    assert out.read_bytes() == path.read_bytes()
    # Proving the whole deflate stream gives the same model (a real stream is
    # under the default prefix: proven whole either way).
    assert neff.lift(path, tmp_path / "again", prove_deflate=True).spec()["framing"] == builder.spec()["framing"]


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
    assert outcome.accepted and outcome.payload_matches_source is False
    original, edited = neff.open(path), neff.open(out)
    assert edited.header.uuid != original.header.uuid
    assert b"edited_in_python" in edited.read(pe)
    report = neff.diff(path, out)
    assert [m["name"] for m in report.members["changed"]] == [pe]


def test_payload_names_a_missing_member() -> None:
    with pytest.raises(neff.NeffError, match="no member"):
        neff.Builder().payload("sg00/def.json")


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_replace_weight_takes_an_array_and_the_size_follows(path: Path, tmp_path: Path) -> None:
    numpy = pytest.importorskip("numpy")
    builder = neff.lift(path, tmp_path / "tree")
    var = "identity_82_sg0000"
    builder.replace_weight(var, numpy.full((2, 128, 256), 3, "float16"), graph="sg00", retype=True)
    assert builder.payload("sg00/def.json")["def_json"]["var"][var]["size"] == 2 * 128 * 256 * 2
    out = tmp_path / "edited.neff"
    assert builder.write(out, fsync=False).accepted
    data = neff.open(out).read("sg00/value_sg0000_identity_82_CRSM.npy")
    assert data is not None and b"(2, 128, 256)" in data[:128]
    with pytest.raises(neff.NeffError, match="no file var"):
        builder.replace_weight("x", numpy.zeros(4, "float16"))
    with pytest.raises(neff.NeffError, match="promises"):
        short = tmp_path / "short.npy"
        numpy.save(short, numpy.zeros(8, "float16"))
        short.write_bytes(short.read_bytes()[:-4])
        builder.replace_weight(var, short, graph="sg00")


def test_feature_names_and_the_two_unchecked_flags_mean_the_same_everywhere(
    tmp_path: Path,
) -> None:
    b = neff.Builder(features=["vnc", "NEFF_FEATURE_CUSTOM_OPS"])
    with b.subgraph("sg00") as sg:
        sg.input("x", "float32", (4,)).output("y", "float32", (4,))
    out = tmp_path / "m.neff"
    assert b.write(out, fsync=False).accepted
    header = neff.open(out).header
    assert header is not None and header.feature_bits & 0x404 == 0x404
    b.raw_member("sg00/def.json", None)
    with pytest.raises(neff.Rejected):
        b.write(tmp_path / "refused.neff", unchecked=True)
    assert not (tmp_path / "refused.neff").exists()
    assert not b.write(tmp_path / "refused.neff", keep_refused=True).accepted


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_a_header_refused_neff_lifts_with_keep_refused(path: Path, tmp_path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0x220 + 5] |= 0x01  # a feature bit no runtime knows: G5
    refused = tmp_path / "refused.neff"
    refused.write_bytes(bytes(data))
    with pytest.raises(neff.Rejected):
        neff.lift(refused, tmp_path / "no")
    builder = neff.lift(refused, tmp_path / "tree", keep_refused=True)
    assert builder.refusal is not None and builder.refusal["gate"] == "G5"
    out = tmp_path / "out.neff"
    with pytest.raises(neff.Rejected):
        builder.write(out, fsync=False)
    assert not builder.write(out, keep_refused=True, fsync=False).accepted
    assert out.read_bytes() == bytes(data)
    assert neff.lift(path, tmp_path / "fine").refusal is None


@pytest.mark.parametrize("path", real_neff("matmul_small"))
def test_members_of_a_lifted_model_are_added_and_removed(path: Path, tmp_path: Path) -> None:
    builder = neff.lift(path, tmp_path / "tree")
    builder.member("notes/readme.txt", b"edited\n").raw_member("hlo_stats.json", None)
    out = tmp_path / "edited.neff"
    assert builder.write(out, fsync=False).accepted
    report = neff.diff(path, out)
    def names(entries: Any) -> List[str]:
        return [m["name"] if isinstance(m, dict) else m for m in entries]

    assert names(report.members["added"]) == ["notes/readme.txt"]
    assert names(report.members["removed"]) == ["hlo_stats.json"]
    edited = neff.open(out)
    assert edited.read("notes/readme.txt") == b"edited\n"
    with pytest.raises(KeyError):
        edited.read("hlo_stats.json")


def test_the_compiler_preset_writes_the_compilers_content(tmp_path: Path) -> None:
    b = neff.Builder(framing="neuronx-cc", target="cayman")
    with b.subgraph("sg00", evtaccel=True) as sg:
        sg.input("x", "float16", (4,)).output("y", "float16", (4,))
        sg.dma_queue("qDyn", "pool", "dynamic", num_queues=1, semaphore_set=[3],
                     fabric_path="main")
    out = tmp_path / "m.neff"
    assert b.write(out, fsync=False).accepted
    n = neff.open(out)
    assert {"sg00/PE.json", "sg00/Activation.bin", "sg00/SP.json"} <= {m.key for m in n.members()}
    definition = n.read("sg00/def.json")
    assert b'"name": "definition"' in definition and b'"SB"' in definition
    assert b'"fabric_path": "main"' in definition and b'"dtype"' not in definition


def test_replace_weight_refuses_an_ambiguous_name_and_a_new_dtype_unless_asked(tmp_path: Path) -> None:
    numpy = pytest.importorskip("numpy")
    b = neff.Builder()
    for name in ("sg00", "sg01"):
        with b.subgraph(name) as sg:
            sg.input("x", "float32", (4,)).output("y", "float32", (4,))
            sg.weight("w", numpy.zeros(4, "float32"))
    b.write(tmp_path / "m.neff")
    lifted = neff.lift(tmp_path / "m.neff", tmp_path / "tree")
    with pytest.raises(neff.NeffError) as caught:
        lifted.replace_weight("w", numpy.ones(4, "float32"))
    assert "sg00/def.json, sg01/def.json" in str(caught.value)
    before = (tmp_path / "tree" / "sg00" / "w.npy").read_bytes()
    lifted.replace_weight("w", numpy.ones(4, "float32"), graph="sg01")
    assert (tmp_path / "tree" / "sg00" / "w.npy").read_bytes() == before
    assert numpy.load(tmp_path / "tree" / "sg01" / "w.npy").tolist() == [1.0] * 4
    with pytest.raises(neff.NeffError) as caught:
        lifted.replace_weight("w", numpy.ones(4, "float16"), all_graphs=True)
    assert "retype" in str(caught.value)
    assert numpy.load(tmp_path / "tree" / "sg00" / "w.npy").dtype == numpy.float32
    assert not [p for p in (tmp_path / "tree" / "sg00").iterdir() if "neff-tmp" in p.name]
    lifted.replace_weight("w", numpy.full(2, 2, "float16"), all_graphs=True, retype=True)
    out = lifted.write(tmp_path / "edited.neff")
    assert out.report.accepted
    n = neff.open(tmp_path / "edited.neff")
    assert [w.dtype for g in n.graphs for w in g.weights] == ["float16", "float16"]
