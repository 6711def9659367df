#!/usr/bin/env python3
"""The kernels of bench/membound.c in torch eager and torch.compile, same shapes, bf16.

    python3 bench/membound_torch.py out.csv

Times with triton.testing.do_bench (CUDA events, median); bytes as membound_bytes; the copy
reference is x.clone()-style copy_ of the same bytes. CSV columns as bench/membound.c.
"""
import sys

import torch
import torch.nn.functional as F
from triton.testing import do_bench

SHAPES = [(16384, 8192), (16384, 5000), (4096, 32768)]


def kernels(W):
    eps = 1e-5
    return {
        "rmsnorm": (lambda x, r, w, b: F.rms_norm(x, (W,), w, eps), 2),
        "layernorm": (lambda x, r, w, b: F.layer_norm(x, (W,), w, b, eps), 2),
        "softmax": (lambda x, r, w, b: torch.softmax(x, -1), 2),
        "add_rmsnorm": (lambda x, r, w, b: (lambda h: (F.rms_norm(h, (W,), w, eps), h))(x + r), 4),
        "row_sum": (lambda x, r, w, b: x.sum(-1, dtype=torch.float32), 1),
        "row_max": (lambda x, r, w, b: x.amax(-1), 1),
        "silu_mul": (None, 3),
        "chain": (lambda x, r, w, b: x * torch.sigmoid(0.75 * x) + 0.25, 2),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "membound_torch.csv"
    fh = open(out, "w")  # written row by row: a run cut short keeps what it measured
    fh.write("impl,kernel,dtype,rows,width,us,gbps,copy_gbps,ratio_copy\n")
    for M, W in SHAPES:
        x = torch.randn(M, W, device="cuda", dtype=torch.bfloat16)
        r = torch.randn_like(x)
        x2 = torch.randn(M, 2 * W, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(W, device="cuda", dtype=torch.bfloat16) + 0.5
        b = torch.randn(W, device="cuda", dtype=torch.bfloat16)
        for name, (fn, mult) in kernels(W).items():
            if name == "silu_mul":
                fn = lambda x, r, w, b: F.silu(x2[:, :W]) * x2[:, W:]
            nbytes = mult * M * W * 2
            src = torch.empty(nbytes // 4, dtype=torch.bfloat16, device="cuda").normal_()
            dst = torch.empty_like(src)
            copy_ms = do_bench(lambda: dst.copy_(src), warmup=25, rep=200, return_mode="median")
            cgbps = nbytes / copy_ms / 1e6
            del src, dst
            for impl, f in (("torch_eager", fn), ("torch_compile", torch.compile(fn, dynamic=False))):
                try:
                    ms = do_bench(lambda: f(x, r, w, b), warmup=25, rep=200, return_mode="median")
                except Exception as e:  # noqa: BLE001
                    print(f"{impl} {name} {M}x{W}: {e}", file=sys.stderr)
                    continue
                gbps = nbytes / ms / 1e6
                line = f"{impl},{name},bf16,{M},{W},{ms * 1e3:.2f},{gbps:.1f},{cgbps:.1f},{gbps / cgbps:.4f}"
                fh.write(line + "\n")
                fh.flush()
                print(line, flush=True)
    fh.close()


if __name__ == "__main__":
    main()
