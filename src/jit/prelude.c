/*
 * The prelude's generic fragments (native.h: tirx__prelude_frag): the core every generated
 * translation unit starts with, and the text of the sections the generic native ops use
 * (native.c). No #include, only what tirx's code uses. f16 and bf16 are 16-bit storage structs
 * converted through inline PTX (cvt), so NVRTC never parses cuda_fp16.h or cuda_bf16.h.
 *
 * Codegen appends these, the fragments of the registered families (their rules' prelude
 * lists) and those of the kernel's ops, each once, by increasing order. Generic fragments take
 * the multiples of 100 and a few numbers between where an owner's text sits inside a section
 * (a family's helpers inside an #if the section opens); an owner's fragment takes a number in
 * between (docs/ARCHITECTURE.md lists them).
 */
#include "../ir/ir.h"

/* Strings longer than the 4095 characters C99 promises to support; GCC and Clang take them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"

/* every kernel: 16-bit types, min/max, fast math, the swizzle */
static const tirx__prelude_frag core_head = {.order = 100, .when = TIRX__PRE_ALWAYS, .text =
    "struct tirx_f16 { unsigned short bits; };\n"
    "struct tirx_bf16 { unsigned short bits; };\n"
    "__device__ __forceinline__ tirx_f16 tirx_f16_bits(unsigned short b) {\n"
    "  tirx_f16 h; h.bits = b; return h;\n"
    "}\n"
    "__device__ __forceinline__ tirx_bf16 tirx_bf16_bits(unsigned short b) {\n"
    "  tirx_bf16 h; h.bits = b; return h;\n"
    "}\n"
    "__device__ __forceinline__ float tirx_f16_to_f32(tirx_f16 h) {\n"
    "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h.bits)); return f;\n"
    "}\n"
    "__device__ __forceinline__ tirx_f16 tirx_f16_from_f32(float f) {\n"
    "  tirx_f16 h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h.bits) : \"f\"(f)); return h;\n"
    "}\n"
    "__device__ __forceinline__ float tirx_bf16_to_f32(tirx_bf16 h) {\n"
    "  return __uint_as_float((unsigned)h.bits << 16);\n"
    "}\n"
    "__device__ __forceinline__ tirx_bf16 tirx_bf16_from_f32(float f) {\n"
    "  tirx_bf16 h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h.bits) : \"f\"(f)); return h;\n"
    "}\n"
    "template <class T> __device__ __forceinline__ T tirx_min(T a, T b) {\n"
    "  return b < a ? b : a;\n"
    "}\n"
    "template <class T> __device__ __forceinline__ T tirx_max(T a, T b) {\n"
    "  return a < b ? b : a;\n"
    "}\n"
    "/* Fast f32 transcendentals (the MUFU unit): 2^x and 1/x, flushing subnormals. */\n"
    "__device__ __forceinline__ float tirx_ex2(float x) {\n"
    "  float y; asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y;\n"
    "}\n"
    "__device__ __forceinline__ float tirx_rcp(float x) {\n"
    "  float y; asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x)); return y;\n"
    "}\n"
    "/* e^x as 2^(x log2 e): relative error about 2 + 1.2|x| f32 ulp (like __expf); the exp of\n"
    " * f16/bf16 expressions. */\n"
    "__device__ __forceinline__ float tirx_fexp(float x) {\n"
    "  return tirx_ex2(x * 1.4426950408889634f);\n"
    "}\n"
    "/* 1 / (1 + e^-x) in four instructions (FMUL, MUFU.EX2, FADD, MUFU.RCP) instead of expf and\n"
    " * an IEEE division: relative error about 3 + 1.2|x| ulp where x < 0, a few ulp where x >= 0;\n"
    " * e^-x = inf gives 0, NaN stays NaN. */\n"
    "__device__ __forceinline__ float tirx_sigmoid(float x) {\n"
    "  return tirx_rcp(1.0f + tirx_fexp(-x));\n"
    "}\n"
    "__device__ __forceinline__ double tirx_sigmoid(double x) {\n"
    "  return 1.0 / (1.0 + exp(-x));\n"
    "}\n"
    "/* The XOR swizzle on an m coordinate in elements: byte address bits [4, 4+bits) ^= bits\n"
    " * [7, 7+bits). */\n"
    "__device__ __forceinline__ int tirx_swizzle(int m, int bits, int elem) {\n"
    "  int byte = m * elem;\n"
    "  return (byte ^ (((byte >> 7) & ((1 << bits) - 1)) << 4)) / elem;\n"
    "}\n"
};
/* every kernel: shared addresses and 16-bit pairs (after a family's comment, order 300). The
 * shared address is the compiler's own conversion, which it sees through: constant offsets
 * fold into the 32-bit address (an asm cvta hid them; PERF-NOTES, session 12). */
static const tirx__prelude_frag core_smem = {.order = 310, .when = TIRX__PRE_ALWAYS, .text =
    "template <class T> __device__ __forceinline__ unsigned tirx_smem_addr(const T *p) {\n"
    "  return (unsigned)__cvta_generic_to_shared(p);\n"
    "}\n"
    "template <class T> __device__ __forceinline__ unsigned tirx_pack2(const T *p) {\n"
    "  return (unsigned)p[0].bits | ((unsigned)p[1].bits << 16);\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void tirx_unpack2(T *p, unsigned u) {\n"
    "  p[0].bits = (unsigned short)u; p[1].bits = (unsigned short)(u >> 16);\n"
    "}\n"
};
/* the sm_90 section: tensor maps (kernel parameters), then the sm_90 block */
static const tirx__prelude_frag bulk_head = {.order = 510, .when = TIRX__PRE_BULK | TIRX__PRE_SYNC, .text =
    "struct alignas(64) tirx_tmap { unsigned long long v[16]; };\n"
    "#if __CUDA_ARCH__ >= 900\n"
};
/* bulk groups, tensor-map prefetch, cluster registers */
static const tirx__prelude_frag bulk = {.order = 530, .when = TIRX__PRE_BULK | TIRX__PRE_SYNC, .text =
    "__device__ __forceinline__ void tirx_bulk_commit() {\n"
    "  asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\");\n"
    "}\n"
    "template <int N, int R> __device__ __forceinline__ void tirx_bulk_wait() {\n"
    "  if (R) asm volatile(\"cp.async.bulk.wait_group.read %0;\" :: \"n\"(N) : \"memory\");\n"
    "  else asm volatile(\"cp.async.bulk.wait_group %0;\" :: \"n\"(N) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_tmap_prefetch(const tirx_tmap *m) {\n"
    "  asm volatile(\"prefetch.tensormap [%0];\" :: \"l\"(m) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ int tirx_cluster_ctarank() {\n"
    "  unsigned r; asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r)); return (int)r;\n"
    "}\n"
    "__device__ __forceinline__ int tirx_cluster_id(int d) {\n"
    "  unsigned r;\n"
    "  if (d == 0) asm volatile(\"mov.u32 %0, %%clusterid.x;\" : \"=r\"(r));\n"
    "  else if (d == 1) asm volatile(\"mov.u32 %0, %%clusterid.y;\" : \"=r\"(r));\n"
    "  else asm volatile(\"mov.u32 %0, %%clusterid.z;\" : \"=r\"(r));\n"
    "  return (int)r;\n"
    "}\n"
};
/* the end of the sm_90 block */
static const tirx__prelude_frag bulk_end = {.order = 560, .when = TIRX__PRE_BULK | TIRX__PRE_SYNC, .text =
    "#endif\n"
};
/* cp.async groups (after a family's copy helper, order 600) */
static const tirx__prelude_frag cp_groups = {.order = 610, .when = TIRX__PRE_CP_ASYNC, .text =
    "__device__ __forceinline__ void tirx_cp_async_commit() {\n"
    "  asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n"
    "}\n"
    "/* Waits until at most N of this thread's groups are pending; wait_all: none, uncommitted\n"
    " * copies included. The data is then visible to this thread: a barrier makes it visible to\n"
    " * the others. */\n"
    "template <int N> __device__ __forceinline__ void tirx_cp_async_wait() {\n"
    "  asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(N) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_cp_async_wait_all() {\n"
    "  asm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n"
    "}\n"
    "#endif\n"
};
/* mbarriers, fences, cluster barriers, elect, named barriers, setmaxnreg, warpgroup groups */
static const tirx__prelude_frag sync = {.order = 700, .when = TIRX__PRE_SYNC, .text =
    "/* Synchronisation and tensor cores (tirx: builder/sync.c, gemm families). mbarriers are\n"
    " * shared 64-bit words; addresses go to PTX as 32-bit shared addresses. */\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "__device__ __forceinline__ void tirx_mbar_init(long long *bar, unsigned count) {\n"
    "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(tirx_smem_addr(bar)), \"r\"(count) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_mbar_arrive(long long *bar) {\n"
    "  asm volatile(\"mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\" :: \"r\"(tirx_smem_addr(bar)) : \"memory\");\n"
    "}\n"
    "/* One arrival on the mbarrier at the same shared offset in the cluster's CTA of rank cta;\n"
    " * release semantics at CTA scope (the default, as CUTLASS's ClusterBarrier::arrive): a\n"
    " * consumer hands a stage it has finished reading back to a producer in another CTA. */\n"
    "__device__ __forceinline__ void tirx_mbar_arrive_cluster(long long *bar, unsigned cta) {\n"
    "  asm volatile(\"{ .reg .b32 r; mapa.shared::cluster.u32 r, %0, %1; mbarrier.arrive.shared::cluster.b64 _, [r]; }\" :: \"r\"(tirx_smem_addr(bar)), \"r\"(cta) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_mbar_expect_tx(long long *bar, unsigned bytes) {\n"
    "  asm volatile(\"mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\" :: \"r\"(tirx_smem_addr(bar)), \"r\"(bytes) : \"memory\");\n"
    "}\n"
    "/* Spins until the phase of parity phase & 1 has completed. */\n"
    "__device__ __forceinline__ void tirx_mbar_wait(long long *bar, unsigned phase) {\n"
    "  unsigned a = tirx_smem_addr(bar), done;\n"
    "  do {\n"
    "    asm volatile(\"{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }\" : \"=r\"(done) : \"r\"(a), \"r\"(phase & 1u) : \"memory\");\n"
    "  } while (!done);\n"
    "}\n"
    "__device__ __forceinline__ void tirx_fence_proxy_async() {\n"
    "  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_fence_mbarrier_init() {\n"
    "  asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_cluster_sync() {\n"
    "  asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
    "}\n"
    "/* True in one lane of the (fully active) warp. */\n"
    "__device__ __forceinline__ bool tirx_elect_one() {\n"
    "  unsigned p; asm volatile(\"{ .reg .pred q; elect.sync _|q, 0xffffffff; selp.u32 %0, 1, 0, q; }\" : \"=r\"(p)); return p != 0;\n"
    "}\n"
    "__device__ __forceinline__ void tirx_named_bar_sync(unsigned id, unsigned n) {\n"
    "  asm volatile(\"bar.sync %0, %1;\" :: \"r\"(id), \"r\"(n) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_named_bar_arrive(unsigned id, unsigned n) {\n"
    "  asm volatile(\"bar.arrive %0, %1;\" :: \"r\"(id), \"r\"(n) : \"memory\");\n"
    "}\n"
    "#endif\n"
    "#ifdef __CUDA_ARCH_FEAT_SM90_ALL\n"
    "template <int R> __device__ __forceinline__ void tirx_setmaxnreg_inc() {\n"
    "  asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\" :: \"n\"(R));\n"
    "}\n"
    "template <int R> __device__ __forceinline__ void tirx_setmaxnreg_dec() {\n"
    "  asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\" :: \"n\"(R));\n"
    "}\n"
    "__device__ __forceinline__ void tirx_wgmma_fence() {\n"
    "  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tirx_wgmma_commit() {\n"
    "  asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n"
    "}\n"
    "template <int N> __device__ __forceinline__ void tirx_wgmma_wait() {\n"
    "  asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(N) : \"memory\");\n"
    "}\n"
};
/* the end of the sm_90a block (after the families' helpers in it) */
static const tirx__prelude_frag sync_end = {.order = 720, .when = TIRX__PRE_SYNC, .text =
    "#endif\n"
};
#pragma GCC diagnostic pop

const tirx__prelude_frag *const tirx__prelude_core[] = {
    &core_head, &core_smem, &bulk_head, &bulk, &bulk_end, &cp_groups, &sync, &sync_end, NULL};
