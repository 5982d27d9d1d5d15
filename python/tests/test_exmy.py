"""The Python package against the CLI (same bits) and the documented behaviour.

The CLI comparisons need the exmy executable: $EXMY_CLI, else build-cpu/cli/exmy or
build/cli/exmy; they are skipped when none exists (the README's test command builds it).
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import exmy

ROOT = Path(__file__).resolve().parents[2]


def cli():
    for c in (os.environ.get("EXMY_CLI"), ROOT / "build-cpu/cli/exmy", ROOT / "build/cli/exmy"):
        if c and Path(c).is_file():
            return str(c)
    return None


needs_cli = pytest.mark.skipif(cli() is None, reason="no exmy executable built")


def boundary_fp32(seed=1):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 1,
                        0x43E80000, 0x43E80001, 0x43E7FFFF, 0x3A800000], dtype=np.uint32)
    x = np.concatenate([bits, special]).view(np.float32)
    # values near 1 and near fp8 ranges
    near = (rng.standard_normal(20000) * 100).astype(np.float32)
    return np.concatenate([x, near])


def test_cast_examples():
    x = np.array([1.0, 464.0, 465.0, -0.0, np.nan], np.float32)
    assert exmy.cast(x, "e4m3fn").tolist() == [0x38, 0x7E, 0x7F, 0x80, 0x7F]
    assert exmy.cast(x, "e4m3fn", overflow="satfinite").tolist()[:3] == [0x38, 0x7E, 0x7E]
    assert exmy.cast(x, "bf16").dtype == np.uint16
    assert exmy.decode(np.array([0x38, 0x7E], np.uint8), "e4m3fn").tolist() == [1.0, 448.0]
    t = exmy.table("e2m1fn")
    assert t.shape == (16,) and t[7] == 6.0


def test_bad_input_raises_valueerror_with_the_cli_message():
    x = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="unknown format 'e9m9x'"):
        exmy.cast(x, "e9m9x")
    with pytest.raises(ValueError, match="sr:R"):
        exmy.cast(x, "e4m3fn", round="sr:99")
    with pytest.raises(ValueError, match="overflow"):
        exmy.cast(x, "e4m3fn", overflow="clip")
    with pytest.raises(ValueError, match="float64"):
        exmy.cast(x.astype(np.float64), "e4m3fn")
    with pytest.raises(ValueError, match="not a code of e2m1fn"):
        exmy.decode(np.array([16], np.uint8), "e2m1fn")


@needs_cli
def test_cast_threads_give_identical_bytes():
    # 2^20 elements: more than one 2^16-element piece, so threads=0 runs a team on >1 core.
    x = (np.random.default_rng(7).standard_normal(1 << 20) * 100).astype(np.float32)
    one = exmy.cast(x, "e4m3fn", round="sr:8", seed=11, threads=1)
    assert one.tobytes() == exmy.cast(x, "e4m3fn", round="sr:8", seed=11, threads=0).tobytes()
    assert one.tobytes() == exmy.cast(x, "e4m3fn", round="sr:8", seed=11, threads=2).tobytes()
    assert one.tobytes() == exmy.cast(x, "e4m3fn", round="sr:8", seed=11).tobytes()


@pytest.mark.parametrize("fmt,dtype", [("e4m3fn", np.uint8), ("bf16", np.uint16)])
@pytest.mark.parametrize("shape", [(1 << 20,), (64, 128), (3, 5, 7), (0,)])
def test_cast_output_is_a_fresh_writable_c_contiguous_array(fmt, dtype, shape):
    x = np.ones(shape, np.float32)
    for threads in (1, 0):
        out = exmy.cast(x, fmt, threads=threads)
        assert isinstance(out, np.ndarray)
        assert out.dtype == dtype and out.shape == shape
        assert out.flags.c_contiguous and out.flags.writeable and out.flags.owndata
        out[...] = 0  # writable in place
    d = exmy.decode(exmy.cast(x, fmt), fmt)
    assert d.dtype == np.float32 and d.shape == shape
    assert d.flags.c_contiguous and d.flags.writeable and d.flags.owndata
    assert (d == 1.0).all()


@pytest.mark.parametrize("bad", [-1, -8, 1.5, "2", None, True])
def test_cast_bad_threads_raise_valueerror(bad):
    with pytest.raises(ValueError, match="threads"):
        exmy.cast(np.zeros(4, np.float32), "e4m3fn", threads=bad)


@needs_cli
@pytest.mark.parametrize("fmt,rnd,ov", [("e4m3fn", "rne", "none"), ("e5m2", "sr:8", "satfinite"),
                                        ("e2m1fn", "rtz", "sat"), ("bf16", "rna", "none"),
                                        ("e3m4", "rto", "none")])
def test_cast_equals_the_cli(tmp_path, fmt, rnd, ov):
    x = boundary_fp32()
    np.save(tmp_path / "x.npy", x)
    subprocess.run([cli(), "cast", fmt, "--in", str(tmp_path / "x.npy"), "--out",
                    str(tmp_path / "c.npy"), "--round", rnd, "--overflow", ov, "--seed", "7"],
                   check=True)
    want = np.load(tmp_path / "c.npy")
    got = exmy.cast(x, fmt, round=rnd, overflow=ov, seed=7)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)


@needs_cli
def test_quantize_and_dequantize_equal_the_cli(tmp_path):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((8, 64)) * 10).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([cli(), "quantize", "--scheme", "rowwise", "--to", "e4m3fn", "--variant", "te",
                    "--in", str(tmp_path / "x.npy"), "--out", str(tmp_path / "q.npy"),
                    "--state-out", str(tmp_path / "s.npy")], check=True)
    q = exmy.quantize(x, "rowwise", "e4m3fn", variant="te")
    assert np.array_equal(q["codes"], np.load(tmp_path / "q.npy"))
    assert np.array_equal(q["state"].view(np.uint32), np.load(tmp_path / "s.npy").view(np.uint32))
    subprocess.run([cli(), "dequantize", "--scheme", "rowwise", "--from", "e4m3fn", "--variant",
                    "te", "--in", str(tmp_path / "q.npy"), "--state", str(tmp_path / "s.npy"),
                    "--out", str(tmp_path / "d.npy")], check=True)
    d = exmy.dequantize(q, "rowwise", "e4m3fn", variant="te")
    assert np.array_equal(d.view(np.uint32), np.load(tmp_path / "d.npy").view(np.uint32))


@needs_cli
def test_step_equals_the_cli(tmp_path):
    rng = np.random.default_rng(4)
    p = rng.standard_normal(5000).astype(np.float32)
    g = (rng.standard_normal((3, 5000)) * 0.01).astype(np.float32)
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "g.npy", g)
    subprocess.run([cli(), "step", "--optimizer", "adamw8bit", "--params", str(tmp_path / "p.npy"),
                    "--grads", str(tmp_path / "g.npy"), "--steps", "3", "--out",
                    str(tmp_path / "out")], check=True, stdout=subprocess.DEVNULL)
    r = exmy.step("adamw8bit", p, g, steps=3)
    assert np.array_equal(r["params"].view(np.uint32),
                          np.load(tmp_path / "out" / "params.npy").view(np.uint32))
    for name, arr in r.items():
        if name != "params":
            want = np.load(tmp_path / "out" / f"{name}.npy")
            assert np.array_equal(arr.ravel().view(np.uint8), want.ravel().view(np.uint8)), name


@needs_cli
def test_golden_check(tmp_path):
    subprocess.run([cli(), "golden", "generate", "--suite", "quantize", "--out",
                    str(tmp_path / "c"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
    for e in (tmp_path / "c").rglob("expected/*.npy"):
        dest = tmp_path / "r" / e.parent.parent.relative_to(tmp_path / "c")
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy(e, dest / e.name)
    r = exmy.golden_check(tmp_path / "c", tmp_path / "r")
    # corpus version 5: 188 cases + 18 block:RxC + 48 nf4/fp4
    assert r["ok"] and r["mismatches"] == 0 and len(r["cases"]) == 254
    f = tmp_path / "r/quantize/int8-rowwise-div-mul/codes.npy"
    a = np.load(f)
    a.flat[0] ^= 1
    np.save(f, a)
    r = exmy.golden_check(tmp_path / "c", tmp_path / "r")
    assert not r["ok"] and r["mismatches"] == 1


def test_assert_cast_equal_and_the_fixture(exmy_check):
    x = np.array([0.5, 1.5, 2.5, 3.5], np.float32)
    good = exmy.cast(x, "e2m1fn")
    exmy_check.cast(x, good, "e2m1fn")
    bad = good.copy()
    bad[2] ^= 1
    with pytest.raises(AssertionError, match=r"\[2\] x=0x40200000"):
        exmy_check.cast(x, bad, "e2m1fn")


def test_torch_float8_matches_exmy():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("torch without float8")
    x = torch.from_numpy(boundary_fp32()).clamp(-448, 448)  # torch saturates nothing: stay in range
    got = x.to(torch.float8_e4m3fn)
    exmy.assert_cast_equal(x, got, "e4m3fn")


# ---- compatibility profiles: one library function applies each, for the CLI, Python and the
# golden corpus (sim/format/compat.hpp; optim::apply_compat, quant::apply_compat) --------------

def _run_cli_step(tmp_path, optimizer, p, g, steps, compat, seed=0):
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "g.npy", g)
    out = tmp_path / "out"
    subprocess.run([cli(), "step", "--optimizer", optimizer, "--params", str(tmp_path / "p.npy"),
                    "--grads", str(tmp_path / "g.npy"), "--steps", str(steps), "--compat", compat,
                    "--seed", str(seed), "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    return out


def _assert_step_files_equal(r, out):
    """Python's step result equals the files of ``exmy step`` (params and every state array)."""
    assert np.array_equal(r["params"].view(np.uint32),
                          np.load(out / "params.npy").view(np.uint32))
    for name, arr in r.items():
        if name != "params":
            want = np.load(out / f"{name}.npy")
            assert arr.ravel().tobytes() == want.ravel().tobytes(), name


@needs_cli
def test_step_amsgrad_keyword_equals_the_cli(tmp_path):
    # amsgrad (SEMANTICS 9.2.3; a keyword since the second torch.optim batch) reaches the engine
    # through the family's extra options: the same params and the same state3 (max_exp_avg_sq)
    # as `exmy step --amsgrad`, and other bits than without it.
    rng = np.random.default_rng(33)
    p = rng.standard_normal(3000).astype(np.float32)
    g = (rng.standard_normal((3, 3000)) * 0.01).astype(np.float32)
    g[1] *= 0.1  # a smaller second gradient: the running maximum keeps step 1's exp_avg_sq
    r = exmy.step("adamw", p, g, steps=3, amsgrad=True)
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "g.npy", g)
    out = tmp_path / "out"
    subprocess.run([cli(), "step", "--optimizer", "adamw", "--amsgrad", "--params",
                    str(tmp_path / "p.npy"), "--grads", str(tmp_path / "g.npy"), "--steps", "3",
                    "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    assert sorted(r) == ["params", "state1", "state2", "state3"]
    _assert_step_files_equal(r, out)
    d = exmy.step("adamw", p, g, steps=3)
    assert r["params"].tobytes() != d["params"].tobytes()


@needs_cli
def test_step_bnb_cuda_equals_the_cli(tmp_path):
    # exmy.step(..., compat="bnb-cuda") on an 8-bit optimizer models bitsandbytes' CUDA kernels
    # (it ran the exact model before: the binding did not apply the profile's .bnb).
    rng = np.random.default_rng(31)
    p = rng.standard_normal(5000).astype(np.float32)
    g = (rng.standard_normal((4, 5000)) * 0.01).astype(np.float32)
    r = exmy.step("adamw8bit", p, g, steps=4, compat="bnb-cuda")
    _assert_step_files_equal(r, _run_cli_step(tmp_path, "adamw8bit", p, g, 4, "bnb-cuda"))
    # ... and the profile changes the bits (it is not the default model).
    d = exmy.step("adamw8bit", p, g, steps=4)
    assert r["params"].tobytes() != d["params"].tobytes()


# Every profile that covers `exmy step`, on the optimizers the golden corpus holds it for.
STEP_PROFILES = [("adamw", "torch-cpu"), ("adamw", "torch-cuda"), ("adamw", "torch-cuda-foreach"),
                 ("adamw", "torch-cuda-fused"), ("sgd", "torch-cuda-foreach"),
                 ("adamw8bit", "bnb-cuda"), ("momentum8bit", "bnb-cuda")]


@pytest.fixture(scope="module")
def golden_steps(tmp_path_factory):
    if cli() is None:
        pytest.skip("no exmy executable built")
    d = tmp_path_factory.mktemp("golden")
    subprocess.run([cli(), "golden", "generate", "--suite", "step", "--out", str(d / "c"),
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    return d / "c"


@needs_cli
@pytest.mark.parametrize("optimizer,profile", STEP_PROFILES)
def test_step_profile_cli_python_golden_agree(tmp_path, golden_steps, optimizer, profile):
    case = golden_steps / "step" / f"{optimizer}-fp32-{profile}"
    fields = json.loads((case / "case.json").read_text())
    assert fields["compat"] == ("default" if profile == "torch-cpu" else profile)
    p, g = np.load(case / "params.npy"), np.load(case / "grads.npy")
    steps, seed = int(fields["steps"]), int(fields["seed"])
    r = exmy.step(optimizer, p, g, steps=steps, compat=profile, seed=seed)
    for name, arr in r.items():
        want = np.load(case / "expected" / f"{name}.npy")
        assert arr.ravel().tobytes() == want.ravel().tobytes(), (profile, name)
    _assert_step_files_equal(r, _run_cli_step(tmp_path, optimizer, p, g, steps, profile, seed))


# Every profile that covers `exmy quantize` (Python and the CLI; the golden corpus has no
# quantize case under a profile).
QUANT_PROFILES = [("triton", "rowwise", "int8"), ("triton", "colwise", "int8"),
                  ("bnb-cuda", "rowwise", "int8"), ("bnb-cuda", "block:256", "dynamic"),
                  ("bnb-cuda", "block:4096", "linear-unsigned")]


@needs_cli
@pytest.mark.parametrize("profile,scheme,to", QUANT_PROFILES)
def test_quantize_profile_cli_python_agree(tmp_path, profile, scheme, to):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((37, 300)) * np.exp2(rng.integers(-20, 20, (37, 1)))).astype(
        np.float32)
    if to.endswith("-unsigned"):
        x = np.abs(x)
    np.save(tmp_path / "x.npy", x)
    subprocess.run([cli(), "quantize", "--scheme", scheme, "--to", to, "--compat", profile,
                    "--in", str(tmp_path / "x.npy"), "--out", str(tmp_path / "q.npy"),
                    "--state-out", str(tmp_path / "s.npy")], check=True)
    q = exmy.quantize(x, scheme, to, compat=profile)
    assert q["codes"].tobytes() == np.load(tmp_path / "q.npy").tobytes()
    assert q["state"].tobytes() == np.load(tmp_path / "s.npy").tobytes()
    # The profile is applied: it refuses the switches it fixes, with the CLI's message.
    fixed = {"order": "recip-mul"} if to == "int8" else {"norm": "div"}
    # (with the Python argument names in place of the CLI's flags)
    with pytest.raises(ValueError, match="^compat " + profile + " fixes") as e:
        exmy.quantize(x, scheme, to, compat=profile, **fixed)
    assert "--" not in str(e.value)


# Every profile that covers `exmy cast` (its e8m0fnu conversions; the golden corpus has no cast
# case under a profile): Python and the CLI apply it identically.
CAST_PROFILES = ["torch", "ml_dtypes"]


def _e8m0_inputs():
    # Every binade edge and midpoint of fp32's range, both signs, zeros, subnormals, inf, NaN.
    e = np.arange(-149, 128, dtype=np.float64)
    v = np.concatenate([np.exp2(e), 1.5 * np.exp2(e), np.nextafter(np.exp2(e), 0),
                        np.nextafter(1.5 * np.exp2(e), np.inf)]).astype(np.float32)
    extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, np.finfo(np.float32).max],
                     np.float32)
    return np.concatenate([v, -v, extra])


@needs_cli
@pytest.mark.parametrize("profile", CAST_PROFILES)
def test_cast_profile_cli_python_agree(tmp_path, profile):
    x = _e8m0_inputs()
    np.save(tmp_path / "x.npy", x)
    subprocess.run([cli(), "cast", "e8m0fnu", "--compat", profile, "--in", str(tmp_path / "x.npy"),
                    "--out", str(tmp_path / "y.npy")], check=True)
    got = exmy.cast(x, "e8m0fnu", compat=profile)
    assert got.tobytes() == np.load(tmp_path / "y.npy").tobytes()
    # The profile is applied: it is not exmy's rounding, and the two libraries differ.
    other = CAST_PROFILES[1 - CAST_PROFILES.index(profile)]
    assert not np.array_equal(got, exmy.cast(x, "e8m0fnu", compat=other))
    with pytest.raises(ValueError, match="fixes the rounding"):
        exmy.cast(x, "e8m0fnu", round="rtz", compat=profile)
    with pytest.raises(ValueError, match="torch"):
        exmy.cast(x, "e8m0fnu", compat="no-such-profile")


def test_step_hyperparameter_domains_are_the_clis():
    # The CLI's domains and messages, with the Python argument in place of the flag (issue 34:
    # never a command-line flag in a Python message).
    p = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match=r"^lr '-1': expected a number in \[0, inf\)"):
        exmy.step("adamw", p, p, lr=-1.0)
    with pytest.raises(ValueError, match=r"^betas\[1\]"):
        exmy.step("adamw8bit", p, p, beta2=1.0)
    with pytest.raises(ValueError, match="does not cover step optimizer adamw8bit"):
        exmy.step("adamw8bit", p, p, compat="torch-cuda")


@needs_cli
def test_plugin_reports_mismatches_before_missing_cases(tmp_path, exmy_check):
    subprocess.run([cli(), "golden", "generate", "--suite", "quantize", "--out",
                    str(tmp_path / "c"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
    cases = sorted(p.parent for p in (tmp_path / "c").rglob("expected"))
    for i, e in enumerate(cases):
        if i % 3 == 0:
            continue  # every third case without results: missing
        dest = tmp_path / "r" / e.relative_to(tmp_path / "c")
        dest.mkdir(parents=True)
        for f in (e / "expected").glob("*.npy"):
            shutil.copy(f, dest / f.name)
    last = tmp_path / "r" / cases[-1].relative_to(tmp_path / "c")  # a late case, wrong bits
    if not (last / "codes.npy").exists():
        last = tmp_path / "r" / cases[-2].relative_to(tmp_path / "c")
    a = np.load(last / "codes.npy")
    a.flat[0] ^= 1
    np.save(last / "codes.npy", a)
    with pytest.raises(AssertionError) as e:
        exmy_check.golden(tmp_path / "c", tmp_path / "r")
    lines = str(e.value).splitlines()
    assert lines[0].startswith("1 mismatches in 1 cases")
    assert lines[1] == "mismatches:" and last.name in lines[2]
    assert "missing:" in lines and lines.index("missing:") > 2
    # with allow_missing only the mismatch fails
    with pytest.raises(AssertionError) as e:
        exmy_check.golden(tmp_path / "c", tmp_path / "r", allow_missing=True)
    assert "missing:" not in str(e.value).splitlines()
