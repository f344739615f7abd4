import subprocess
import sys
from pathlib import Path

import pytest

import neff


def test_version_names_the_runtime() -> None:
    assert neff.__version__
    assert "2.31" in neff.RUNTIME_VERSION


def test_every_exported_name_resolves_and_is_listed() -> None:
    for name in neff.__all__:
        assert getattr(neff, name) is not None, name
    assert set(neff.__all__) <= set(dir(neff))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(neff, "nope")


def test_verifying_imports_only_the_verdict_module(tmp_path: Path) -> None:
    # `import neff` and `verify_many` load neither the reader's nor the builder's
    # module: a verifying script pays only for the report (PEP 562 loads the rest).
    path = tmp_path / "m.neff"
    b = neff.Builder()
    b.subgraph("sg00").input("x", "float32", (4,)).output("y", "float32", (4,))
    b.write(path)
    script = (
        "import sys, neff\n"
        f"assert neff.verify_many([{str(path)!r}])[0].accepted\n"
        "print(sorted(m for m in ('neff._reader', 'neff._builder') if m in sys.modules))\n"
        "neff.Header\n"
        "print(sorted(m for m in ('neff._reader', 'neff._builder') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == ["[]", "['neff._reader']"]


def test_a_report_is_a_whole_frozen_dataclass(tmp_path: Path) -> None:
    # `Report._from` fills the instance's `__dict__` directly: every field must be
    # set, equal to what the dataclass's own constructor gives, and still frozen.
    import dataclasses

    path = tmp_path / "m.neff"
    b = neff.Builder()
    b.subgraph("sg00").input("x", "float32", (4,)).output("y", "float32", (4,))
    b.write(path)
    report = neff.verify(path)
    names = [f.name for f in dataclasses.fields(neff.Report)]
    assert list(vars(report)) == names
    assert report.per_arch and all(list(vars(r)) == names for r in report.per_arch.values())
    rebuilt = neff.Report(**{name: getattr(report, name) for name in names})
    assert rebuilt == report and repr(rebuilt) == repr(report)
    assert neff.verify_many([path]) == [report]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.accepted = False  # type: ignore[misc]
