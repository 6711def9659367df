build failed: tirx_kernel_build: [add_rmsnorm:8] reduce.smem: reduced iters on tid with extent 192, stride 1 are not lowered yet
