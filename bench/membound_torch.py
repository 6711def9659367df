#!/usr/bin/env python3
"""The kernels of bench/membound.c in torch eager and torch.compile, same shapes, bf16.

    python3 bench/membound_torch.py out.csv [all | classic | server]

Times with triton.testing.do_bench (CUDA events around one call, L2 flushed before it, median);
bytes as membound_bytes; the copy reference is x.clone()-style copy_ of the same bytes. CSV
columns as bench/membound.c. TIRX_BENCH_TORCH_TIMING=loop10 times the way bench/membound.c
does instead (5 calls of warm-up, then 15 samples of 10 back-to-back calls and a synchronize,
host clock, median per call; copy and kernel alike), so that tirx and torch can be compared
under one method; =both writes both, the loop10 rows with "-loop10" after the impl name.

Then the server rows of bench/membound.c (same names, shapes and byte counts): rmsnorm,
rmsnorm_fp8 and add_rmsnorm_fp8 (y = rms_norm in f32, scale = amax / 448 per row, out =
(y / scale).to(float8_e4m3fn)) at widths 2048..7168 and batch sizes 1, 16, 256, 16384, and
rope (neox: cos/sin rows by index_select on the positions, rotate halves, the usual
out-of-place formulation; gptj: interleaved pairs) on q [T, 32, 128], k [T, 8, 128] slices of a
fused qkv buffer with f32 caches of 4096 positions.
"""
import os
import sys
import time

import torch
import torch.nn.functional as F
from triton.testing import do_bench

SHAPES = [(16384, 8192), (16384, 5000), (4096, 32768)]


TIMING = os.environ.get("TIRX_BENCH_TORCH_TIMING", "do_bench")
if TIMING not in ("do_bench", "loop10", "both"):
    sys.exit(f"membound_torch: TIRX_BENCH_TORCH_TIMING is '{TIMING}', expected do_bench, loop10 or both")


def loop10(f, reps=15):
    """bench/membound.c's measure(): ms per call, median of reps samples of 10 calls."""
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(10):
            f()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) / 10 * 1e3)
    return sorted(t)[reps // 2]


def timings():
    """(suffix, timer) pairs of the methods asked for."""
    db = ("", lambda f: do_bench(f, warmup=25, rep=200, return_mode="median"))
    lp = ("-loop10" if TIMING == "both" else "", loop10)
    return {"do_bench": [db], "loop10": [lp], "both": [db, lp]}[TIMING]


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


SERVER_WIDTHS = [2048, 3072, 4096, 5120, 6144, 7168]
SERVER_BATCHES = [1, 16, 256, 16384]
FP8_MAX = 448.0


def rmsnorm_fp8(x, w, eps=1e-5):
    y = F.rms_norm(x.float(), (x.shape[-1],), w.float(), eps)
    scale = y.abs().amax(-1, keepdim=True) / FP8_MAX
    q = (y / scale.clamp(min=1e-12)).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q, scale


def add_rmsnorm_fp8(x, r, w, eps=1e-5):
    h = x + r
    q, scale = rmsnorm_fp8(h, w, eps)
    return q, scale, h


def rope_neox(q, k, pos, cos, sin):
    c = cos.index_select(0, pos).unsqueeze(1)  # [T, 1, R/2]
    s = sin.index_select(0, pos).unsqueeze(1)

    def rot(x):
        half = c.shape[-1]
        x1, x2 = x[..., :half].float(), x[..., half:2 * half].float()
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s, x[..., 2 * half:].float()), -1).to(x.dtype)

    return rot(q), rot(k)


def rope_gptj(q, k, pos, cos, sin):
    c = cos.index_select(0, pos).unsqueeze(1)
    s = sin.index_select(0, pos).unsqueeze(1)

    def rot(x):
        half = c.shape[-1]
        x1, x2 = x[..., 0:2 * half:2].float(), x[..., 1:2 * half:2].float()
        o = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), -1).flatten(-2)
        return torch.cat((o, x[..., 2 * half:].float()), -1).to(x.dtype)

    return rot(q), rot(k)


def bench_rows(fh, name, M, W, nbytes, eager, compiled, args):
    """One kernel at one shape: the copy of the same bytes, then eager and torch.compile."""
    for suffix, timer in timings():
        src = torch.empty(max(nbytes // 4, 1), dtype=torch.bfloat16, device="cuda").normal_()
        dst = torch.empty_like(src)
        copy_ms = timer(lambda: dst.copy_(src))
        cgbps = nbytes / copy_ms / 1e6
        del src, dst
        for impl, f in (("torch_eager", eager), ("torch_compile", compiled)):
            try:
                ms = timer(lambda: f(*args))
            except Exception as e:  # noqa: BLE001
                print(f"{impl} {name} {M}x{W}: {e}", file=sys.stderr)
                continue
            gbps = nbytes / ms / 1e6
            line = (f"{impl}{suffix},{name},bf16,{M},{W},{ms * 1e3:.2f},{gbps:.1f},{cgbps:.1f},"
                    f"{gbps / cgbps:.4f}")
            fh.write(line + "\n")
            fh.flush()
            print(line, flush=True)


def server(fh):
    """The server rows. One torch.compile per kernel (tensors as arguments, default dynamic
    shapes: after the first shape change one dynamic graph serves the others), so that the
    96 rows cost a few compiles, not one each."""
    eps = 1e-5

    def rms(x, w):
        return F.rms_norm(x, (x.shape[-1],), w, eps)

    norms = (
        ("rmsnorm", lambda e, M: 4 * e, rms),
        ("rmsnorm_fp8", lambda e, M: 3 * e + 4 * M, rmsnorm_fp8),
        ("add_rmsnorm_fp8", lambda e, M: 7 * e + 4 * M, add_rmsnorm_fp8),
    )
    compiled = {name: torch.compile(fn) for name, _, fn in norms}
    for W in SERVER_WIDTHS:
        w = torch.rand(W, device="cuda", dtype=torch.bfloat16) + 0.5
        for M in SERVER_BATCHES:
            x = torch.randn(M, W, device="cuda", dtype=torch.bfloat16)
            r = torch.randn_like(x)
            for name, nbytes, fn in norms:
                args = (x, r, w) if name == "add_rmsnorm_fp8" else (x, w)
                bench_rows(fh, name, M, W, nbytes(M * W, M), fn, compiled[name], args)
            del x, r
    H, HKV, D, P = 32, 8, 128, 4096
    inv = 1.0 / (10000 ** (torch.arange(0, D, 2, device="cuda", dtype=torch.float32) / D))
    ang = torch.arange(P, device="cuda", dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    ropes = (("rope", rope_neox), ("rope_gptj", rope_gptj))
    rcompiled = {name: torch.compile(fn) for name, fn in ropes}
    for T in SERVER_BATCHES:
        qkv = torch.randn(T, (H + 2 * HKV) * D, device="cuda", dtype=torch.bfloat16)
        q = qkv[:, : H * D].view(T, H, D)
        k = qkv[:, H * D : (H + HKV) * D].view(T, HKV, D)
        pos = torch.randint(0, P, (T,), device="cuda", dtype=torch.int64)
        nbytes = 2 * T * (H + HKV) * D * 2 + T * D * 4 + 4 * T
        for name, fn in ropes:
            bench_rows(fh, name, T, (H + HKV) * D, nbytes, fn, rcompiled[name], (q, k, pos, cos, sin))
        del qkv


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "membound_torch.csv"
    mode = sys.argv[2] if len(sys.argv) > 2 else "all"
    fh = open(out, "w")  # written row by row: a run cut short keeps what it measured
    fh.write("impl,kernel,dtype,rows,width,us,gbps,copy_gbps,ratio_copy\n")
    for M, W in SHAPES if mode != "server" else []:
        x = torch.randn(M, W, device="cuda", dtype=torch.bfloat16)
        r = torch.randn_like(x)
        x2 = torch.randn(M, 2 * W, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(W, device="cuda", dtype=torch.bfloat16) + 0.5
        b = torch.randn(W, device="cuda", dtype=torch.bfloat16)
        for name, (fn, mult) in kernels(W).items():
            if name == "silu_mul":
                fn = lambda x, r, w, b: F.silu(x2[:, :W]) * x2[:, W:]
            nbytes = mult * M * W * 2
            bench_rows(fh, name, M, W, nbytes, fn, torch.compile(fn, dynamic=False), (x, r, w, b))
    if mode != "classic":
        server(fh)
    fh.close()


if __name__ == "__main__":
    main()
