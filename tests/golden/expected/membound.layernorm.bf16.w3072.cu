build failed: tirx_kernel_build: [layernorm:6] reduce.smem: reduced iters on tid with extent 96, stride 1 are not lowered yet
