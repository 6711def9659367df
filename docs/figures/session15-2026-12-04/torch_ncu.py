#!/usr/bin/env python3
"""The torch.compile kernels of bench/membound_torch.py, one launch each, for ncu.

    ncu --profile-from-start off ... python3 torch_ncu.py kernel:rows:width [...]

Each case: compile and warm up (Inductor's autotuning included) outside the profiled range,
then one call between cudaProfilerStart and cudaProfilerStop.
"""
import sys

import torch
import torch.nn.functional as F


def case(name, M, W):
    eps = 1e-5
    x = torch.randn(M, W, device="cuda", dtype=torch.bfloat16)
    r = torch.randn_like(x)
    x2 = torch.randn(M, 2 * W, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(W, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(W, device="cuda", dtype=torch.bfloat16)
    fns = {
        "rmsnorm": lambda: F.rms_norm(x, (W,), w, eps),
        "layernorm": lambda: F.layer_norm(x, (W,), w, b, eps),
        "softmax": lambda: torch.softmax(x, -1),
        "add_rmsnorm": lambda: (lambda h: (F.rms_norm(h, (W,), w, eps), h))(x + r),
        "silu_mul": lambda: F.silu(x2[:, :W]) * x2[:, W:],
        "chain": lambda: x * torch.sigmoid(0.75 * x) + 0.25,
    }
    f = torch.compile(fns[name], dynamic=False)
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    f()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


for spec in sys.argv[1:]:
    n, m, w = spec.split(":")
    print("case", n, m, w, flush=True)
    case(n, int(m), int(w))
