"""The docstring examples of the package run as written (doctest)."""

import doctest
import importlib

import pytest

MODULES = ["exmy", "exmy._gemm", "exmy._fuzz", "exmy._names"]


@pytest.mark.parametrize("name", MODULES + ["exmy.strategies"])
def test_docstring_examples(name):
    if name == "exmy.strategies":
        pytest.importorskip("hypothesis")
    if name == "exmy":
        pytest.importorskip("ml_dtypes")  # cast's out="ml_dtypes" example
    m = importlib.import_module(name)
    r = doctest.testmod(m, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert r.failed == 0, f"{r.failed} of {r.attempted} examples failed"
    if name != "exmy._names":
        assert r.attempted > 0
