"""pytest plugin (registered as ``exmy`` through the pytest11 entry point): a fixture that
checks a kernel's output against exmy in one line.

    def test_my_fp8_cast(exmy_check):
        x = torch.randn(4096)
        exmy_check.cast(x, my_kernel(x), "e4m3fn", overflow="satfinite")
"""

import pytest

import exmy


class ExmyCheck:
    """What the ``exmy_check`` fixture gives a test."""

    def cast(self, x, got, fmt, round="rne", overflow="none", seed=0):
        exmy.assert_cast_equal(x, got, fmt, round=round, overflow=overflow, seed=seed)

    def golden(self, corpus, results, suite="all", allow_missing=False):
        r = exmy.golden_check(corpus, results, suite=suite, allow_missing=allow_missing)
        if not r["ok"]:
            bad = [c for c in r["cases"] if c["mismatches"] or c["missing"]]
            lines = [f"{r['mismatches']} mismatches, {r['missing']} cases without results:"]
            for c in bad[:10]:
                lines.append(f"  {c['id']}: {c['mismatches']} of {c['checks']}")
                lines += [f"    {f}" for f in c["first"]]
            raise AssertionError("\n".join(lines))


@pytest.fixture
def exmy_check():
    return ExmyCheck()
