"""Every example in the package's docstrings runs, as doctest runs it: each
docstring in a fresh folder holding the files the examples name (``m.neff``
and ``model.neff``, a model built here; ``a.neff`` and ``b.neff``, two that
differ in name; ``tree/``, its unpacked members; ``cache/``; ``bias.bin``;
``lib.so``; ``empty_dir/``), with ``neff``, ``numpy``, a ``builder`` and a
``b`` (``neff.Builder``s of one graph, ready to write) and a subgraph ``sg``
of a third in scope. No
example is skipped, and none needs the real NEFFs."""

from __future__ import annotations

import doctest
import importlib
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

import neff

MODULES = ["neff", "neff._reader", "neff._report", "neff._builder", "neff._errors", "neff.cache"]


def model(path: Path, name: str = "m") -> None:
    """The model the examples read: one graph, an input, an output, a weight
    ``w``, a DMA queue and a PE program."""
    numpy = pytest.importorskip("numpy")
    b = neff.Builder(name=name, target="cayman")
    with b.subgraph("sg00") as sg:
        sg.input("x", "float32", (4, 4)).output("y", "float32", (4, 4))
        sg.weight("w", numpy.ones((4, 4), "float32"))
        sg.dma_queue("q_in", "pool", "in", semaphore=10)
        sg.engine("pe", instr=bytes(64))
    b.write(path, fsync=False)


def folder(root: Path) -> None:
    """The files the examples name, in ``root``."""
    model(root / "m.neff")
    (root / "model.neff").write_bytes((root / "m.neff").read_bytes())
    (root / "a.neff").write_bytes((root / "m.neff").read_bytes())
    model(root / "b.neff", name="other")
    neff.unpack(root / "m.neff", root / "tree", fsync=False)
    (root / "cache").mkdir()
    (root / "cache" / "x.neff").write_bytes((root / "m.neff").read_bytes())
    (root / "bias.bin").write_bytes(bytes(16))
    (root / "lib.so").write_bytes(b"\x7fELF" + bytes(60))
    (root / "empty_dir").mkdir()


def small() -> neff.Builder:
    """A model ready to write: one graph with an input and an output."""
    b = neff.Builder()
    b.subgraph("sg00").input("x", "float32", (4,)).output("y", "float32", (4,))
    return b


def scope() -> Dict[str, Any]:
    numpy = pytest.importorskip("numpy")
    return {"neff": neff, "numpy": numpy, "os": os, "builder": small(), "b": small(),
            "sg": neff.Builder().subgraph("sg00")}


def docstring_tests() -> List[doctest.DocTest]:
    finder = doctest.DocTestFinder()
    tests: List[doctest.DocTest] = []
    for name in MODULES:
        tests.extend(t for t in finder.find(importlib.import_module(name), name) if t.examples)
    return tests


def test_every_docstring_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tests = docstring_tests()
    skipped = [f"{t.name}: {e.source.strip()}" for t in tests for e in t.examples
               if e.options.get(doctest.SKIP)]
    assert not skipped, "examples skipped:\n" + "\n".join(skipped)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for i, test in enumerate(tests):
        root = tmp_path / str(i)
        root.mkdir()
        folder(root)
        monkeypatch.chdir(root)
        test.globs = scope()
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted >= 80 and failed == 0, f"{failed} of {attempted} examples failed (above)"
