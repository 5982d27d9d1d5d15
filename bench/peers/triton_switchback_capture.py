#!/usr/bin/env python3
"""SwitchBack's row-wise int8 quantization as a Triton kernel on the GPU (the kernel of the
SwitchBack paper's released code, bitsandbytes/triton/quantize_rowwise.py, written out here:
absmax per row, `llrint(127 * (x / max_val))`), saved for `exmy quantize --scheme rowwise --to
int8 --compat triton` (bench/peers/triton_switchback_diff.py).

    bench/peers/triton_switchback_capture.py OUTDIR

Inputs: normals, and rows whose elements sit on the int8 rounding boundaries (k + 0.5)/127 times
the row's absmax (where Triton's approximate division and a correctly rounded one part), zeros,
an all-zero row, tiny and huge rows. Writes x.npy (<f4 [rows, cols]), codes.npy (int8),
maxs.npy (<f4), case.json.
"""
import json, os, sys
import numpy as np
import torch
import triton
import triton.language as tl

try:
    from triton.language.extra import libdevice
except ImportError:  # older layout
    from triton.language.extra.cuda import libdevice


@triton.jit
def _quantize_rowwise(x_ptr, output_ptr, output_maxs, n_elements, BLOCK_SIZE: tl.constexpr,
                      P2: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    arange = tl.arange(0, P2)
    offsets = block_start + arange
    row_mask = arange < BLOCK_SIZE
    x = tl.load(x_ptr + offsets, mask=row_mask)
    abs_x = tl.abs(x)
    max_val = tl.max(tl.where(row_mask, abs_x, 0), axis=0)
    output = libdevice.llrint(127.0 * (x / max_val))
    tl.store(output_ptr + offsets, output, mask=row_mask)
    tl.store(output_maxs + pid, max_val)


def quantize_rowwise(x):
    output = torch.empty(*x.shape, device=x.device, dtype=torch.int8)
    output_maxs = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
    P2 = int(2 ** (np.ceil(np.log2(x.shape[1]))))
    grid = lambda meta: (x.shape[0],)
    _quantize_rowwise[grid](x, output, output_maxs, x.numel(), BLOCK_SIZE=x.shape[1], P2=P2)
    return output, output_maxs


out = sys.argv[1]
rng = np.random.default_rng(11)
rows, cols = 512, 1000
x = rng.normal(0.0, 1.0, size=(rows, cols)).astype(np.float32)
for r in range(rows):
    a = np.float32(np.abs(x[r]).max())
    kind = r % 8
    if kind in (1, 2, 3, 4):  # on the rounding boundaries (k + 0.5)/127 · a, ± 1 ulp
        k = rng.integers(-127, 127, size=cols // 2)
        v = ((k + 0.5) / 127.0 * np.float64(a)).astype(np.float32)
        v = np.nextafter(v, np.float32(np.inf) if kind == 2 else np.float32(-np.inf)) if kind in (2, 3) else v
        x[r, : cols // 2] = v
        x[r, cols // 2] = a
    elif kind == 5:
        x[r] *= np.float32(1e-30) if r % 16 == 5 else np.float32(1e30)
    elif kind == 6 and r % 16 == 6:
        x[r] = 0.0
    elif kind == 6:
        x[r, ::3] = 0.0
xt = torch.from_numpy(x).cuda()
q, m = quantize_rowwise(xt)
torch.cuda.synchronize()
os.makedirs(out, exist_ok=True)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "codes.npy"), q.cpu().numpy())
np.save(os.path.join(out, "maxs.npy"), m.cpu().numpy())
json.dump({"rows": rows, "cols": cols, "kernel": "SwitchBack _quantize_rowwise (Triton)",
           "triton": triton.__version__, "torch": torch.__version__,
           "device": torch.cuda.get_device_name(),
           "command": "bench/peers/triton_switchback_capture.py OUT"},
          open(os.path.join(out, "case.json"), "w"), indent=1)
print("ok", q.shape, flush=True)
