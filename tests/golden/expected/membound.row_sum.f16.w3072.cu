build failed: tirx_kernel_build: [row_sum:3] reduce.smem: reduced iters on tid with extent 96, stride 1 are not lowered yet
