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


def test_the_python_tutorial_runs_as_written():
    """docs/python.md: every ```python block, run as a doctest in one namespace, in order."""
    pytest.importorskip("ml_dtypes")
    pytest.importorskip("hypothesis")
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "python.md"
    if not doc.is_file():
        pytest.skip("docs/python.md not beside this checkout")
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)
    assert len(blocks) >= 6
    text = "\n".join(blocks)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, "docs/python.md", str(doc), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test)
    r = runner.summarize(verbose=False)
    assert r.failed == 0 and r.attempted > 20, r
