"""pytest plugin (registered as ``exmy`` through the pytest11 entry point): a fixture that
checks a kernel's output against exmy in one line.

    def test_my_fp8_cast(exmy_check):
        x = torch.randn(4096)
        exmy_check.cast(x, my_kernel(x), "e4m3fn", overflow="satfinite")

    def test_my_fp8_cast_fuzzed(exmy_check):
        exmy_check.fuzz(lambda x: my_kernel(torch.from_numpy(x)), "float8_e4m3fn")
"""

import pytest

import exmy


class ExmyCheck:
    """What the ``exmy_check`` fixture gives a test."""

    def cast(self, x, got, fmt, round="rne", overflow="none", seed=0):
        exmy.assert_cast_equal(x, got, fmt, round=round, overflow=overflow, seed=seed)

    def golden(self, corpus, results, suite="all", allow_missing=False, max_reported=10):
        """Fails with the cases whose results differ first (they are wrong bits), then the
        cases without results (not run), at most ``max_reported`` of each."""
        r = exmy.golden_check(corpus, results, suite=suite, allow_missing=allow_missing)
        if not r["ok"]:
            wrong = [c for c in r["cases"] if c["mismatches"]]
            missing = [c for c in r["cases"] if c["missing"] and not c["mismatches"]]
            lines = [f"{r['mismatches']} mismatches in {len(wrong)} cases, {r['missing']} "
                     f"cases without results:"]
            if wrong:
                lines.append("mismatches:")
            for c in wrong[:max_reported]:
                lines.append(f"  {c['id']}: {c['mismatches']} of {c['checks']}")
                lines += [f"    {f}" for f in c["first"]]
            if len(wrong) > max_reported:
                lines.append(f"  ... and {len(wrong) - max_reported} more cases with mismatches")
            if missing and not allow_missing:
                lines.append("missing:")
                lines += [f"  {c['id']}" for c in missing[:max_reported]]
                if len(missing) > max_reported:
                    lines.append(f"  ... and {len(missing) - max_reported} more")
            raise AssertionError("\n".join(lines))

    def fuzz(self, fn, format, round="rne", overflow="none", seed=0, max_examples=1 << 16):
        """exmy.fuzz(fn, ...) raising its minimal counterexample (FuzzFailure)."""
        return exmy.fuzz(fn, format=format, round=round, overflow=overflow, seed=seed,
                         max_examples=max_examples, raise_on_failure=True)


@pytest.fixture
def exmy_check():
    return ExmyCheck()
