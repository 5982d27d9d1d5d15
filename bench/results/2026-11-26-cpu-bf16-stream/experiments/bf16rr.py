import os; os.environ["OMP_NUM_THREADS"]="1"
import sys, time, statistics, ctypes
sys.path.insert(0, "/tmp/ci2/build/pyenv/lib/python3.11/site-packages")
import numpy as np, torch, exmy
torch.set_num_threads(1)
lib = ctypes.CDLL("/tmp/exp/libbf16v.so")
for lg in [int(a) for a in sys.argv[1:]] or [22]:
    n = 1 << lg
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    xt = torch.from_numpy(x)
    def mk(name):
        f = getattr(lib, name)
        def run():
            o = np.empty(n, np.uint16); f(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(o.ctypes.data), ctypes.c_size_t(n)); return o
        return run
    fns = {"exmy": lambda: exmy.cast(x, "bf16", threads=1), "torch": lambda: xt.to(torch.bfloat16), "v0": mk("v0"), "v1": mk("v1"), "v2": mk("v2"), "v3": mk("v3")}
    ref = fns["torch"]().view(torch.int16).numpy().view(np.uint16)
    for k in ("v0","v1","v2","v3","exmy"): assert (fns[k]() == ref).all(), k
    for f in fns.values(): f()
    ts = {k: [] for k in fns}
    for _ in range(int(os.environ.get("REPS","61"))):
        for k, f in fns.items():
            t0 = time.perf_counter(); f(); ts[k].append(time.perf_counter()-t0)
    m = {k: statistics.median(v)*1e6 for k, v in ts.items()}
    print(f"2^{lg}", " ".join(f"{k} {v:7.1f}" for k, v in m.items()), " torch/exmy %.3f torch/v2 %.3f torch/v3 %.3f" % (m["torch"]/m["exmy"], m["torch"]/m["v2"], m["torch"]/m["v3"]))
