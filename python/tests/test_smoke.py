import neff


def test_version_names_the_runtime() -> None:
    assert neff.__version__
    assert "2.31" in neff.RUNTIME_VERSION
