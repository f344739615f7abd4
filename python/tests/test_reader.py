"""neff.open / Neff against every real NEFF, checked by an independent reader
and by the CLI."""

from __future__ import annotations

import hashlib
import os
import json
import uuid
import shutil
from pathlib import Path

import pytest

import neff
from conftest import REAL_NEFFS, read_independently, real_neffs, run_cli


def word_reversed(digest: bytes) -> bytes:
    """Each 4-byte word byte-reversed (neuronx-cc 2.18+'s layout)."""
    return b"".join(digest[i:i + 4][::-1] for i in range(0, len(digest), 4))


@pytest.mark.parametrize("path", real_neffs())
def test_header_fields_match_struct(path: Path) -> None:
    ind = read_independently(path)
    h = neff.open(path).header
    assert h is not None
    for name in ("pkg_version", "header_size", "data_size", "neff_version_major", "neff_version_minor",
                 "build_version", "unused_0", "name", "requested_tpb_count", "feature_bits", "vnc_size"):
        assert getattr(h, name) == ind.fields[name], name
    assert h.uuid == uuid.UUID(bytes=ind.fields["uuid"])
    assert bytes.fromhex(h.hash) == ind.fields["hash"] and len(h.hash) == 64
    assert bytes.fromhex(h.tpb_per_node) == ind.fields["tpb_per_node"].rstrip(b"\0")
    bits = [n for n in h.feature_names]
    assert (h.feature_bits == 0) == (bits == [])


@pytest.mark.parametrize("path", real_neffs())
def test_payload_md5_is_the_header_hash_in_its_layout(path: Path) -> None:
    ind = read_independently(path)
    h = neff.open(path).header
    assert h is not None and h.pkg_version == 2
    md5 = hashlib.md5(ind.payload).digest()
    stored = ind.fields["hash"][:16]
    layout = {md5: "standard", word_reversed(md5): "word-reversed"}.get(stored)
    assert layout is not None and h.hash_layout == layout
    # The digest a script computes, whatever the layout the producer stored.
    assert h.digest == hashlib.md5(ind.payload).hexdigest() == neff.verify(path).digest


@pytest.mark.parametrize("path", real_neffs())
def test_members_and_their_bytes_match_tarfile(path: Path) -> None:
    ind = read_independently(path)
    n = neff.open(path)
    assert {m.key: m.size for m in n.members()} == ind.sizes
    files = [m for m in n.members() if m.kind == "file"]
    assert {m.key for m in files} == set(ind.members)
    for m in files[:8] + [f for f in files if f.key == "neff.json"]:
        assert n.read(m.key) == ind.members[m.key], m.key


@pytest.mark.parametrize("path", real_neffs())
def test_opened_from_bytes_reads_the_same(path: Path) -> None:
    data = path.read_bytes()
    a, b = neff.open(path), neff.open(data)
    assert a.header == b.header and a.graphs == b.graphs and a.members() == b.members()
    assert b.read("neff.json") == a.read("neff.json")


@pytest.mark.parametrize("path", real_neffs())
def test_graphs_name_their_tensors_weights_queues_and_engines(path: Path) -> None:
    ind = read_independently(path)
    n = neff.open(path)
    assert n.graphs, "every real NEFF has a graph"
    for g in n.graphs:
        assert g.definition in ind.members
        definition = json.loads(ind.members[g.definition])
        assert g.inputs and g.outputs and g.engines
        for t in g.inputs + g.outputs:
            assert t.size > 0 and t.shape is not None
            assert t.dtype or path.name.startswith("ncc1."), "def.json or neff.json types it"
        for w in g.weights:
            assert w.member in ind.members and (w.size is None or w.size > 0)
        assert [q.name for q in g.queues] == list(definition.get("dma_queue") or {})
        for e in g.engines:
            assert e.instr is None or e.instr in ind.members


@pytest.mark.parametrize("path", real_neffs())
def test_verify_accepts_every_real_neff(path: Path) -> None:
    r = neff.open(path).verify()
    assert r.accepted and r.gate is None and r.status_name == "NRT_SUCCESS"
    assert r.targeted_arches and set(r.per_arch) == {"sunda", "cayman", "mariana"}
    assert all(r.per_arch[a].accepted for a in r.targeted_arches)
    assert neff.verify(path) == r


@pytest.mark.parametrize("path", real_neffs())
def test_memory_and_inspect_equal_the_cli(path: Path, neff_cli: Path) -> None:
    n = neff.open(path)
    mem = json.loads(run_cli(neff_cli, "inspect", "--memory", "--json", str(path)).stdout)
    assert n.memory().raw == mem
    assert sum(c.total for c in n.memory().cores) == n.memory().total.total
    assert n.inspect() == json.loads(run_cli(neff_cli, "inspect", "--json", str(path)).stdout)


@pytest.mark.parametrize("path", real_neffs())
def test_verify_equals_the_cli(path: Path, neff_cli: Path) -> None:
    cli = json.loads(run_cli(neff_cli, "verify", "--json", "--instance-arch", "all", str(path)).stdout)
    assert neff.verify(path).raw == cli


def test_profile_knobs_change_the_verdict() -> None:
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    cayman = next(p for p in REAL_NEFFS if neff.open(p).report.target == "cayman")
    refused = neff.verify(cayman, instance_arch="sunda")
    assert not refused.accepted and refused.gate == "G17" and refused.instance_arch == "sunda"
    assert neff.verify(cayman, instance_arch="sunda", allow_legacy_neff=True).gate != "G17"
    h = neff.open(cayman).header
    assert h is not None and h.feature_bits
    assert neff.verify(cayman, supported_features=0).gate == "G5"
    assert neff.verify(cayman, supported_features=list(h.feature_names)).accepted
    assert neff.verify(cayman, supported_features=h.feature_bits).accepted


def test_verify_many_keeps_the_order() -> None:
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    paths = REAL_NEFFS * 2
    reports = neff.verify_many(paths, threads=3)
    assert [r.file for r in reports] == [str(p) for p in paths]
    assert all(r.accepted for r in reports)
    sunda = neff.verify_many(paths, threads=1, instance_arch="sunda")
    assert [r.accepted for r in sunda] == [neff.verify(p, instance_arch="sunda").accepted for p in paths]


def test_verify_many_builds_each_report_as_it_comes_and_stops_at_the_first_failure() -> None:
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    from neff import _native
    paths = [str(p) for p in REAL_NEFFS * 3]
    seen: list[str] = []

    def each(doc: str) -> str:
        seen.append(json.loads(doc)["file"])
        if len(seen) == 2:
            raise RuntimeError("stop here")
        return doc

    with pytest.raises(RuntimeError, match="stop here"):
        _native.verify_many(paths, "all", each, 2)
    assert seen == paths[:2]
    docs = _native.verify_many(paths, "sunda", lambda doc: doc, 2)
    assert [json.loads(d)["file"] for d in docs] == paths


def test_verify_many_takes_folders_and_a_single_path(tmp_path: Path) -> None:
    if not REAL_NEFFS:
        pytest.skip("no real NEFFs")
    (tmp_path / "b").mkdir()
    shutil.copy(REAL_NEFFS[0], tmp_path / "b" / "one.neff")
    shutil.copy(REAL_NEFFS[1], tmp_path / "a.neff")
    (tmp_path / "notes.txt").write_text("not a NEFF")
    expected = [str(tmp_path / "a.neff"), str(tmp_path / "b" / "one.neff")]
    for given in (str(tmp_path), tmp_path, [tmp_path]):
        assert [r.file for r in neff.verify_many(given)] == expected
    assert [r.file for r in neff.verify_many(str(tmp_path / "a.neff"))] == expected[:1]
    assert [r.file for r in neff.verify_many([tmp_path / "b", REAL_NEFFS[0]])] == \
        [expected[1], str(REAL_NEFFS[0])]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(neff.NeffIOError, match="no \\*.neff, \\*.hlo or \\*.neuron file in"):
        neff.verify_many(empty)


def test_diff_finds_equal_and_different() -> None:
    if len(REAL_NEFFS) < 2:
        pytest.skip("needs two real NEFFs")
    a, b = REAL_NEFFS[0], REAL_NEFFS[1]
    assert neff.diff(a, a).equal
    d = neff.diff(a, b)
    assert not d.equal and d.header
    assert "uuid" in {f["field"] for f in d.header}
    assert "uuid" not in {f["field"] for f in neff.diff(a, b, ignore=("uuid",)).header}


READ_PEAK = r"""
import resource, sys
import neff
how = sys.argv[3]
n = neff.open(sys.argv[1]) if how == "read" else None
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if n is not None:
    data = n.read("sg00/big.bin")
else:
    data = neff.read_members(sys.argv[1], ["sg00/big.bin"])["sg00/big.bin"]
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert len(data) == int(sys.argv[2]) and data[:4] == b"\0\0\0\0"
print((after - before) * 1024)
"""


@pytest.mark.parametrize("how", ["read", "read_members"])
def test_read_holds_a_member_once(tmp_path: Path, how: str) -> None:
    """``Neff.read`` and ``neff.read_members`` inflate the member straight into
    the bytes they return: the peak grows by about the member's size, not
    twice it."""
    import subprocess
    import sys

    size = 96 << 20
    tree = tmp_path / "tree"
    (tree / "sg00").mkdir(parents=True)
    b = neff.Builder()
    with b.subgraph("sg00") as sg:
        sg.input("x", "float32", (4,)).output("y", "float32", (4,))
    b.member("sg00/big.bin", bytes(size))
    out = tmp_path / "big.neff"
    assert b.write(out, fsync=False).accepted
    run = subprocess.run([sys.executable, "-c", READ_PEAK, str(out), str(size), how],
                         capture_output=True, text=True, check=True)
    grown = int(run.stdout.strip())
    assert grown < size * 1.4, f"{how}: reading {size} bytes grew the peak by {grown}"


def test_a_replaced_file_is_never_read_under_the_old_header(tmp_path: Path) -> None:
    """A ``Neff`` keeps its file open: replaced by a rename (as compile caches
    and ``neff pack`` do), the file opened is still the one read where the OS
    can name an open file (Linux); elsewhere ``read`` says so instead of
    mixing the two files. Rewritten in place, it is refused everywhere."""
    paths = []
    for name in ("a", "b"):
        b = neff.Builder(name=name)
        with b.subgraph("sg00") as sg:
            sg.input("x", "float32", (4,)).output("y", "float32", (4,))
        b.member("note.txt", name.encode())
        out = tmp_path / f"{name}.neff"
        assert b.write(out, fsync=False).accepted
        paths.append(out)
    target = tmp_path / "model.neff"
    target.write_bytes(paths[0].read_bytes())
    n = neff.open(target)
    assert n.read("note.txt") == b"a"
    tmp = tmp_path / "model.neff.tmp"
    tmp.write_bytes(paths[1].read_bytes())
    tmp.replace(target)
    if os.path.isdir("/proc/self/fd"):
        assert n.read("note.txt") == b"a" and n["note.txt"] == b"a"
    else:
        with pytest.raises(neff.NeffError) as caught:
            n.read("note.txt")
        assert caught.value.kind == "Replaced" and "open it again" in str(caught.value)
    assert neff.open(target).read("note.txt") == b"b"
    # Rewritten in place (same file, other bytes): refused.
    m = neff.open(target)
    with open(target, "r+b") as f:
        f.write(paths[0].read_bytes())
    with pytest.raises(neff.NeffError) as caught:
        m.read("note.txt")
    assert caught.value.kind == "Replaced"
    n.close()
    m.close()


@pytest.mark.parametrize("path", real_neffs())
def test_open_reports_the_verdict_verify_gives(path: Path) -> None:
    opened = neff.open(path).report
    assert opened == neff.verify(path)
    assert opened.targeted_arches and set(opened.targeted_arches) <= set(opened.per_arch)


@pytest.mark.parametrize("how", ["read_member", "read_members"])
def test_a_member_larger_than_the_payload_can_hold_is_refused_before_it_is_made(
        tmp_path: Path, how: str) -> None:
    """A tar header can declare any size. The ``bytes`` a member is read into
    is made only when the payload could inflate to that many bytes (deflate
    expands at most 1032-fold), so a NEFF of a few KiB never makes Python
    reserve the 8 GiB its one header declares."""
    import gzip
    import struct
    import tarfile
    import tracemalloc
    from neff import _native

    b = neff.Builder()
    with b.subgraph("sg00") as sg:
        sg.input("x", "float32", (4,)).output("y", "float32", (4,))
    out = tmp_path / "small.neff"
    assert b.write(out, fsync=False).accepted
    info = tarfile.TarInfo("sg00/huge.bin")
    info.size = (8 << 30) - 1
    payload = gzip.compress(info.tobuf(format=tarfile.USTAR_FORMAT), mtime=0)
    raw = out.read_bytes()
    header = bytearray(raw[:1024])
    struct.pack_into("<Q", header, 0x010, len(payload))
    # The hash in the layout the builder wrote it in.
    plain = hashlib.md5(raw[1024:]).digest() == raw[0x0AC:0x0BC]
    digest = hashlib.md5(payload).digest()
    header[0x0AC:0x0BC] = digest if plain else word_reversed(digest)
    data = bytes(header) + payload
    tracemalloc.start()
    try:
        with pytest.raises(neff.NeffError) as caught:
            if how == "read_member":
                _native.read_member(data, "sg00/huge.bin")
            else:
                neff.read_members(data, ["sg00/huge.bin"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{how}: {peak} bytes reserved for a member that cannot come"
    message = str(caught.value)
    if how == "read_member":
        assert "declares 8589934591 bytes, more than the payload can hold" in message, message
    else:
        # The walk's verdict (the data never comes) is reported first.
        assert "G12" in message and "Truncated tar archive" in message, message
