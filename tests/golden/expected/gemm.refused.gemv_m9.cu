build failed: opts->path is TIRX_GEMM_PATH_GEMV, expected M <= 8 (M is 9)
