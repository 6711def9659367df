build failed: tirx_kernels_decode_build: (h / h_kv) * q_len is 16 * 8, expected at most 64
