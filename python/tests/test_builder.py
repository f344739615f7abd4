"""neff.Builder: NEFFs described in Python, read back with tarfile, numpy and the CLI."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest

import neff
from conftest import cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
HEADER_SIZE = 1024


@pytest.fixture(scope="session")
def neff_bin() -> Path:
    """The CLI (found as conftest finds it), built by cargo when missing."""
    binary = cli()
    if binary is None:
        subprocess.run(["cargo", "build", "--bin", "neff"], cwd=REPO, check=True)
        binary = cli()
    assert binary is not None, "cargo build --bin neff gave no binary"
    return binary


def run(neff_bin: Path, *args: object) -> "subprocess.CompletedProcess[bytes]":
    return subprocess.run([str(neff_bin), *map(str, args)], capture_output=True)


def members(path: Path) -> Dict[str, bytes]:
    """Every file member, read with Python's tarfile after the 1024-byte header."""
    payload = io.BytesIO(path.read_bytes()[HEADER_SIZE:])
    with tarfile.open(fileobj=payload, mode="r:*") as tar:
        out = {}
        for info in tar:
            f = tar.extractfile(info)
            if f is not None:
                out[info.name.removeprefix("./")] = f.read()
        return out


def small_model(b: neff.Builder) -> neff.Subgraph:
    sg = b.subgraph("sg00")
    sg.input("x", "float32", (4,)).output("y", "float32", (4,))
    return sg


ARRAYS: Dict[str, "np.ndarray[Any, Any]"] = {
    "w_f32": np.arange(16, dtype=np.float32).reshape(4, 4) / 3,
    "w_i8": np.arange(-15, 15, dtype=np.int8).reshape(2, 3, 5),
    "w_f16": np.linspace(-1, 1, 7).astype(np.float16),
    "w_u16_be": np.arange(6, dtype=">u2").reshape(3, 2),
    "w_i64": np.array([[1], [-2], [2**40]], dtype=np.int64),
}


def test_numpy_weights_round_trip_byte_exactly(tmp_path: Path, neff_bin: Path) -> None:
    b = neff.Builder(name="weights")
    sg = small_model(b)
    for name, array in ARRAYS.items():
        sg.weight(name, array)
    out = tmp_path / "m.neff"
    outcome = b.write(out)
    assert outcome.accepted and outcome.report.gate is None
    assert isinstance(outcome.header, neff.Header) and isinstance(outcome.report, neff.Report)
    assert outcome.header.name == "weights"
    assert out.stat().st_size == HEADER_SIZE + outcome.header.data_size

    found = members(out)
    definition = json.loads(found["sg00/def.json"])
    for name, array in ARRAYS.items():
        data = found[f"sg00/{name}.npy"]
        back: np.ndarray[Any, Any] = np.load(io.BytesIO(data))
        assert back.dtype == array.dtype and back.shape == array.shape
        assert back.tobytes() == array.tobytes()
        cat = run(neff_bin, "cat", out, f"sg00/{name}.npy")
        assert cat.returncode == 0 and cat.stdout == data
        var = definition["var"][name]
        assert (var["type"], var["file_name"], var["shape"]) == ("file", f"{name}.npy", list(array.shape))
    assert definition["var"]["w_f32"]["dtype"] == "float32"
    assert definition["var"]["w_i8"]["dtype"] == "int8"

    verify = run(neff_bin, "verify", out)
    assert verify.returncode == 0, verify.stderr.decode()


def test_to_bytes_equals_the_written_file(tmp_path: Path) -> None:
    b = neff.Builder(name="m", target="cayman")
    sg = small_model(b).evtaccel()
    sg.weight("w", np.ones((2, 2), dtype=np.float32))
    sg.engine("pe", instr=bytes(64))
    out = tmp_path / "m.neff"
    b.write(out)
    assert b.to_bytes() == out.read_bytes()
    assert b.to_bytes(threads=1) == out.read_bytes()


def test_write_deflates_with_libdeflate_at_level_one_and_the_same_bytes_at_any_thread_count(tmp_path: Path) -> None:
    b = neff.Builder(name="m", target="cayman")
    sg = small_model(b).evtaccel()
    # Weight-like values over several 256 KiB chunks.
    values = np.random.default_rng(5).normal(0, 0.02, (512, 1024)).astype(np.float32)
    sg.weight("w", values)
    sg.engine("pe", instr=bytes(64))
    out = tmp_path / "m.neff"
    b.write(out)
    assert b.to_bytes(threads=1) == out.read_bytes() == b.to_bytes(threads=2)
    header = tmp_path / "header.json"
    neff.unpack(out, tmp_path / "tree", header_out=header, prove_deflate=True)
    deflate = json.loads(header.read_text())["framing"]["gzip"]["deflate"]
    assert (deflate["engine"], deflate["level"]) == ("parallel-libdeflate", 1)


def allreduce_in_python(asm: Path) -> neff.Builder:
    """examples/allreduce.json, described in Python."""
    b = neff.Builder(name="allreduce", target="*", kelf_member="kelf-a.json")
    sg = b.subgraph("sg00", def_name="definition", def_version="0.6-", replica_groups=[[]],
                    extra={"debug_info": {"wavegraph": "wavegraph-bin.json"}, "git_version": ""})
    sg.input("input", "float32", (32,), var_id=0, extra={
        "#transfer-type": "input", "element_size": 4, "internal_shape": [1, 1, 1, 32]})
    sg.output("output", "float32", (32,), var_id=2, extra={
        "#transfer-type": "output", "element_size": 4, "internal_shape": [1, 1, 1, 32],
        "#file-name": "value_nn__output:0-simout.npy"})
    sg.buffer("gradient_in", size=128, var_id=3, extra={"#transfer-type": "tmp-buf"})
    sg.buffer("gradient_out", size=128, var_id=4, extra={"#transfer-type": "tmp-buf"})
    sg.state_buffer("SB", var_id=1)
    sg.dma_queue("q_gradient_in", "pool", "in", semaphore=10)
    sg.dma_queue("q_gradient_out", "pool", "out", semaphore=11)

    def block(queue: str, src: str, dst: str) -> Dict[str, Any]:
        steps: Dict[str, List[int]] = {"sizes": [128, 1], "steps": [1, 128]}
        return {"id": 0, "queue": queue, "desc": [{
            "from": src, "from_sizes": steps["sizes"], "from_steps": steps["steps"],
            "to": dst, "to_sizes": steps["sizes"], "to_steps": steps["steps"]}]}

    sg.engine("pe", instr=(asm / "pe.bin").read_bytes())
    sg.engine("act", extra={"act_info": "act_info.json", "act_semaphore": 9})
    sg.engine("pool", instr=asm / "pool.bin", dma=[
        block("q_gradient_in", "input", "gradient_in"),
        block("q_gradient_out", "gradient_out", "output")])
    for engine in ("act", "dve", "pe", "pool", "sp"):
        b.member(f"sg00/{engine}.asm", asm / f"{engine}.asm")
    return b


def test_allreduce_described_in_python_equals_the_cli_build(tmp_path: Path, neff_bin: Path) -> None:
    cli = tmp_path / "cli.neff"
    built = run(neff_bin, "build", EXAMPLES / "allreduce.json", "-o", cli, "-q")
    assert built.returncode == 0, built.stderr.decode()
    py = tmp_path / "py.neff"
    allreduce_in_python(EXAMPLES / "allreduce" / "sg00").write(py)
    assert py.read_bytes() == cli.read_bytes()


def test_weights_example_from_arrays_equals_the_cli_build(tmp_path: Path, neff_bin: Path) -> None:
    cli = tmp_path / "cli.neff"
    assert run(neff_bin, "build", EXAMPLES / "weights.json", "-o", cli, "-q").returncode == 0
    spec = json.loads((EXAMPLES / "weights.json").read_text())["subgraphs"][0]
    b = neff.Builder(name="weights", target="*")
    sg = b.subgraph("sg00")
    sg.input("x", "float32", (4,)).output("y", "float32", (4,)).buffer("acc", "float32", (4,))
    sg.weight("w1", np.load(EXAMPLES / "weights" / "w1.npy"))
    sg.weight("emb", np.load(EXAMPLES / "weights" / "emb.npy"), file_name="embedding.npy")
    raw = (EXAMPLES / "weights" / "b1.bin").read_bytes()
    sg.weight("b1", bytearray(raw), "float32", (4,))
    sg.dma_queue("q_in", "pool", "in", semaphore=10).dma_queue("q_out", "pool", "out", semaphore=11)
    sg.engine("pool", dma=spec["engines"]["pool"]["dma"])
    py = tmp_path / "py.neff"
    b.write(py)
    diff = run(neff_bin, "diff", "--ignore", "uuid", cli, py)
    assert diff.returncode == 0, diff.stdout.decode()


def test_a_model_without_outputs_raises_rejected_and_writes_nothing(tmp_path: Path) -> None:
    b = neff.Builder(name="m")
    b.subgraph("sg00").input("x", "float32", (4,))
    out = tmp_path / "m.neff"
    with pytest.raises(neff.Rejected) as caught:
        b.write(out)
    e = caught.value
    assert (e.gate, e.status, e.status_name) == ("G20b", 2, "NRT_INVALID")
    assert e.message is not None and "no Outputs" in e.message
    assert isinstance(e, neff.NeffError) and e.report is not None
    assert e.report["accepted"] is False
    assert not out.exists() and list(tmp_path.iterdir()) == []

    outcome = b.write(out, unchecked=True, keep_refused=True)
    assert out.exists() and not outcome.accepted and outcome.report.gate == "G20b"


def test_a_bad_dtype_or_path_is_a_neff_error_at_the_call_naming_the_key(tmp_path: Path) -> None:
    b = neff.Builder()
    sg = small_model(b)
    with pytest.raises(neff.NeffError) as caught:
        sg.buffer("t", "bf16", (4,))
    assert caught.value.key == "subgraphs[0].tmp_bufs[0].dtype"
    assert 'did you mean "bfloat16"?' in str(caught.value) and not isinstance(caught.value, neff.Rejected)
    with pytest.raises(neff.NeffError) as caught:
        sg.weight("w", str(tmp_path / "missing.npy"))
    assert caught.value.key == "subgraphs[0].weights[0].npy"
    # The unchecked path takes it; the gates judge the output.
    u = neff.Builder(unchecked=True)
    small_model(u).buffer("t", "float33", (4,))
    u.write(tmp_path / "m.neff", unchecked=True, keep_refused=True)
    assert (tmp_path / "m.neff").exists()


def test_bad_arguments_name_their_key() -> None:
    sg = small_model(neff.Builder())
    cases: List[Tuple[Callable[[], object], str]] = [
        (lambda: sg.engine("gpsimd", instr=b""), "subgraphs[0].engines.gpsimd"),
        (lambda: sg.input("z", "float32", (2, -1)), "subgraphs[0].inputs[1].shape[1]"),
        (lambda: sg.buffer("t", size="8"), "subgraphs[0].tmp_bufs[0].size"),  # type: ignore[arg-type]
        (lambda: sg.state_buffer("s", var_id=-1), "subgraphs[0].state_buffers[0].var_id"),
        (lambda: sg.weight("w", 3.5), "subgraphs[0].weights[0].raw"),
        (lambda: sg.weight("w", b"", format="csv"), "subgraphs[0].weights[0].format"),
    ]
    for call, key in cases:
        with pytest.raises(neff.NeffError) as caught:
            call()
        assert caught.value.key == key, caught.value


def test_a_non_contiguous_array_is_refused() -> None:
    sg = small_model(neff.Builder())
    array = np.zeros((4, 4), dtype=np.float32)[:, ::2]
    with pytest.raises(neff.NeffError, match="not C-contiguous") as caught:
        sg.weight("w", array)
    assert caught.value.key == "subgraphs[0].weights[0]"
    with pytest.raises(neff.NeffError, match="not C-contiguous"):
        sg.weight("w", memoryview(bytearray(8))[::2])


def test_weights_from_paths(tmp_path: Path) -> None:
    array = np.arange(12, dtype=np.int32).reshape(3, 4)
    npy = tmp_path / "w.npy"
    np.save(npy, array)
    raw = tmp_path / "b.bin"
    raw.write_bytes(np.arange(4, dtype=np.float32).tobytes())
    b = neff.Builder()
    sg = small_model(b)
    sg.weight("w", npy).weight("b", str(raw), "float32", (4,))
    out = tmp_path / "m.neff"
    assert b.write(out).accepted
    found = members(out)
    assert found["sg00/w.npy"] == npy.read_bytes()
    assert found["sg00/b.bin"] == raw.read_bytes()
    var = json.loads(found["sg00/def.json"])["var"]
    assert (var["w"]["dtype"], var["w"]["shape"]) == ("int32", [3, 4])


def test_raw_buffers_must_fit_their_dtype_and_shape(tmp_path: Path) -> None:
    b = neff.Builder()
    small_model(b).weight("b", b"\0" * 12, "float32", (4,))
    with pytest.raises(neff.NeffError) as caught:
        b.write(tmp_path / "m.neff")
    assert caught.value.kind == "Invalid"
    assert "is 16 bytes but the file has 12" in str(caught.value)


def test_buffers_are_released_after_the_write(tmp_path: Path) -> None:
    data = bytearray(np.ones(4, dtype=np.float32).tobytes())
    b = neff.Builder()
    small_model(b).weight("b", data, "float32", (4,))
    b.write(tmp_path / "m.neff")
    data.extend(b"more")  # a buffer still exported would raise BufferError
    with pytest.raises(neff.NeffError):
        b.write(tmp_path / "m.neff")  # now 20 bytes: refused, and released again
    data.extend(b"x")


def test_an_unwritable_path_is_an_os_error(tmp_path: Path) -> None:
    b = neff.Builder()
    small_model(b)
    with pytest.raises(OSError):
        b.write(tmp_path / "missing" / "m.neff")


def test_the_gil_is_released_while_writing(tmp_path: Path) -> None:
    array = np.random.default_rng(0).integers(0, 255, size=24 << 20, dtype=np.uint8)
    b = neff.Builder(level=9)
    small_model(b).weight("w", array)
    window: List[float] = []

    def write() -> None:
        window.append(time.monotonic())
        b.write(tmp_path / "m.neff", threads=1)
        window.append(time.monotonic())

    writer = threading.Thread(target=write)
    ticks: List[float] = []
    writer.start()
    while writer.is_alive():
        ticks.append(time.monotonic())
        time.sleep(0.001)
    writer.join()
    start, end = window
    inside = [t for t in ticks if start < t < end]
    # Held for the whole write, the main thread could not run inside it.
    assert inside and inside[-1] - inside[0] > (end - start) / 2, (len(inside), end - start)


PEAK_SCRIPT = """
import resource, sys
import numpy as np
import neff
array = np.ones(128 << 20, dtype=np.uint8)
array[::4096] = 7
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
b = neff.Builder()
b.subgraph("sg00").input("x", "float32", (4,)).output("y", "float32", (4,)).weight("w", array)
assert b.write(sys.argv[1], threads=2).accepted
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def test_an_array_weight_is_written_without_a_copy(tmp_path: Path) -> None:
    """A 128 MiB array adds far less than its size to the peak RSS (a child process's getrusage)."""
    child = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(tmp_path / "m.neff")],
                           capture_output=True, text=True, check=True)
    grown_kib = int(child.stdout.split()[-1])
    assert grown_kib < 48 << 10, f"peak RSS grew by {grown_kib} KiB writing a 128 MiB array"
    assert (tmp_path / "m.neff").stat().st_size > 1024


def test_ucode_libraries_and_members_equal_the_cli_build(tmp_path: Path, neff_bin: Path) -> None:
    spec = json.loads((EXAMPLES / "cayman-ucode.json").read_text())
    cli = tmp_path / "cli.neff"
    assert run(neff_bin, "build", EXAMPLES / "cayman-ucode.json", "-o", cli, "-q").returncode == 0
    lib = spec["subgraphs"][0]["ucode_libs"][0]
    b = neff.Builder(name="cayman-ucode", target="cayman")
    with b.subgraph("sg00", evtaccel=True) as sg:
        sg.input("scores", "float32", (128, 64))
        sg.output("top_values", "float32", (128, 8)).output("top_indices", "uint32", (128, 8))
        sg.ucode_lib("libcustom_topk.so", base64.b64decode(lib["data"]["base64"]), "1.21.1.0",
                     ulib_to_isa_version="1.0", total_cpus=1,
                     functions=["custom_topk", {"name": "custom_sort"}])
    b.member("hlo_stats.json", spec["members"]["hlo_stats.json"]["text"].encode())
    py = tmp_path / "py.neff"
    outcome = b.write(py)
    assert outcome.header.feature_bits & 0x4  # custom_ops
    assert py.read_bytes() == cli.read_bytes()


def test_packaging_options_reach_the_header(tmp_path: Path) -> None:
    uuid = "01234567-89ab-cdef-0123-456789abcdef"
    b = neff.Builder(name="opts", target="cayman", pkg_version=1, uuid=uuid,
                     features=["collective_has_offset"])
    for name in ("sg00", "sg01"):
        b.subgraph(name).input("x", "bfloat16", (2, 64)).output("y", "bfloat16", (2, 64))
    header = b.write(tmp_path / "m.neff").header
    assert (header.pkg_version, str(header.uuid), header.vnc_size) == (1, uuid, 2)
    assert header.feature_bits & 0x402 == 0x402  # collective_has_offset, neff_feature_vnc
    with pytest.raises(neff.NeffError) as caught:
        neff.Builder(framing="tar").write(tmp_path / "x.neff")
    assert caught.value.key == "framing" and "not a framing preset" in str(caught.value)


def test_raw_members_replace_or_drop_generated_ones(tmp_path: Path) -> None:
    b = neff.Builder()
    small_model(b)
    b.raw_member("sg00/pe.bin", b"\x01" * 64)
    out = tmp_path / "m.neff"
    assert b.write(out).accepted and members(out)["sg00/pe.bin"] == b"\x01" * 64
    b.raw_member("sg00/def.json", None)
    with pytest.raises(neff.Rejected):
        b.write(out)
    assert not b.write(out, unchecked=True, keep_refused=True).accepted
    assert "sg00/def.json" not in members(out)


def test_numpy_is_not_imported_without_arrays(tmp_path: Path) -> None:
    script = (
        "import sys, neff\n"
        "b = neff.Builder()\n"
        "b.subgraph('sg00').input('x', 'float32', (4,)).output('y', 'float32', (4,))"
        ".weight('w', bytearray(16), 'float32', (4,))\n"
        "assert b.write(sys.argv[1]).accepted\n"
        "print('numpy' in sys.modules)\n"
    )
    child = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m.neff")],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == "False"


@pytest.mark.parametrize("make, words", [
    (lambda np: np.array([object(), object()], dtype=object), "object array"),
    (lambda np: np.zeros(3, dtype=[("a", "<f4"), ("b", "<i8")]), "structured"),
    (lambda np: np.array(["ab", "cd"]), "unicode"),
    (lambda np: np.array([b"ab"]), "byte string"),
    (lambda np: np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime"),
    (lambda np: np.zeros(2, dtype=np.complex64), "complex"),
])
def test_weights_of_dtypes_the_runtime_does_not_know_are_refused(make: Any, words: str) -> None:
    b = neff.Builder()
    sg = small_model(b)
    with pytest.raises(neff.NeffError) as caught:
        sg.weight("w", make(np))
    assert words in str(caught.value) and caught.value.key is not None
    assert "dtype" in caught.value.key


def test_a_value_that_contains_itself_is_an_error_not_a_crash() -> None:
    sg = small_model(neff.Builder())
    looped: Dict[str, Any] = {}
    looped["a"] = looped
    with pytest.raises(neff.NeffError, match="contains itself") as caught:
        sg.key("debug_info", looped)
    assert caught.value.key is not None and caught.value.key.startswith("subgraphs[0].extra.debug_info")


def test_a_barrier_config_is_attached_and_a_bad_one_refused_at_the_call(tmp_path: Path) -> None:
    b = neff.Builder(barrier_config={"execute_device_barrier": "0x1"})
    b.subgraph("sg00").input("x", "float32", (4,)).output("y", "float32", (4,))
    out = tmp_path / "m.neff"
    b.write(out)
    assert b"execute_device_barrier" in neff.open(out)["barrier_config.json"]
    with pytest.raises(neff.NeffError) as caught:
        neff.Builder().barrier_config({"execute_device_barrier": "0x7"})
    assert caught.value.key == "barrier_config.execute_device_barrier"
