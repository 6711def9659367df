build failed: tirx_kernel_build: [row_max:2] reduce.smem: reduced iters on tid with extent 192, stride 1 are not lowered yet
