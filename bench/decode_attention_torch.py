#!/usr/bin/env python3
"""The shapes of bench/decode_attention.c with torch SDPA (cuDNN and flash backends), bf16.

    python3 bench/decode_attention_torch.py [out.csv | -]

q [B, H, 1, D] against a contiguous K/V [B, H_kv, ctx, D] (enable_gqa; where a backend refuses
it, K/V repeated to H heads with repeat_interleave, whose bytes are then counted as read),
H = 32, H_kv = 8, D = 128, B in {1, 8, 32, 128}, contexts 1k..64k where the caches fit in 48 GB.
K/V rotated over enough copies for >= 128 MB a rotation (read from HBM, not L2), as in the C
bench. Time: CUDA events over one launch per copy (at least 10), median of 5 samples, us per
launch. The copy reference: copy_ of 256 MB (read + written). CSV columns as
bench/decode_attention.c; a backend that fails on a shape is reported on stderr and skipped.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

H, HKV, D, P = 32, 8, 128, 16
BATCHES = [1, 8, 32, 128]
CONTEXTS = [1024, 4096, 16384, 65536]
BACKENDS = [("torch-cudnn", SDPBackend.CUDNN_ATTENTION), ("torch-flash", SDPBackend.FLASH_ATTENTION)]


def timed(fn, n, reps=5):
    fn(0)  # warm-up
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for i in range(n):
            fn(i)
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / n)
    ts.sort()
    return ts[len(ts) // 2]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "decode_attention_torch.csv"
    fh = sys.stdout if out == "-" else open(out, "w")
    fh.write("impl,batch,context,h,h_kv,d,page,dtype,splits,us,kv_bytes,gbps,copy_gbps,ratio_copy\n")
    src = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    cus = timed(lambda i: dst.copy_(src), 10)
    copy_gbps = 2 * src.numel() / cus / 1e3
    del src, dst
    for B in BATCHES:
        for L in CONTEXTS:
            one = B * HKV * L * D * 2  # bytes of one of K, V
            if 2 * one > (48 << 30):
                continue
            sets = (128 << 20) // (2 * one) + 1
            q = torch.randn(B, H, 1, D, device="cuda", dtype=torch.bfloat16)
            ks = [torch.randn(B, HKV, L, D, device="cuda", dtype=torch.bfloat16) for _ in range(sets)]
            vs = [torch.randn_like(k) for k in ks]
            for name, backend in BACKENDS:
                for gqa in (True, False):
                    try:
                        with sdpa_kernel(backend):
                            if gqa:
                                fn = lambda i: F.scaled_dot_product_attention(q, ks[i % sets], vs[i % sets], enable_gqa=True)
                            else:
                                fn = lambda i: F.scaled_dot_product_attention(
                                    q, ks[i % sets].repeat_interleave(H // HKV, 1), vs[i % sets].repeat_interleave(H // HKV, 1))
                            us = timed(fn, max(sets, 10))
                        break
                    except RuntimeError as e:
                        print(f"{name} B={B} ctx={L} gqa={gqa}: {str(e).splitlines()[0]}", file=sys.stderr)
                        us = None
                if us is None:
                    continue
                kv = 2.0 * one
                gbps = kv / us / 1e3
                impl = name if gqa else name + "-repeat"
                fh.write(f"{impl},{B},{L},{H},{HKV},{D},{P},bf16,0,{us:.2f},{kv:.0f},{gbps:.1f},{copy_gbps:.1f},{gbps / copy_gbps:.4f}\n")
                fh.flush()
            del q, ks, vs
            torch.cuda.empty_cache()
    if fh is not sys.stdout:
        fh.close()


if __name__ == "__main__":
    main()
