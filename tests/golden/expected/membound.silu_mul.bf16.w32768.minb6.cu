build failed: tirx_kernel_build: tirx_set_min_blocks asks for 6 CTAs of 1024 threads on one SM, expected at most 2048 threads
