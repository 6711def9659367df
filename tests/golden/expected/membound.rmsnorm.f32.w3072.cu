build failed: tirx_kernel_build: [rmsnorm:2] reduce.smem: reduced iters on tid with extent 384, stride 1 are not lowered yet
