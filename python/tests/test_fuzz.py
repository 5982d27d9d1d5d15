"""exmy.fuzz (shrinking, the engine's CI-depth input classes) and exmy.strategies (Hypothesis)."""

import numpy as np
import pytest

import exmy


def buggy_ties_away(x):
    """A cast to e4m3fn written by hand that rounds ties away from zero (the classic bug): the
    significand is rounded by adding half an ulp and truncating."""
    x = np.asarray(x, np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _ties_away(x)


def _ties_away(x):
    bits = x.view(np.uint32)
    sign = ((bits >> 24) & 0x80).astype(np.uint8)
    a = np.abs(x).astype(np.float64)
    out = np.zeros(x.shape, np.uint8)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(e, -6)  # subnormals share the smallest normal's quantum
    q = np.exp2(e - 3)
    r = np.floor(a / q + 0.5) * q  # ties away from zero
    for i in range(x.size):
        v = r.flat[i]
        if np.isnan(a.flat[i]) or v > 448:
            out.flat[i] = 0x7F
        else:
            out.flat[i] = exmy.cast(np.float32([v]), "e4m3fn")[0]  # v is exact in e4m3fn
    return out | sign


def ml_dtypes_cast(x):
    ml = pytest.importorskip("ml_dtypes")
    return x.astype(ml.float8_e4m3fn)


def test_fuzz_passes_exmys_own_cast():
    r = exmy.fuzz(lambda x: exmy.cast(x, "e4m3fn"), op="cast", format="e4m3fn", round="rne",
                  seed=0, max_examples=20000)
    assert r.ok and bool(r) and r.x is None and r.failures == 0
    assert r.checks == r.by_class["random"][0] + sum(
        v[0] for k, v in r.by_class.items() if k != "random")
    assert r.by_class["random"][0] == 20000
    # the designed classes of SEMANTICS 13.5.1 are there
    for c in ("tie (normal)", "tie (subnormal result)", "tie (subnormal/normal boundary)",
              "overflow edge", "fp32 subnormal", "nan signalling"):
        assert r.by_class[c][0] > 0, c


def test_fuzz_passes_ml_dtypes_astype():
    r = exmy.fuzz(ml_dtypes_cast, format="float8_e4m3fn", max_examples=1 << 16)
    assert r.ok, str(r)


def test_fuzz_shrinks_the_ties_away_cast_to_a_minimal_counterexample():
    r = exmy.fuzz(buggy_ties_away, format="e4m3fn", seed=0, max_examples=2000)
    assert not r.ok and r.failures > 0
    # one element, shrunk to the simplest failing tie: 1.0625 = 1 + 2^-4, between 1 (0x38,
    # even) and 1.125 (0x39)
    assert r.x.shape == (1,) and r.x.tolist() == [1.0625]
    assert r.expected.tolist() == [0x38] and r.got.tolist() == [0x39]
    assert r.input_class.startswith("tie")
    assert r.by_class["tie (normal)"][1] > 0 and r.by_class["value"][1] == 0
    with pytest.raises(exmy.FuzzFailure, match=r"x\[0\]=0x3f880000") as e:
        exmy.fuzz(buggy_ties_away, format="e4m3fn", max_examples=2000, raise_on_failure=True)
    assert isinstance(e.value, AssertionError) and e.value.result.x.tolist() == [1.0625]


def test_fuzz_shrinks_from_far_away():
    # A bug only above 100: the shrinker moves toward 1 but stays where the bug is.
    def bug(x):
        c = exmy.cast(x, "e4m3fn")
        c[np.abs(x) > 100] = exmy.cast(x, "e4m3fn", round="rtz")[np.abs(x) > 100]
        return c

    r = exmy.fuzz(bug, format="e4m3fn", max_examples=0)
    assert not r.ok
    v = float(r.x[0])
    assert 100 < v < 256 and r.expected[0] != r.got[0]
    assert exmy.cast(r.x, "e4m3fn")[0] == r.expected[0]


def test_fuzz_subnormal_bug_is_found():
    # Flush-to-zero of subnormal results: found by the subnormal classes.
    def ftz(x):
        c = exmy.cast(x, "e4m3fn")
        c[(c & 0x78) == 0] &= 0x80
        return c

    r = exmy.fuzz(ftz, format="e4m3fn", max_examples=0)
    assert not r.ok and (r.expected[r.index] & 0x7F) != 0 and (r.got[r.index] & 0x7F) == 0


def test_fuzz_stochastic_rounding_keeps_the_index():
    r = exmy.fuzz(lambda x, seed: exmy.cast(x, "e5m2", round="sr:8", seed=seed), format="e5m2",
                  round="sr:8", max_examples=1000)
    assert r.ok, str(r)
    # a wrong seed: found, at its element index (an array of zeros but that element)
    r = exmy.fuzz(lambda x, seed: exmy.cast(x, "e5m2", round="sr:8", seed=seed + 1),
                  format="e5m2", round="sr:8", max_examples=1000)
    assert not r.ok
    assert r.x.size == r.index + 1 and (r.x[:-1] == 0).all()
    assert exmy.cast(r.x, "e5m2", round="sr:8", seed=r.seed)[r.index] == r.expected[r.index]


def test_fuzz_nan_codes_compare_as_a_class_unless_strict():
    def sign_flipped_nans(x):
        c = exmy.cast(x, "e4m3fn")
        c[np.isnan(x)] ^= 0x80
        return c

    assert exmy.fuzz(sign_flipped_nans, format="e4m3fn", max_examples=100).ok
    r = exmy.fuzz(sign_flipped_nans, format="e4m3fn", max_examples=100, strict_nan=True)
    assert not r.ok and np.isnan(r.x[0])


def test_fuzz_bad_arguments():
    with pytest.raises(TypeError, match="fn"):
        exmy.fuzz(3)
    with pytest.raises(ValueError, match="op"):
        exmy.fuzz(lambda x: x, op="gemm")
    with pytest.raises(ValueError, match="unknown format"):
        exmy.fuzz(lambda x: x, format="e9m9x")
    with pytest.raises(ValueError, match="overflow"):
        exmy.fuzz(lambda x: x, overflow="clip")
    with pytest.raises(TypeError, match="fn\\(x\\)"):
        exmy.fuzz(lambda x: x[:1].view(np.uint8), max_examples=0)


# ---- Hypothesis strategies --------------------------------------------------------------------

def test_strategies_cover_the_classes():
    pytest.importorskip("hypothesis")
    from exmy import strategies

    names = strategies.input_classes("float8_e4m3fn")
    assert "tie (subnormal result)" in names and "overflow edge" in names
    ties = strategies.boundary_inputs("e4m3fn", classes="tie (subnormal result)")
    # the midpoints below the smallest normal 2^-6: between 0 and 2^-9 and the subnormals
    assert 2.0**-10 in ties.tolist() and (np.abs(ties) < 2.0**-6).all()
    b = strategies.boundary_inputs("e4m3fn")
    assert b[0] == 1.0 or b[0] == 0.0 or abs(float(b[0])) in (1.0, 2.0)  # simplest first
    assert 464.0 in b.tolist()  # the overflow tie of e4m3fn


def test_strategies_find_the_ties_away_bug():
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings, HealthCheck
    from exmy.strategies import floats_for

    @settings(max_examples=300, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(floats_for("e4m3fn"))
    def prop(v):
        x = np.float32([v])
        assert buggy_ties_away(x)[0] == exmy.cast(x, "e4m3fn")[0]

    with pytest.raises(AssertionError):
        prop()


def test_strategies_arrays_keep_nan_payloads():
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from exmy.strategies import arrays_for

    seen = set()

    @settings(max_examples=200, derandomize=True, database=None)
    @given(arrays_for("bf16", classes=["nan signalling"], max_size=4))
    def prop(x):
        assert x.dtype == np.float32 and np.isnan(x).all()
        seen.update(int(b) for b in x.view(np.uint32))

    prop()
    assert any((b & 0x400000) == 0 for b in seen)  # signalling payloads survive


def test_import_exmy_does_not_import_hypothesis():
    import subprocess
    import sys

    code = "import sys, exmy; print('hypothesis' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "False"
