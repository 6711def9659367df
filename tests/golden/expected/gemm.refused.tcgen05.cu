build failed: gemm_build: spec->family is "tcgen05", expected NULL, "wgmma", "mma" or "scalar"
