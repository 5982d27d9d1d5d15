"""Kernel launches of a torch.profiler chrome trace, grouped by the marker sleeps between calls.

The launch captures (tools/gemm_launch.py, and bench/peers' gemm_simt_capture.py,
qlora_linear_launch_capture.py, blockfp8_splitk_capture.py) separate each call by
`torch.cuda._sleep`; the kernels between two markers are that call's launches. One definition of
that rule for all of them (in tools/, which bench/peers imports and never the reverse).
"""


def is_marker(name):
    return "spin_kernel" in name or "sleep" in name.lower()


def kernel_groups(events, with_duration=False):
    """[[name, grid, block(, dur)], ...] per marker, in time order: group i holds the kernels
    after marker i, up to the next marker (the last group runs to the end of the trace).
    Kernels before the first marker are dropped."""
    ks = sorted([e for e in events if e.get("cat") == "kernel"], key=lambda e: e["ts"])
    groups, cur = [], None
    for e in ks:
        if is_marker(e["name"]):
            if cur is not None:
                groups.append(cur)
            cur = []
        elif cur is not None:
            a = e.get("args", {})
            row = [e["name"], a.get("grid"), a.get("block")]
            if with_duration:
                row.append(e.get("dur"))
            cur.append(row)
    if cur is not None:
        groups.append(cur)
    return groups
