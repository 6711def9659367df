#!/usr/bin/env python3
"""The shapes of bench/attention.c with torch SDPA forced to the cuDNN and to the flash backend.

    python3 bench/attention_torch.py out.csv [reps]

16k tokens (B x S = 16384), S in {512, 1k, 2k, 4k, 8k, 16k}, H = 16 at D = 128, H = 32 at
D = 64 and H = 8 at D = 256, causal and not, bf16 and f16; TIRX_BENCH_ATTN_D=256 (a comma list
of 64, 128 and 256) keeps only the rows of those head dims, as in bench/attention.c. q, k, v
are made as [B, S, H, D] (tirx's layout) and passed as their [B, H, S, D] transposes, as
FlashAttention's users do; a backend that refuses them gets contiguous [B, H, S, D] copies
(noted in the check column). Times with CUDA events: 10 warm-up calls, then `reps` (default
30) timed calls, the median. FLOPs: 4 B H S^2 D, half under causal. CSV columns as
bench/attention.c (impl torch_cudnn / torch_flash, path the backend);
bench/attention_join.sh joins the two files.
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SEQS = [512, 1024, 2048, 4096, 8192, 16384]
TOKENS = 16384
DIMS = [(128, 16), (64, 32), (256, 8)]  # (D, H), in bench/attention.c's order


def head_dims():
    """The (D, H) rows TIRX_BENCH_ATTN_D keeps (all when unset or empty)."""
    only = os.environ.get("TIRX_BENCH_ATTN_D", "")
    if not only:
        return DIMS
    try:
        want = {int(x) for x in only.split(",")}
    except ValueError:
        want = {0}
    if not want <= {d for d, _ in DIMS}:
        sys.exit(f"attention_torch.py: TIRX_BENCH_ATTN_D is \"{only}\", expected a comma list of "
                 "64, 128 and 256")
    return [(d, h) for d, h in DIMS if d in want]


def time_ms(fn, reps):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "attention_torch.csv"
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    dims = head_dims()
    fh = open(out, "w")  # written row by row: a run cut short keeps what it measured
    fh.write("impl,path,dtype,d,h,batch,seq,causal,us,tflops,check\n")
    backends = [("torch_cudnn", "cudnn", SDPBackend.CUDNN_ATTENTION),
                ("torch_flash", "flash", SDPBackend.FLASH_ATTENTION)]
    for dname, dt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        for d, h in dims:
            for causal in (0, 1):
                for s in SEQS:
                    b = TOKENS // s
                    q, k, v = (torch.empty(b, s, h, d, device="cuda", dtype=dt).uniform_(-2, 2)
                               for _ in range(3))
                    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
                    flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
                    for impl, path, be in backends:
                        note = "bshd"
                        args = (qt, kt, vt)
                        try:
                            with sdpa_kernel([be]):
                                F.scaled_dot_product_attention(*args, is_causal=bool(causal))
                        except Exception:  # noqa: BLE001  (the layout refused: contiguous copies)
                            args = tuple(x.contiguous() for x in args)
                            note = "bhsd"
                        try:
                            with sdpa_kernel([be]):
                                ms = time_ms(lambda: F.scaled_dot_product_attention(
                                    *args, is_causal=bool(causal)), reps)
                        except Exception as e:  # noqa: BLE001
                            print(f"{impl} {dname} D={d} S={s} causal={causal}: {e}", file=sys.stderr)
                            continue
                        line = (f"{impl},{path},{dname},{d},{h},{b},{s},{causal},{ms * 1e3:.2f},"
                                f"{flops / ms / 1e9:.2f},{note}")
                        fh.write(line + "\n")
                        fh.flush()
                        print(line, flush=True)
                    del q, k, v, qt, kt, vt
    fh.close()


if __name__ == "__main__":
    main()
