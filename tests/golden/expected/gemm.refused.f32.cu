build failed: gemm_build: spec must have dtype f16 or bf16 and m, n, k >= 1
