#!/usr/bin/env python3
"""Writes a small corpus of torch 2.11's CUDA reductions (H200) from the probes of
bench/peers/torch_adafactor_capture.py (--caps DIR): for each chosen probe x_<name>.npy (the
input values as fp32) and y_<name>.npy (torch's output bits: uint32 fp32, uint16 bf16/fp16), read
by tests/optim/test_adafactor.cpp against sim/native/torch_reduce_cuda.hpp.

    torch_adafactor_reduce_corpus.py --caps /work/caps/adafactor --out golden/peers/torch-cuda-adafactor-reduce
"""
import argparse
import importlib.util
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TAGS = {"norm_last": 1, "norm_prev": 2, "norm_all": 3, "mean_prev": 4}
PICK = ["norm_last_fp32_3x128", "norm_last_fp32_2x513", "norm_last_fp32_33x515",
        "norm_last_bf16_4x33", "norm_last_fp16_3x129", "norm_last_fp32_1000x3",
        "norm_prev_fp32_1000x2", "norm_prev_fp32_129x77", "norm_prev_bf16_20x300",
        "norm_prev_fp32_5x1x9", "norm_prev_fp32_3x16x33", "norm_prev_fp16_33x4",
        "norm_all_fp32_4099", "norm_all_bf16_513", "mean_prev_fp32_128x1",
        "mean_prev_fp32_3x16x1", "mean_prev_bf16_2x3x5x1"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--caps", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("cap", os.path.join(HERE,
                                                                      "torch_adafactor_capture.py"))
    cap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cap)
    meta = json.load(open(os.path.join(a.caps, "capture.json")))
    os.makedirs(a.out, exist_ok=True)
    for p in meta["probes"]:
        short = p["name"][len("probe_"):]
        if short not in PICK:
            continue
        x = cap.probe_input(meta["seed"], tuple(p["shape"]), p["dtype"], TAGS[p["kind"]])
        if p["kind"] == "mean_prev":
            x = np.abs(x)
        if cap.sha(x) != p["inputs_sha256"]:
            raise RuntimeError(p["name"] + ": regenerated input differs")
        y = np.load(os.path.join(a.caps, p["name"] + ".npz"))["y"]
        np.save(os.path.join(a.out, f"x_{short}.npy"), x.astype(np.float32))
        np.save(os.path.join(a.out, f"y_{short}.npy"), y)
    print("wrote", len(PICK), "probes")


if __name__ == "__main__":
    main()
