/*
 * fuzz_builder.c: libFuzzer harness for the kernel builder (tirx/builder.h), the IR, the CUDA
 * code generator and (sampled) NVRTC.
 *
 * Built by tests/fuzz/meson.build with -Dfuzz=true (clang, -fsanitize=fuzzer,address,
 * undefined; the library is compiled again with the sanitizers). Run it with
 * `tools/fuzz.sh SECONDS builder`, or by hand:
 *
 *     build-fuzz/tests/fuzz/fuzz_builder -max_len=1024 CORPUS_DIR tests/fuzz/corpus/builder
 *
 * Input format (the seed files in tests/fuzz/corpus/builder/ use it)
 * --------------------------------------------------------------------
 *
 *     HEADER OP OP OP ...
 *
 * Every byte string is a valid input: reading past the end yields zero bytes, and values are
 * taken modulo the size of their table. At most MAX_CALLS builder calls run per input.
 *
 *   HEADER (1 byte)
 *     bits 0-5  kernel name: v < 56: name table entry v (see NAME below), else the invalid
 *               names "", "1x", "a-b", ... (table entries 63 + v - 56)
 *     bit 6     at the end, close the for/if blocks the harness believes open
 *     bit 7     at the end, tirx_set_block(128, 1, 1) when no tirx_set_block call was made
 *
 *   OP = one opcode byte (modulo N_OPS) followed by its operands:
 *
 *     op  call                         operands
 *     0   tirx_param_int               NAME DTYPE
 *     1   tirx_param_scalar            NAME DTYPE
 *     2   tirx_param_tensor            NAME DTYPE RANK FLAGS  RANK x E(shape)  [LAYOUT]
 *     3   tirx_param_tensor_strided    NAME DTYPE RANK FLAGS  RANK x E(shape)  STRIDES
 *     4   tirx_alloc_shared            NAME DTYPE RANK FLAGS  RANK x DIM  [LAYOUT]
 *     5   tirx_alloc_local             NAME DTYPE RANK FLAGS  RANK x DIM  [LAYOUT]
 *     6   tirx_tensor_dim              T SMALL(dim)
 *     7   tensor accessors             T                 (tirx_tensor_rank/dtype/name)
 *     8   tirx_int                     INT
 *     9   tirx_int_typed               INT DTYPE
 *     10  tirx_float                   FLOAT DTYPE
 *     11  tirx_bool                    BYTE(bit 0)
 *     12  thread_idx ... warp_id       BYTE(which % 7) SMALL(dim)
 *     13  binary operator              BYTE(op % 22) E(x) E(y)
 *                                      add sub mul div mod min max ceildiv bit_and bit_or
 *                                      bit_xor shl shr eq ne lt le gt ge and or pow
 *     14  unary operator / math        BYTE(u % 32) E(x)
 *                                      0 neg, 1 not, 2-10 exp exp2 log log2 sqrt rsqrt tanh
 *                                      erf fabs, 11-24 tirx_math(op 0..13), 25-28 tirx_math
 *                                      with op -1, 14, INT_MIN, INT_MAX, 29-31 neg
 *     15  tirx_select                  E(cond) E(x) E(y)
 *     16  tirx_cast                    E(x) DTYPE
 *     17  tirx_load                    T COUNT  n x E(index)
 *     18  tirx_shfl_xor / _down        BYTE(bit 0: down) E(x) E(mask/delta)
 *     19  tirx_for_begin               NAME E(lo) E(hi) E(step) KIND
 *     20  tirx_for_end
 *     21  tirx_if_begin                E(cond)
 *     22  tirx_else
 *     23  tirx_if_end
 *     24  tirx_let                     NAME E(value)
 *     25  tirx_var                     NAME DTYPE E(init)
 *     26  tirx_assign                  E(var) E(value)
 *     27  tirx_store                   T COUNT  n x E(index)  E(value)
 *     28  tirx_atomic_add              T COUNT  n x E(index)  E(value)
 *     29  tirx_sync_threads / _warp    BYTE(bit 0: warp)
 *     30  tirx_set_grid                E(x) E(y) E(z)
 *     31  tirx_set_block               BLOCKDIM BLOCKDIM BLOCKDIM
 *     32  tirx_set_shared_bytes        E(bytes)
 *     33  a call with a NULL builder   BYTE(which function)
 *     34  tirx_kernel_build (midway)   -           (the builder stays usable)
 *     35  repeat                       BYTE(count % 80 + 1) OP   (runs OP count times,
 *                                      re-reading its operand bytes; OP may not be a repeat)
 *     36  chain                        BYTE(k) E(x)  (x = op(x, x) k % 24 times: depth/size)
 *     37  tirx_param_set_policy        E(param) POLICY
 *   The sm_90 vocabulary (scopes, regions, synchronisation, TMA, gemm):
 *     38  tirx_team_begin              TEAM
 *     39  tirx_team_end
 *     40  tirx_filter_begin            AXIS LO HI
 *     41  tirx_filter_end
 *     42  tirx_region_new              T COUNT  n x E(begin)  BYTE(bit 0: extents NULL, bit 1:
 *                                      all extents 1)  n x DIM(extent)
 *     43  tirx_whole / tirx_broadcast  BYTE(bit 0: broadcast) T | E
 *     44  tirx_alloc_mbarrier          NAME INT(n)  (then a region of its element 0)
 *     45  mbarrier statements          BYTE(w % 5) R(bar)  w: 0 init INT(count), 1 arrive,
 *                                      2 arrive_cluster E, 3 expect_tx E, 4 wait E
 *     46  plain statements             BYTE(% 6) fence_proxy_async, fence_mbarrier_init,
 *                                      cluster_sync, wgmma_fence, wgmma_commit, bulk_commit
 *     47  cluster expressions          BYTE(% 3) cluster_ctarank, cluster_id SMALL, elect_one
 *     48  tirx_setmaxnreg              IARG(regs) BYTE(bit 0: inc)
 *     49  named barriers               BYTE(bit 0: arrive) IARG(id) IARG(nthreads)
 *     50  tirx_wgmma_wait / bulk_wait  BYTE(bit 0: bulk) IARG(n) BYTE(bit 0: read_only)
 *     51  tirx_gemm / tirx_gemm_async  BYTE(bit 0 async, 1 cfg NULL, 2-4 family, 5 shape,
 *                                      6 accumulate) R(d) R(a) R(b) [3 x BYTE(shape)] [E(acc)]
 *     52  tirx_copy_async              BYTE(bit 0 cfg NULL, 1 barrier, 2 multicast, 3 family,
 *                                      4 "tma" or 5 "cp_async" or a bogus family) R(dst)
 *                                      R(src) [R(bar)] [E] (a load without a barrier is
 *                                      cp.async's)
 *     53  tirx_tmap_prefetch           T
 *     54  tirx_set_cluster             IARG IARG IARG
 *     55  tirx_copy / tirx_reduce / tirx_fill   BYTE(w % 3, bits 2-4 family, 5 cfg NULL)
 *                                      R(dst) R(src) [BYTE(op, bit 7 accumulate) BYTE(axes)]
 *                                      | R(dst) E(value)
 *     56  recipe                       BYTE(w % 4) BYTE BYTE BYTE(flags): a well-formed
 *                                      fragment the bytes would rarely assemble (the layouts
 *                                      that TMA and wgmma need): 0 TMA load/store with an
 *                                      mbarrier (flags bit 5 without bit 1: the tile loaded
 *                                      with cp.async, committed, waited for), 1 wgmma
 *                                      gemm_async + commit + wait in a
 *                                      warpgroup team, 2 mma gemm in a warp team, 3
 *                                      reduce.dsmem in a cluster team (see op_recipe). Its
 *                                      tensors, regions and expressions join the pools.
 *   The dispatch target and cp.async (opcode bytes >= 57 map differently from before these,
 *   byte % 59):
 *     57  tirx_set_target              BYTE: < 0xC0 a good target (sm_80 ... sm_120), else a
 *                                      malformed one, NULL, or an older one (sm_75)
 *     58  cp.async groups              BYTE(w % 3) IARG(n): 0 tirx_cp_async_commit, 1
 *                                      tirx_cp_async_wait n, 2 tirx_cp_async_wait_all
 *
 *   Operands:
 *     E      expression selector, one byte s: 0xFF NULL; 0xFE a FOREIGN expression (one from
 *            another live builder; the next byte picks it); 0x80..0xFD a typed pick: among
 *            the pool entries of the class the argument wants (integer, bool, number, one
 *            dtype, launch-computable integer, variable...) entry (s - 0x80) % count, most
 *            recent first; 0x00..0x7F the pool entry s % count, most recent first. An empty
 *            pool gives NULL.
 *     T      tensor selector, likewise over the tensor pool (0xFF NULL, 0xFE foreign tensor).
 *     R      region selector, likewise over the region pool (0xFF NULL, 0xFE a foreign region:
 *            the foreign builder's shared tensor, broadcast, mbarrier and global element);
 *            typed picks choose among regions of the class the argument wants (one mbarrier,
 *            a shared, global or local tensor).
 *     TEAM   one byte: < 0xF0: b % 5; else -1, 5, INT_MIN, INT_MAX, ...
 *     AXIS LO HI  < 0xF0: laneid + b % 6 (the CTA's thread axes); else m, cta, cbx, reg,
 *            cluster, unregistered axes...; LO: < 0xE0 b % 132, else a boundary (-1, 1024,
 *            INT64_MAX...); HI: < 0xE0 LO + b % 33 (0: empty), else a boundary.
 *     IARG   one byte: < 0xF0: a good value of a small table per call; else -1, 0, INT_MIN,
 *            INT_MAX, 9, 16, -8, 255, 256, 264, 23, 25, 8, 7, 64, 2^20 (bad_small).
 *     NAME   one byte: 0xFF NULL; 0xF0..0xFE a raw string (next byte % 72 = length, then the
 *            bytes, cut at the first NUL); else the name table entry (b % NNAMES): plain
 *            identifiers, C++ keywords, CUDA built-ins and macros, invalid names.
 *     DTYPE  one byte d: d % 16 < 12 is that tirx_dtype (fp8 included); 12..15 are the
 *            out-of-range values -1, 12 (TIRX_DTYPE_COUNT), INT_MIN, INT_MAX.
 *     RANK, SMALL, COUNT   one byte: < 0xF0: a small value (RANK 0..9, SMALL -1..3; COUNT
 *            < 0x80 is the tensor's rank, 0x80..0xEF is b % 10 and 0xEF also passes a NULL
 *            index array); 0xF0.. map to -1, 0, INT_MIN, INT_MAX, 9, 100, ... (oor_int).
 *     FLAGS  one byte: bit 0 passes a NULL shape array, bit 1 a layout (LAYOUT follows).
 *     DIM    one byte: < 0xC0: b % 64 + 1; else 0, -1, 128, 256, 1024, 4096, 65536, 2^31,
 *            2^40, INT64_MAX, INT64_MIN ...
 *     INT    one byte v: < 0xC0: v - 32; 0xC0..0xEF: a table of boundaries (int32, uint32,
 *            int64 limits, shared-memory limits...); 0xF0..: the next 8 bytes (little endian).
 *     FLOAT  one byte: < 0xE0: a table of 32 values (0, -0, halves' limits, inf, NaN, ...);
 *            else the next 8 bytes as a double.
 *     KIND   one byte: < 0xF0: b & 1; else 2, -1, INT_MIN, INT_MAX, 255, ...
 *     POLICY one byte: < 0xF0: b % 3 (DYNAMIC, DIV16, VALUE); else -1, 3, INT_MIN, INT_MAX, ...
 *     BLOCKDIM one byte: < 0xF0: {1,2,4,8,16,32,64,128,256,512,1024,3,5,7,33,1000}[b % 16];
 *            else 0, -1, 1025, 65, 2048, INT_MIN, INT_MAX ...
 *     STRIDES one byte: bit 0: strides NULL; else RANK x E (0xFF: a NULL entry).
 *     LAYOUT one byte k % 16, then its own operands: row-major, col-major, strided, swizzled,
 *            smem tile, mma/wgmma/ldmatrix/warpgroup fragments, a parsed text from a table, a
 *            parsed raw string, flattened, or one from the foreign builder's arena.
 *
 * Invariants (the harness abort()s when one is violated; a returned error is never a finding
 * by itself):
 *   - ASan/UBSan/LSan findings (the sanitizers report them).
 *   - Every call on a builder without an error either succeeds or records an error: the
 *     builder's status becomes non-OK, tirx_builder_error() starts with "tirx_" and the public
 *     function's name (or the function it documents delegating to, e.g. tirx_math for
 *     tirx_exp), tirx_last_status()/tirx_last_error() equal the builder's. Object-returning
 *     calls return non-NULL exactly when the builder stays OK. TIRX_E_INTERNAL never appears.
 *   - Documented rejections are rejected: invalid names, out-of-range or fp8 dtypes (where a
 *     dtype is checked), ranks outside 1..8, loop kinds, math ops and policies outside their
 *     enums, block sizes out of range, weak constants stored/assigned/initialised into a type
 *     they are not exact in. Constants that cannot fail (tirx_int, tirx_bool, in-range
 *     tirx_int_typed, tirx_float with a float dtype, indices with dim 0..2) succeed.
 *   - After the first error the builder is sticky: same status and message, NULL results.
 *   - A NULL builder fails with TIRX_E_NULL_ARG and "<function>: ..." and returns NULL.
 *     tirx_kernel_build(b, NULL) fails with TIRX_E_NULL_ARG and records "tirx_kernel_build:
 *     out is NULL" as b's error when b has none.
 *   - tirx_param_set_policy returns the builder's status after the call (its first error when
 *     it already had one); DYNAMIC on a parameter from tirx_param_int cannot fail.
 *   - The sm_90 calls reject what builder.h documents: NULL, foreign and broadcast regions
 *     where a tensor region is needed, an mbarrier region that is not one element of a shared
 *     i64 tensor, non-integer (or non-bool accumulate) expressions, constants out of range
 *     (mbarrier count, expect_tx bytes, cta_rank, setmaxnreg regs, named barrier id and
 *     nthreads, wait_group counts, cluster dims), warpgroup statements without whole
 *     warpgroups in the block, a multicast without a barrier or a barrier/multicast on a
 *     non-load, tmap_prefetch of a non-parameter, filters with lo >= hi or lo < 0 or on an
 *     axis outside the CTA, scope ends that close nothing, a malformed or pre-sm_80 target,
 *     cp.async wait counts outside 0..63; the fences, cluster_sync, bulk_commit, ctarank,
 *     elect_one, cp.async commit/wait_all and valid set_cluster/bulk_wait/named
 *     barriers/set_target/cp.async waits cannot fail.
 *   - tirx_kernel_build: the status matches tirx_builder_status(), *out is NULL on failure;
 *     an accepted kernel has the builder's name, the declared parameters in order, a source
 *     with an extern "C" entry point of that name; building again gives the same bytes.
 *   - Determinism: the whole input is run twice, each time in fresh builders; the statuses,
 *     error messages, and the source and IR of every accepted kernel must be byte-identical.
 *   - Sampled NVRTC: an accepted kernel whose source hash is 0 modulo $TIRX_FUZZ_NVRTC_EVERY
 *     (default 64; 0 turns it off; 1 compiles every accepted kernel; a kernel that uses the
 *     sm_90 statements, TMA, wgmma or clusters is sampled 8 times as often) is compiled with
 *     tirx_compile() on a compile-only runtime for sm_90a; a failure prints the source and
 *     the NVRTC log and aborts. The choice depends on the source only, so a reproducer
 *     replays it.
 *
 * Environment: TIRX_FUZZ_NVRTC_EVERY (above), TIRX_FUZZ_TRACE=1 (print every call, for
 * reproducers), TIRX_FUZZ_PRINT=1 (print the source of every accepted kernel). To keep fuzzing
 * past known findings while they are being fixed: TIRX_FUZZ_IGNORE=weak (drop the check that
 * a weak constant not exact in the target type is rejected), TIRX_FUZZ_NVRTC_IGNORE=S1|S2|...
 * (an NVRTC failure whose log contains one of the substrings is not a finding).
 *
 * Every builder is destroyed and every kernel released at the end of each input, so
 * LeakSanitizer reports real leaks only.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tirx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#ifdef TIRX_FUZZ_GOLDEN
/* The golden tests (tests/golden/cases.c) replay the seed corpus through this harness and
 * record the source of every kernel that run 1 accepts. */
void tirx_fuzz_golden_kernel(const char *source);
#endif

enum {
  POOL = 256,       /* live expressions the byte stream can refer to */
  TPOOL = 64,       /* live tensors */
  RPOOL = 64,       /* live regions */
  MAX_CALLS = 3000, /* builder calls per run (repeat and chain count each call) */
  MAX_OPEN = 128,   /* the harness's mirror of open for/if blocks */
  MAX_KEPT = 16     /* accepted kernels kept per run for the checks */
};

/* ---- options ---------------------------------------------------------------------------------- */

static long nvrtc_every = 64;
static bool trace;
static bool print_src;
static bool ignore_weak;          /* TIRX_FUZZ_IGNORE contains "weak" */
static char nvrtc_ignore[1024];   /* TIRX_FUZZ_NVRTC_IGNORE: '|'-separated log substrings */

/* ---- the harness's state for one run ------------------------------------------------------- */

/* What the harness believes about a pool expression (a best-effort mirror of the documented
 * type rules; used only to pick plausible operands, never for checks). */
typedef struct meta {
  int dtype;   /* tirx_dtype, -1 unknown */
  bool weak;   /* from tirx_int() */
  bool host;   /* computable at launch */
  bool var;    /* from tirx_var() */
  bool known;  /* a constant with value val */
  bool foreign; /* from the foreign builder */
  bool pint;   /* returned by tirx_param_int() */
  int64_t val;
} meta;

/* What the harness knows about a pool tensor or region (-1: unknown). */
typedef struct tmeta {
  int storage;   /* 0 global, 1 shared, 2 local */
  bool param;    /* a tensor parameter (tirx_param_tensor*) */
  bool foreign;
  int dtype;
  int64_t elems; /* the element count (constant shapes), -1 unknown */
} tmeta;

typedef struct rmeta {
  bool bcast;    /* tirx_broadcast */
  bool foreign;
  int storage;   /* of the tensor; -1 for a broadcast or unknown */
  int dtype;
  int64_t elems; /* product of the extents, -1 unknown */
} rmeta;

typedef struct tbuf {
  char *p;
  size_t n, cap;
} tbuf;

typedef struct run {
  const uint8_t *d;
  size_t n, pos;
  int which; /* 1 or 2 */

  tirx_builder *b;  /* the builder under test */
  tirx_builder *fb; /* the foreign builder */
  tirx_expr *ex[POOL];
  meta em[POOL];
  size_t ntop; /* expressions pushed (ring) */
  tirx_tensor *tn[TPOOL];
  tmeta tm[TPOOL];
  size_t ttop;
  tirx_region *rg[RPOOL];
  rmeta rm[RPOOL];
  size_t rtop;
  tirx_expr *fex[8];
  int nfex;
  tirx_tensor *ftn[4];
  int nftn;
  tirx_region *frg[4];
  int nfrg;

  int open[MAX_OPEN]; /* 1 for, 2 then, 3 else, 4 filter (its guard's if), 5 team */
  int nopen;
  bool block_set;
  int64_t threads; /* of the last accepted tirx_set_block, 0 none */
  int recipes;     /* recipe ops run, for unique names */
  int calls;

  /* Declared parameters, in order (names as accepted). */
  int nparams;
  char pname[TIRX_BUILDER_MAX_PARAMS + 1][80];
  char kname[80];

  /* The first error, for the stickiness check. */
  bool failed;
  tirx_status fstatus;
  char fmsg[4200];

  /* Accepted kernels (released at the end) and the transcript of everything observable. */
  tirx_kernel *kept[MAX_KEPT];
  int nkept;
  tbuf tr;

  /* The current call, for messages. */
  const char *cur;
  int op_index;
} run;

/* ---- failures -------------------------------------------------------------------------------- */

static run *cur_run;

static void fail_(int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void fail_(int line, const char *cond, const char *fmt, ...) {
  fprintf(stderr, "\nfuzz_builder: INVARIANT violated (fuzz_builder.c:%d): %s\n  ", line, cond);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (cur_run)
    fprintf(stderr, "\n  run %d, op %d, call %d (%s)\n  builder: %s: %s", cur_run->which,
            cur_run->op_index, cur_run->calls, cur_run->cur ? cur_run->cur : "-",
            tirx_status_name(tirx_builder_status(cur_run->b)), tirx_builder_error(cur_run->b));
  fprintf(stderr, "\n  last error: %s: %s\n", tirx_status_name(tirx_last_status()),
          tirx_last_error());
  fprintf(stderr, "  (rerun with TIRX_FUZZ_TRACE=1 for the call sequence)\n");
  fflush(stderr);
  abort();
}

#define INVARIANT(cond, ...)                                                                   \
  do {                                                                                         \
    if (!(cond)) fail_(__LINE__, #cond, __VA_ARGS__);                                          \
  } while (0)

/* ---- the transcript ---------------------------------------------------------------------------- */

static void tr_add(tbuf *t, const void *p, size_t n) {
  if (t->n + n > t->cap) {
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->n + n) cap *= 2;
    char *q = realloc(t->p, cap);
    if (!q) {
      fprintf(stderr, "fuzz_builder: out of memory\n");
      abort();
    }
    t->p = q;
    t->cap = cap;
  }
  memcpy(t->p + t->n, p, n);
  t->n += n;
}

static void tr_str(tbuf *t, const char *s) {
  s = s ? s : "(null)";
  tr_add(t, s, strlen(s) + 1);
}

static void tr_printf(tbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tr_printf(tbuf *t, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  tr_str(t, buf);
}

/* ---- input reading ----------------------------------------------------------------------------- */

static uint8_t u8(run *r) { return r->pos < r->n ? r->d[r->pos++] : 0; }

static uint64_t u64(run *r) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)u8(r) << (8 * i);
  return v;
}

static const int oor_int[16] = {-1, 0, INT_MIN, INT_MAX, 9, 100, -2, 255,
                                256, 65536, 16, 17, 64, 65, -100, 1000};

static int rank_val(run *r) {
  uint8_t v = u8(r);
  return v < 0xF0 ? v % 10 : oor_int[v - 0xF0];
}

static int small_val(run *r) { /* dims of specials and tensor_dim: -1..3 */
  uint8_t v = u8(r);
  return v < 0xF0 ? (int)(v % 5) - 1 : oor_int[v - 0xF0];
}

static tirx_dtype dtype_val(run *r) {
  static const int oor[4] = {-1, TIRX_DTYPE_COUNT, INT_MIN, INT_MAX};
  uint8_t v = u8(r) % 16;
  return v < 12 ? (tirx_dtype)v : (tirx_dtype)oor[v - 12];
}

static int64_t dim_val(run *r) {
  static const int64_t big[16] = {0,          -1,       128,          256,
                                  1024,       4096,     65536,        (int64_t)1 << 31,
                                  (int64_t)1 << 40, INT64_MAX, INT64_MIN, 232448,
                                  16384,      3,        (int64_t)1 << 20, -64};
  uint8_t v = u8(r);
  return v < 0xC0 ? v % 64 + 1 : big[v % 16];
}

static int64_t int_val(run *r) {
  static const int64_t tab[48] = {
      0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 127, 128,
      255, 256, 1023, 1024, 1025, 4096, 65535, 65536, -1, -2, -8, -128, -129, -256,
      INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1, (int64_t)INT32_MIN - 1, UINT32_MAX,
      (int64_t)UINT32_MAX + 1, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1,
      (int64_t)1 << 40, (int64_t)1 << 41, (int64_t)1 << 62, -((int64_t)1 << 62), 232448,
      232449, 16384, 256 * 1024};
  uint8_t v = u8(r);
  if (v < 0xC0) return (int64_t)v - 32;
  if (v < 0xF0) return tab[v - 0xC0];
  return (int64_t)u64(r);
}

static double float_val(run *r) {
  static const double tab[32] = {0.0,      -0.0,     1.0,      -1.0,    0.5,     2.0,
                                 3.14159265358979, -2.5, 1e-45,   1.17549435e-38,
                                 1e-310,   65504.0,  65520.0,  -65504.0, 3.4028235e38,
                                 3.5e38,   1.7976931348623157e308, -1.7976931348623157e308,
                                 INFINITY, -INFINITY, NAN,     -NAN,    1e-8,    1e8,
                                 16777217.0, 0.1,    1.0 / 3.0, 100.0,  255.0,   256.0,
                                 1e20,     -1e-20};
  uint8_t v = u8(r);
  if (v < 0xE0) return tab[v % 32];
  uint64_t bits = u64(r);
  double f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static const char long63[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
static const char long64[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_x";

static const char *const names[] = {
    /* plain identifiers, some of them what codegen would invent when uniquifying */
    "i", "j", "k", "n", "m", "x", "y", "z", "a", "b", "acc", "tmp", "v", "M", "N", "K", "x_1",
    "i_1", "_", "_x", "a0", "x_stride0", "kernel", "k2", "vector_add", long63,
    /* valid identifiers that are C++ keywords, CUDA built-ins, macros or library names */
    "int", "for", "min", "exp", "threadIdx", "float", "main", "__syncthreads", "tirx", "auto",
    "signed", "half", "fmodf", "dim3", "printf", "NULL", "__CUDA_ARCH__", "__LINE__",
    "__cplusplus", "__CUDACC__", "INFINITY", "__half", "size_t", "asm", "__restrict__",
    "_Bool", "bool", "true", "unsigned", "blockDim", "uint3", "__float_as_int", "assert",
    "__noinline__", "__host__", "warpSize", "TIRX_F32",
    /* invalid names */
    "", "1x", "a-b", "a b", "tirx_x", "tirx_", "x.y", "\xc3\xa9", long64, "x\n", "$x"};
enum { NNAMES = (int)(sizeof names / sizeof names[0]) };
_Static_assert(NNAMES >= 71, "the header maps kernel names onto entries 0..70");

/* A name operand; buf receives raw strings. */
static const char *name_val(run *r, char *buf) {
  uint8_t v = u8(r);
  if (v == 0xFF) return NULL;
  if (v >= 0xF0) {
    int len = u8(r) % 72;
    int k = 0;
    for (int i = 0; i < len; i++) {
      uint8_t c = u8(r);
      if (!c) break;
      buf[k++] = (char)c;
    }
    buf[k] = '\0';
    return buf;
  }
  return names[v % NNAMES];
}

/* The documented rule for names (tirx_builder_create): [A-Za-z_][A-Za-z0-9_]*, 1..63
 * characters, not starting with "tirx_". */
static bool name_valid(const char *s) {
  if (!s) return false;
  size_t n = strlen(s);
  if (n == 0 || n > TIRX_BUILDER_MAX_NAME) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!(alpha || (i > 0 && c >= '0' && c <= '9'))) return false;
  }
  return strncmp(s, "tirx_", 5) != 0;
}

static bool dtype_in_enum(int t) { return t >= 0 && t < TIRX_DTYPE_COUNT; }
static bool dtype_usable(int t) {
  return dtype_in_enum(t) && t != TIRX_FP8_E4M3 && t != TIRX_FP8_E5M2;
}
static bool is_int(int t) {
  return t == TIRX_I8 || t == TIRX_U8 || t == TIRX_I32 || t == TIRX_U32 || t == TIRX_I64;
}
static bool is_float(int t) {
  return t == TIRX_F32 || t == TIRX_F64 || t == TIRX_F16 || t == TIRX_BF16;
}
static bool int_fits(int64_t v, int t) {
  switch (t) {
  case TIRX_I8: return v >= -128 && v <= 127;
  case TIRX_U8: return v >= 0 && v <= 255;
  case TIRX_I32: return v >= INT32_MIN && v <= INT32_MAX;
  case TIRX_U32: return v >= 0 && v <= (int64_t)UINT32_MAX;
  case TIRX_I64: return true;
  case TIRX_BOOL: return v == 0 || v == 1;
  default: return false;
  }
}

/* ---- pools ------------------------------------------------------------------------------------- */

enum want {
  W_ANY = 0,
  W_INT,      /* an integer */
  W_HOST,     /* an integer computable at launch */
  W_BOOL,
  W_NUM,      /* integer or float */
  W_FLOAT,
  W_LIKE,     /* compatible with a given dtype (same, weak, or both integers) */
  W_VAR,      /* from tirx_var */
  W_SHFL      /* f32, f64, i32, u32, i64 */
};

static size_t pool_count(size_t top, size_t cap) { return top < cap ? top : cap; }

static bool matches(const meta *m, int want, int like) {
  switch (want) {
  case W_INT: return is_int(m->dtype);
  case W_HOST: return is_int(m->dtype) && m->host;
  case W_BOOL: return m->dtype == TIRX_BOOL;
  case W_NUM: return is_int(m->dtype) || is_float(m->dtype);
  case W_FLOAT: return is_float(m->dtype);
  case W_LIKE:
    if (like < 0) return m->dtype != TIRX_BOOL;
    return m->dtype == like || (m->weak && like != TIRX_BOOL) ||
           (is_int(m->dtype) && is_int(like));
  case W_VAR: return m->var;
  case W_SHFL:
    return m->dtype == TIRX_F32 || m->dtype == TIRX_F64 || m->dtype == TIRX_I32 ||
           m->dtype == TIRX_U32 || m->dtype == TIRX_I64;
  default: return true;
  }
}

static const meta unknown_meta = {-1, false, false, false, false, false, false, 0};

/* An expression operand; *m receives what the harness knows about it. */
static tirx_expr *pick_expr(run *r, int want, int like, meta *m) {
  uint8_t s = u8(r);
  *m = unknown_meta;
  if (s == 0xFF) return NULL;
  if (s == 0xFE) {
    if (!r->nfex) return NULL;
    m->foreign = true;
    return r->fex[u8(r) % r->nfex];
  }
  size_t cnt = pool_count(r->ntop, POOL);
  if (!cnt) return NULL;
  if (s >= 0x80) {
    size_t hits[POOL];
    size_t nh = 0;
    for (size_t j = 0; j < cnt; j++) {
      size_t idx = (r->ntop - 1 - j) % POOL;
      if (matches(&r->em[idx], want, like)) hits[nh++] = idx;
    }
    if (nh) {
      size_t idx = hits[(size_t)(s - 0x80) % nh];
      *m = r->em[idx];
      return r->ex[idx];
    }
  }
  size_t idx = (r->ntop - 1 - s % cnt) % POOL;
  *m = r->em[idx];
  return r->ex[idx];
}

static const tmeta unknown_tmeta = {-1, false, false, -1, -1};

/* A tensor operand; *bad is set when it is NULL or foreign (the call must fail); *tm (when
 * not NULL) receives what the harness knows about it. */
static tirx_tensor *pick_tensor_m(run *r, bool *bad, tmeta *tm) {
  uint8_t s = u8(r);
  tmeta dummy;
  if (!tm) tm = &dummy;
  *tm = unknown_tmeta;
  *bad = true;
  if (s == 0xFF) return NULL;
  if (s == 0xFE) {
    if (!r->nftn) return NULL;
    tm->foreign = true;
    return r->ftn[u8(r) % r->nftn];
  }
  size_t cnt = pool_count(r->ttop, TPOOL);
  if (!cnt) return NULL;
  *bad = false;
  size_t idx = (r->ttop - 1 - s % cnt) % TPOOL;
  *tm = r->tm[idx];
  return r->tn[idx];
}

static tirx_tensor *pick_tensor(run *r, bool *bad) { return pick_tensor_m(r, bad, NULL); }

/* Classes of region operands for typed picks. */
enum rwant { R_ANY = 0, R_MBAR, R_TENSOR, R_SHARED, R_GLOBAL, R_LOCAL };

static bool rmatches(const rmeta *m, int want) {
  switch (want) {
  case R_MBAR: return m->storage == 1 && m->dtype == TIRX_I64 && m->elems == 1;
  case R_TENSOR: return !m->bcast;
  case R_SHARED: return m->storage == 1;
  case R_GLOBAL: return m->storage == 0;
  case R_LOCAL: return m->storage == 2;
  default: return true;
  }
}

static const rmeta unknown_rmeta = {false, false, -1, -1, -1};

/* A region operand (the selector byte as for E: 0xFF NULL, 0xFE foreign, 0x80.. typed pick
 * of class want, else by index); *m receives what the harness knows. */
static tirx_region *pick_region(run *r, int want, rmeta *m) {
  uint8_t s = u8(r);
  *m = unknown_rmeta;
  if (s == 0xFF) return NULL;
  if (s == 0xFE) {
    if (!r->nfrg) return NULL;
    m->foreign = true;
    return r->frg[u8(r) % r->nfrg];
  }
  size_t cnt = pool_count(r->rtop, RPOOL);
  if (!cnt) return NULL;
  if (s >= 0x80) {
    size_t hits[RPOOL];
    size_t nh = 0;
    for (size_t j = 0; j < cnt; j++) {
      size_t idx = (r->rtop - 1 - j) % RPOOL;
      if (rmatches(&r->rm[idx], want)) hits[nh++] = idx;
    }
    if (nh) {
      size_t idx = hits[(size_t)(s - 0x80) % nh];
      *m = r->rm[idx];
      return r->rg[idx];
    }
  }
  size_t idx = (r->rtop - 1 - s % cnt) % RPOOL;
  *m = r->rm[idx];
  return r->rg[idx];
}

static void push_region(run *r, tirx_region *g, rmeta m) {
  if (!g) return;
  size_t idx = r->rtop % RPOOL;
  r->rg[idx] = g;
  r->rm[idx] = m;
  r->rtop++;
}

/* A region is certainly not one mbarrier (the mbarrier statements must reject it). */
static bool not_mbar(const tirx_region *g, const rmeta *m) {
  return !g || m->foreign || m->bcast || (m->storage >= 0 && m->storage != 1) ||
         (m->dtype >= 0 && m->dtype != TIRX_I64) || (m->elems >= 0 && m->elems != 1);
}

static void push_expr(run *r, tirx_expr *e, meta m) {
  if (!e) return;
  size_t idx = r->ntop % POOL;
  r->ex[idx] = e;
  r->em[idx] = m;
  r->ntop++;
}

static void push_tensor_m(run *r, tirx_tensor *t, tmeta m) {
  if (!t) return;
  r->tn[r->ttop % TPOOL] = t;
  r->tm[r->ttop % TPOOL] = m;
  r->ttop++;
}

/* Whether the integer v is exact in the floating-point dtype t: at most `bits` significant
 * bits (the significand's width), and within f16's range for f16. */
static bool float_exact(int64_t v, int t) {
  int bits = t == TIRX_F64 ? 53 : t == TIRX_F32 ? 24 : t == TIRX_F16 ? 11 : 8;
  uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  if (t == TIRX_F16 && a > 65504) return false;
  while (a && !(a & 1)) a >>= 1;
  return a < ((uint64_t)1 << bits);
}

/* A weak constant that is not exact in the dtype it would adapt to: documented as not
 * adapting ("when the value is exact in it"), so the call must fail. */
static bool weak_misfit(const meta *m, int dtype) {
  if (ignore_weak || !m->weak || !m->known || m->foreign) return false;
  if (is_int(dtype)) return !int_fits(m->val, dtype);
  return is_float(dtype) && !float_exact(m->val, dtype);
}

static meta mk(int dtype, bool host) {
  meta m = unknown_meta;
  m.dtype = dtype;
  m.host = host;
  return m;
}

/* ---- the call contract --------------------------------------------------------------------- */

enum expect { ANY = 0, MUST_FAIL, MUST_OK };

static void pre(run *r, const char *fn) {
  r->cur = fn;
  r->calls++;
  tirx_clear_error();
}

/* The message must start with "fn: " or, when alias is given, "alias: ". */
static bool msg_names(const char *msg, const char *fn, const char *alias) {
  size_t n = strlen(fn);
  if (strncmp(msg, fn, n) == 0 && msg[n] == ':') return true;
  if (alias) {
    n = strlen(alias);
    if (strncmp(msg, alias, n) == 0 && msg[n] == ':') return true;
  }
  return false;
}

/*
 * Checks the contract after a builder call. obj_call: the call returns an object (obj is
 * it). alias: a function the call documents delegating to (NULL: none).
 */
static void post(run *r, const char *fn, const char *alias, bool obj_call, const void *obj,
                 int expect) {
  tirx_status st = tirx_builder_status(r->b);
  const char *msg = tirx_builder_error(r->b);
  INVARIANT(tirx_last_status() != TIRX_E_INTERNAL, "%s reported an internal error: %s", fn,
            tirx_last_error());
  if (trace)
    fprintf(stderr, "  [%d] %s -> %s%s\n", r->calls, fn,
            obj_call ? (obj ? "obj " : "NULL ") : "", tirx_status_name(st));
  if (r->failed) {
    /* Sticky: nothing changes, objects are NULL. */
    INVARIANT(st == r->fstatus, "%s changed the sticky status %s to %s", fn,
              tirx_status_name(r->fstatus), tirx_status_name(st));
    INVARIANT(strcmp(msg, r->fmsg) == 0, "%s changed the sticky message \"%s\" to \"%s\"", fn,
              r->fmsg, msg);
    INVARIANT(!obj_call || !obj, "%s returned an object from a builder with an error", fn);
    return;
  }
  if (st != TIRX_OK) {
    if (trace) fprintf(stderr, "       error: %s\n", msg);
    INVARIANT(strcmp(tirx_status_name(st), "TIRX_UNKNOWN_STATUS") != 0,
              "%s recorded status %d, not a tirx_status", fn, (int)st);
    INVARIANT(strncmp(msg, "tirx_", 5) == 0, "%s: message \"%s\" does not start with tirx_", fn,
              msg);
    INVARIANT(msg_names(msg, fn, alias),
              "%s: message \"%s\" does not start with the function's name", fn, msg);
    INVARIANT(tirx_last_status() == st, "%s recorded %s in the builder but %s as last status",
              fn, tirx_status_name(st), tirx_status_name(tirx_last_status()));
    INVARIANT(strcmp(tirx_last_error(), msg) == 0,
              "%s: tirx_last_error() \"%s\" differs from tirx_builder_error() \"%s\"", fn,
              tirx_last_error(), msg);
    INVARIANT(!obj_call || !obj, "%s recorded an error (%s) but returned an object", fn, msg);
    INVARIANT(expect != MUST_OK, "%s failed where it cannot: %s", fn, msg);
    r->failed = true;
    r->fstatus = st;
    snprintf(r->fmsg, sizeof r->fmsg, "%s", msg);
    tr_printf(&r->tr, "%d fail %d", r->calls, (int)st);
    tr_str(&r->tr, msg);
    return;
  }
  INVARIANT(msg[0] == '\0', "%s: the builder is OK but its error is \"%s\"", fn, msg);
  INVARIANT(!obj_call || obj, "%s returned NULL without recording an error", fn);
  INVARIANT(expect != MUST_FAIL, "%s accepted an argument its documentation rejects", fn);
  INVARIANT(tirx_last_status() == TIRX_OK,
            "%s succeeded but set the last error (%s: %s); successful calls leave it unchanged",
            fn, tirx_status_name(tirx_last_status()), tirx_last_error());
}

/* ---- layouts -------------------------------------------------------------------------------- */

static const char *const layout_texts[] = {
    "(16):(1)",
    "(4,4):(4,1)",
    "(8,8):(1,8)",
    "((2,8),(4,4)):((64,4),(16,1))",
    "(32):(1@laneid)",
    "(4,2):(1@reg,4)",
    "(16):(2)+3",
    "(8):(-1)+7",
    "(8,64):(64,1)^sw(128,2)",
    "(8,32):(32,1)^sw(64,2)",
    "(32):(1)+[2:1@warpid]",
    "(4):(1@tid)",
    "(2,32):(1@reg,1@laneid)",
    "(16):(1)+-2",
    "(8,16):(16,1)^sw(32,2)",
    "(4,8):(8@reg,1@reg)",
};

/* A layout operand for a tensor of the given constant shape (shape NULL: unknown). */
static const tirx_layout *layout_val(run *r, int rank, const int64_t *shape, tirx_dtype dtype) {
  tirx_arena *a = tirx_builder_arena(r->b);
  int64_t sh[16];
  int rk = rank >= 1 && rank <= 8 && shape ? rank : 1;
  for (int k = 0; k < rk; k++) sh[k] = rank >= 1 && rank <= 8 && shape ? shape[k] : 16;
  int esize = dtype_in_enum(dtype) ? tirx_dtype_size(dtype) : 4;
  static const int sw[5] = {32, 64, 128, 0, 48};
  static const int el[5] = {1, 2, 4, 8, 3};
  uint8_t k = u8(r) % 16;
  switch (k) {
  case 0: return tirx_layout_row_major(a, rk, sh);
  case 1: return tirx_layout_col_major(a, rk, sh);
  case 2: {
    int64_t st[16];
    for (int i = 0; i < rk; i++) st[i] = (int8_t)u8(r);
    return tirx_layout_strided(a, rk, sh, st);
  }
  case 3: {
    const tirx_layout *l = tirx_layout_row_major(a, rk, sh);
    int s = sw[u8(r) % 5], e = u8(r) & 1 ? esize : el[u8(r) % 5];
    return l ? tirx_layout_swizzle(a, l, s, e) : NULL;
  }
  case 4: {
    int64_t rows = rk == 2 ? sh[0] : dim_val(r), cols = rk == 2 ? sh[1] : dim_val(r);
    return tirx_layout_smem_tile(a, rows, cols, esize, sw[u8(r) % 5]);
  }
  case 5: return tirx_layout_mma_m16n8k16_a(a);
  case 6: return tirx_layout_mma_m16n8k16_b(a);
  case 7: return tirx_layout_mma_m16n8k16_c(a);
  case 8: return tirx_layout_wgmma_acc(a, 64, (u8(r) % 33) * 8);
  case 9: return tirx_layout_ldmatrix(a, 1 << (u8(r) % 4));
  case 10: return tirx_layout_warpgroup_rows(a, rk >= 1 ? sh[0] : 1, rk >= 2 ? sh[1] : 1);
  case 11:
  case 12: return tirx_layout_parse(a, layout_texts[u8(r) % (sizeof layout_texts /
                                                              sizeof layout_texts[0])]);
  case 13: {
    char buf[80];
    int len = u8(r) % 64, n = 0;
    for (int i = 0; i < len; i++) {
      uint8_t c = u8(r);
      if (!c) break;
      buf[n++] = (char)c;
    }
    buf[n] = '\0';
    return tirx_layout_parse(a, buf);
  }
  case 14: {
    const tirx_layout *l = tirx_layout_row_major(a, rk, sh);
    return l ? tirx_layout_flatten(a, l) : NULL;
  }
  default: return tirx_layout_row_major(tirx_builder_arena(r->fb), rk, sh);
  }
}

/* ---- the foreign builder ------------------------------------------------------------------- */

static void make_foreign(run *r) {
  tirx_builder *f = tirx_builder_create("foreign");
  if (!f) {
    fprintf(stderr, "fuzz_builder: out of memory\n");
    abort();
  }
  r->fb = f;
  tirx_expr *n = tirx_param_int(f, "fn", TIRX_I32);
  r->fex[r->nfex++] = n;
  r->fex[r->nfex++] = tirx_int(f, 5);
  r->fex[r->nfex++] = tirx_float(f, 1.0, TIRX_F32);
  r->fex[r->nfex++] = tirx_bool(f, true);
  r->fex[r->nfex++] = tirx_thread_idx(f, 0);
  r->fex[r->nfex++] = tirx_var(f, "fv", TIRX_F32, NULL);
  r->ftn[r->nftn++] = tirx_param_tensor(f, "ft", TIRX_F32, TIRX_EXPRS(n), NULL);
  r->ftn[r->nftn++] = tirx_alloc_shared(f, "fs", TIRX_I32, TIRX_DIMS(32), NULL);
  r->ftn[r->nftn++] = tirx_alloc_local(f, "fl", TIRX_F32, TIRX_DIMS(4), NULL);
  r->fex[r->nfex++] = tirx_load(f, r->ftn[0], TIRX_EXPRS(r->fex[4]));
  r->frg[r->nfrg++] = tirx_whole(f, r->ftn[1]);
  r->frg[r->nfrg++] = tirx_broadcast(f, r->fex[2]);
  tirx_tensor *fbar = tirx_alloc_mbarrier(f, "fbar", 2);
  r->frg[r->nfrg++] = tirx_region_new(f, fbar, TIRX_EXPRS(tirx_int(f, 1)), (int64_t[]){1});
  r->frg[r->nfrg++] = tirx_region_new(f, r->ftn[0], TIRX_EXPRS(r->fex[1]), (int64_t[]){1});
  INVARIANT(tirx_builder_status(f) == TIRX_OK, "the foreign builder failed: %s",
            tirx_builder_error(f));
}

/* ---- NVRTC ----------------------------------------------------------------------------------- */

static tirx_runtime *rt;
static bool rt_tried;

static void rt_destroy(void) {
  tirx_runtime_destroy(rt);
  rt = NULL;
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* Whether the source uses the sm_90 statements (mbarriers, TMA, wgmma, clusters, setmaxnreg,
 * named barriers) or cp.async: those kernels are compiled 8 times as often. */
static bool uses_sm90(const char *src) {
  static const char *const marks[] = {"tirx_mbar_", "tirx_tma_", "wgmma", "tirx_cluster",
                                      "tirx_bulk_", "setmaxnreg", "tirx_named_bar", "tirx_fence",
                                      "tirx_elect", "dsmem", "tirx_tmap", "tirx_cp_async"};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
    if (strstr(src, marks[i])) return true;
  return false;
}

static void nvrtc_check(tirx_kernel *k) {
  if (nvrtc_every <= 0) return;
  const char *src = tirx_kernel_source(k);
  long every = uses_sm90(src) && nvrtc_every >= 8 ? nvrtc_every / 8 : nvrtc_every;
  if (fnv1a(src) % (uint64_t)every != 0) return;
  if (!rt_tried) {
    rt_tried = true;
    tirx_runtime_options o;
    memset(&o, 0, sizeof o);
    o.compile_only = true;
    o.arch = "sm_90a";
    tirx_status st = tirx_runtime_create(&o, &rt);
    INVARIANT(st == TIRX_OK, "tirx_runtime_create (compile-only, sm_90a) failed: %s",
              tirx_last_error());
    atexit(rt_destroy);
  }
  tirx_compiled *c = NULL;
  tirx_clear_error();
  tirx_status st = tirx_compile(rt, k, "sm_90a", &c);
  if (st == TIRX_E_COMPILE && nvrtc_ignore[0]) {
    /* A known failure being triaged: skip it when its log has one of the substrings. */
    char pats[sizeof nvrtc_ignore];
    memcpy(pats, nvrtc_ignore, sizeof pats);
    for (char *save = NULL, *p = strtok_r(pats, "|", &save); p; p = strtok_r(NULL, "|", &save))
      if (*p && strstr(tirx_last_error(), p)) return;
  }
  if (st != TIRX_OK) {
    fprintf(stderr, "\nfuzz_builder: an ACCEPTED kernel does not compile with NVRTC (%s)\n"
                    "---- source ----\n%s\n---- NVRTC log / error ----\n%s\n",
            tirx_status_name(st), src, tirx_last_error());
  }
  INVARIANT(st == TIRX_OK, "tirx_compile of accepted kernel %s failed: %s", tirx_kernel_name(k),
            tirx_status_name(st));
  size_t size = 0;
  INVARIANT(tirx_compiled_cubin(c, &size) && size > 0, "tirx_compile gave no cubin");
  tirx_compiled_destroy(c);
}

/* ---- building ---------------------------------------------------------------------------------- */

static void check_kernel(run *r, tirx_kernel *k) {
  const char *src = tirx_kernel_source(k), *ir = tirx_kernel_ir_str(k);
  INVARIANT(src && src[0], "an accepted kernel has no source");
  INVARIANT(ir, "an accepted kernel has no IR text");
  INVARIANT(tirx_kernel_name(k) && strcmp(tirx_kernel_name(k), r->kname) == 0,
            "kernel name \"%s\", builder name \"%s\"", tirx_kernel_name(k), r->kname);
  char entry[128];
  snprintf(entry, sizeof entry, " %s(", r->kname);
  INVARIANT(strstr(src, "extern \"C\"") && strstr(src, entry),
            "the source has no extern \"C\" entry point %s", r->kname);
  INVARIANT(tirx_kernel_num_params(k) == r->nparams, "kernel has %d parameters, declared %d",
            tirx_kernel_num_params(k), r->nparams);
  for (int i = 0; i < r->nparams; i++) {
    const char *p = tirx_kernel_param_name(k, i);
    INVARIANT(p && strcmp(p, r->pname[i]) == 0, "parameter %d is \"%s\", declared \"%s\"", i,
              p ? p : "(null)", r->pname[i]);
  }
  INVARIANT(!tirx_kernel_param_name(k, -1) && !tirx_kernel_param_name(k, r->nparams) &&
                !tirx_kernel_param_name(k, INT_MIN),
            "tirx_kernel_param_name out of range is not NULL");
  INVARIANT(tirx_kernel_retain(k) == k, "tirx_kernel_retain did not return k");
  tirx_kernel_release(k);
  if (print_src) fprintf(stderr, "---- accepted kernel (run %d) ----\n%s\n", r->which, src);
#ifdef TIRX_FUZZ_GOLDEN
  if (r->which == 1) tirx_fuzz_golden_kernel(src);
#endif
}

static void do_build(run *r) {
  pre(r, "tirx_kernel_build");
  bool was_failed = r->failed;
  tirx_kernel *k = (tirx_kernel *)(uintptr_t)1;
  tirx_status st = tirx_kernel_build(r->b, &k);
  INVARIANT(tirx_last_status() != TIRX_E_INTERNAL, "tirx_kernel_build: internal error: %s",
            tirx_last_error());
  if (trace)
    fprintf(stderr, "  [%d] tirx_kernel_build -> %s %s\n", r->calls, tirx_status_name(st),
            st ? tirx_builder_error(r->b) : "");
  if (st != TIRX_OK) {
    INVARIANT(k == NULL, "tirx_kernel_build failed (%s) but *out is not NULL",
              tirx_status_name(st));
    INVARIANT(tirx_builder_status(r->b) == st, "tirx_kernel_build returned %s, builder has %s",
              tirx_status_name(st), tirx_status_name(tirx_builder_status(r->b)));
    INVARIANT(tirx_last_status() == st, "tirx_kernel_build returned %s, last status %s",
              tirx_status_name(st), tirx_status_name(tirx_last_status()));
    const char *msg = tirx_builder_error(r->b);
    INVARIANT(strncmp(msg, "tirx_", 5) == 0, "tirx_kernel_build: message \"%s\"", msg);
    if (was_failed) {
      INVARIANT(st == r->fstatus && strcmp(msg, r->fmsg) == 0,
                "tirx_kernel_build on a failed builder: %s \"%s\", first error %s \"%s\"",
                tirx_status_name(st), msg, tirx_status_name(r->fstatus), r->fmsg);
    } else {
      INVARIANT(msg_names(msg, "tirx_kernel_build", NULL),
                "tirx_kernel_build: message \"%s\" does not start with the function's name",
                msg);
      INVARIANT(strcmp(tirx_last_error(), msg) == 0,
                "tirx_kernel_build: last error \"%s\" differs from the builder's \"%s\"",
                tirx_last_error(), msg);
      r->failed = true;
      r->fstatus = st;
      snprintf(r->fmsg, sizeof r->fmsg, "%s", msg);
    }
    tr_printf(&r->tr, "%d build %d", r->calls, (int)st);
    tr_str(&r->tr, msg);
    return;
  }
  INVARIANT(!was_failed, "tirx_kernel_build succeeded on a builder with an error");
  INVARIANT(k && k != (tirx_kernel *)(uintptr_t)1, "tirx_kernel_build: OK but no kernel");
  INVARIANT(tirx_builder_status(r->b) == TIRX_OK, "tirx_kernel_build: OK but the builder failed");
  check_kernel(r, k);
  if (r->which == 1) nvrtc_check(k);
  tr_printf(&r->tr, "%d build ok", r->calls);
  tr_str(&r->tr, tirx_kernel_source(k));
  tr_str(&r->tr, tirx_kernel_ir_str(k));
  if (r->nkept < MAX_KEPT)
    r->kept[r->nkept++] = k;
  else
    tirx_kernel_release(k);
}

/* ---- calls with a NULL builder -------------------------------------------------------------- */

static void null_builder(run *r) {
  static const int64_t dims[1] = {4};
  tirx_expr *e = r->nfex ? r->fex[0] : NULL;
  tirx_expr *idx[1] = {e};
  const void *o = NULL;
  bool obj = true;
  const char *fn;
  uint8_t w = u8(r) % 80;
  tirx_region *fr = r->nfrg ? r->frg[0] : NULL;
  tirx_clear_error();
  switch (w) {
  case 0: fn = "tirx_param_int"; o = tirx_param_int(NULL, "n", TIRX_I32); break;
  case 1: fn = "tirx_param_scalar"; o = tirx_param_scalar(NULL, "s", TIRX_F32); break;
  case 2: fn = "tirx_param_tensor"; o = tirx_param_tensor(NULL, "t", TIRX_F32, 1, idx, NULL); break;
  case 3:
    fn = "tirx_param_tensor_strided";
    o = tirx_param_tensor_strided(NULL, "t", TIRX_F32, 1, idx, NULL);
    break;
  case 4: fn = "tirx_alloc_shared"; o = tirx_alloc_shared(NULL, "s", TIRX_F32, 1, dims, NULL); break;
  case 5: fn = "tirx_alloc_local"; o = tirx_alloc_local(NULL, "l", TIRX_F32, 1, dims, NULL); break;
  case 6: fn = "tirx_tensor_dim"; o = tirx_tensor_dim(NULL, r->nftn ? r->ftn[0] : NULL, 0); break;
  case 7: fn = "tirx_int"; o = tirx_int(NULL, 1); break;
  case 8: fn = "tirx_int_typed"; o = tirx_int_typed(NULL, 1, TIRX_I32); break;
  case 9: fn = "tirx_float"; o = tirx_float(NULL, 1.0, TIRX_F32); break;
  case 10: fn = "tirx_bool"; o = tirx_bool(NULL, true); break;
  case 11: fn = "tirx_thread_idx"; o = tirx_thread_idx(NULL, 0); break;
  case 12: fn = "tirx_block_idx"; o = tirx_block_idx(NULL, 0); break;
  case 13: fn = "tirx_lane_id"; o = tirx_lane_id(NULL); break;
  case 14: fn = "tirx_add"; o = tirx_add(NULL, e, e); break;
  case 15: fn = "tirx_lt"; o = tirx_lt(NULL, e, e); break;
  case 16: fn = "tirx_and"; o = tirx_and(NULL, e, e); break;
  case 17: fn = "tirx_not"; o = tirx_not(NULL, e); break;
  case 18: fn = "tirx_neg"; o = tirx_neg(NULL, e); break;
  case 19: fn = "tirx_select"; o = tirx_select(NULL, e, e, e); break;
  case 20: fn = "tirx_cast"; o = tirx_cast(NULL, e, TIRX_F32); break;
  case 21: fn = "tirx_math"; o = tirx_math(NULL, TIRX_MATH_EXP, e); break;
  case 22: fn = "tirx_load"; o = tirx_load(NULL, r->nftn ? r->ftn[0] : NULL, 1, idx); break;
  case 23: fn = "tirx_shfl_xor"; o = tirx_shfl_xor(NULL, e, e); break;
  case 24: fn = "tirx_for_begin"; o = tirx_for_begin(NULL, "i", e, e, NULL, TIRX_LOOP_SERIAL); break;
  case 25: fn = "tirx_let"; o = tirx_let(NULL, "v", e); break;
  case 26: fn = "tirx_var"; o = tirx_var(NULL, "v", TIRX_F32, NULL); break;
  case 27: fn = "tirx_for_end"; obj = false; tirx_for_end(NULL); break;
  case 28: fn = "tirx_if_begin"; obj = false; tirx_if_begin(NULL, e); break;
  case 29: fn = "tirx_else"; obj = false; tirx_else(NULL); break;
  case 30: fn = "tirx_if_end"; obj = false; tirx_if_end(NULL); break;
  case 31: fn = "tirx_assign"; obj = false; tirx_assign(NULL, e, e); break;
  case 32: fn = "tirx_store"; obj = false; tirx_store(NULL, r->nftn ? r->ftn[0] : NULL, 1, idx, e); break;
  case 33:
    fn = "tirx_atomic_add";
    obj = false;
    tirx_atomic_add(NULL, r->nftn ? r->ftn[0] : NULL, 1, idx, e);
    break;
  case 34: fn = "tirx_sync_threads"; obj = false; tirx_sync_threads(NULL); break;
  case 35: fn = "tirx_sync_warp"; obj = false; tirx_sync_warp(NULL); break;
  case 36: fn = "tirx_set_grid"; obj = false; tirx_set_grid(NULL, e, NULL, NULL); break;
  case 37: fn = "tirx_set_block"; obj = false; tirx_set_block(NULL, 32, 1, 1); break;
  case 38: fn = "tirx_set_shared_bytes"; obj = false; tirx_set_shared_bytes(NULL, e); break;
  case 39: fn = "tirx_builder_arena"; o = tirx_builder_arena(NULL); break;
  case 40: fn = "tirx_pow"; o = tirx_pow(NULL, e, e); break;
  case 41: fn = "tirx_ceildiv"; o = tirx_ceildiv(NULL, e, e); break;
  case 44: fn = "tirx_alloc_mbarrier"; o = tirx_alloc_mbarrier(NULL, "bar", 1); break;
  case 45: fn = "tirx_mbarrier_init"; obj = false; tirx_mbarrier_init(NULL, fr, 1); break;
  case 46: fn = "tirx_mbarrier_arrive"; obj = false; tirx_mbarrier_arrive(NULL, fr); break;
  case 47:
    fn = "tirx_mbarrier_arrive_cluster";
    obj = false;
    tirx_mbarrier_arrive_cluster(NULL, fr, e);
    break;
  case 48: fn = "tirx_mbarrier_expect_tx"; obj = false; tirx_mbarrier_expect_tx(NULL, fr, e); break;
  case 49: fn = "tirx_mbarrier_wait"; obj = false; tirx_mbarrier_wait(NULL, fr, e); break;
  case 50: fn = "tirx_fence_proxy_async"; obj = false; tirx_fence_proxy_async(NULL); break;
  case 51: fn = "tirx_fence_mbarrier_init"; obj = false; tirx_fence_mbarrier_init(NULL); break;
  case 52: fn = "tirx_cluster_sync"; obj = false; tirx_cluster_sync(NULL); break;
  case 53: fn = "tirx_cluster_ctarank"; o = tirx_cluster_ctarank(NULL); break;
  case 54: fn = "tirx_cluster_id"; o = tirx_cluster_id(NULL, 0); break;
  case 55: fn = "tirx_elect_one"; o = tirx_elect_one(NULL); break;
  case 56: fn = "tirx_setmaxnreg"; obj = false; tirx_setmaxnreg(NULL, 240, true); break;
  case 57: fn = "tirx_named_barrier_sync"; obj = false; tirx_named_barrier_sync(NULL, 1, 64); break;
  case 58:
    fn = "tirx_named_barrier_arrive";
    obj = false;
    tirx_named_barrier_arrive(NULL, 1, 64);
    break;
  case 59: fn = "tirx_wgmma_fence"; obj = false; tirx_wgmma_fence(NULL); break;
  case 60: fn = "tirx_wgmma_commit"; obj = false; tirx_wgmma_commit(NULL); break;
  case 61: fn = "tirx_wgmma_wait"; obj = false; tirx_wgmma_wait(NULL, 0); break;
  case 62: fn = "tirx_gemm"; obj = false; tirx_gemm(NULL, fr, fr, fr, NULL); break;
  case 63: fn = "tirx_gemm_async"; obj = false; tirx_gemm_async(NULL, fr, fr, fr, NULL); break;
  case 64: fn = "tirx_copy_async"; obj = false; tirx_copy_async(NULL, fr, fr, NULL); break;
  case 65: fn = "tirx_bulk_commit"; obj = false; tirx_bulk_commit(NULL); break;
  case 66: fn = "tirx_bulk_wait"; obj = false; tirx_bulk_wait(NULL, 0, false); break;
  case 67:
    fn = "tirx_tmap_prefetch";
    obj = false;
    tirx_tmap_prefetch(NULL, r->nftn ? r->ftn[0] : NULL);
    break;
  case 68: fn = "tirx_set_cluster"; obj = false; tirx_set_cluster(NULL, 2, 1, 1); break;
  case 69:
    fn = "tirx_region_new";
    o = tirx_region_new(NULL, r->nftn ? r->ftn[0] : NULL, 1, idx, dims);
    break;
  case 70: fn = "tirx_whole"; o = tirx_whole(NULL, r->nftn ? r->ftn[1] : NULL); break;
  case 71: fn = "tirx_broadcast"; o = tirx_broadcast(NULL, e); break;
  case 72: fn = "tirx_team_begin"; obj = false; tirx_team_begin(NULL, TIRX_TEAM_WARP); break;
  case 73: fn = "tirx_team_end"; obj = false; tirx_team_end(NULL); break;
  case 74:
    fn = "tirx_filter_begin";
    obj = false;
    tirx_filter_begin(NULL, TIRX_AXIS_TID, 0, 1);
    break;
  case 75: fn = "tirx_filter_end"; obj = false; tirx_filter_end(NULL); break;
  case 76: fn = "tirx_set_target"; obj = false; tirx_set_target(NULL, "sm_80"); break;
  case 77: fn = "tirx_cp_async_commit"; obj = false; tirx_cp_async_commit(NULL); break;
  case 78: fn = "tirx_cp_async_wait"; obj = false; tirx_cp_async_wait(NULL, 1); break;
  case 79: fn = "tirx_cp_async_wait_all"; obj = false; tirx_cp_async_wait_all(NULL); break;
  case 42: {
    fn = "tirx_kernel_build";
    obj = false;
    tirx_kernel *k = (tirx_kernel *)(uintptr_t)1;
    tirx_status st = tirx_kernel_build(NULL, &k);
    INVARIANT(st == TIRX_E_NULL_ARG && k == NULL, "tirx_kernel_build(NULL, &k): %s",
              tirx_status_name(st));
    break;
  }
  default: {
    /* A NULL out on this builder: TIRX_E_NULL_ARG, nothing built, recorded as the builder's
     * error when it has none (like any argument error). */
    fn = "tirx_kernel_build";
    obj = false;
    tirx_status st = tirx_kernel_build(r->b, NULL);
    INVARIANT(st == TIRX_E_NULL_ARG, "tirx_kernel_build(b, NULL) returned %s",
              tirx_status_name(st));
    if (!r->failed) {
      INVARIANT(tirx_builder_status(r->b) == TIRX_E_NULL_ARG &&
                    strcmp(tirx_builder_error(r->b), "tirx_kernel_build: out is NULL") == 0,
                "tirx_kernel_build(b, NULL) did not record its error: %s \"%s\"",
                tirx_status_name(tirx_builder_status(r->b)), tirx_builder_error(r->b));
      r->failed = true;
      r->fstatus = TIRX_E_NULL_ARG;
      snprintf(r->fmsg, sizeof r->fmsg, "%s", tirx_builder_error(r->b));
    }
    break;
  }
  }
  if (trace) fprintf(stderr, "  NULL builder: %s -> %s\n", fn, tirx_last_error());
  INVARIANT(!obj || !o, "%s with a NULL builder returned an object", fn);
  INVARIANT(tirx_last_status() == TIRX_E_NULL_ARG, "%s with a NULL builder recorded %s", fn,
            tirx_status_name(tirx_last_status()));
  INVARIANT(msg_names(tirx_last_error(), fn, NULL),
            "%s with a NULL builder: message \"%s\" does not start with the function's name", fn,
            tirx_last_error());
  /* The builder under test is untouched (but for a NULL out, recorded above). */
  INVARIANT(tirx_builder_status(r->b) == (r->failed ? r->fstatus : TIRX_OK),
            "%s with a NULL builder changed another builder's status", fn);
  /* Functions of the builder and kernel that take NULL. */
  INVARIANT(tirx_builder_status(NULL) == TIRX_E_NULL_ARG, "tirx_builder_status(NULL)");
  INVARIANT(strcmp(tirx_builder_error(NULL), "tirx_builder_error: b is NULL") == 0,
            "tirx_builder_error(NULL) is \"%s\"", tirx_builder_error(NULL));
  INVARIANT(!tirx_kernel_name(NULL) && !tirx_kernel_source(NULL) && !tirx_kernel_ir_str(NULL) &&
                !tirx_kernel_param_name(NULL, 0) && !tirx_kernel_retain(NULL),
            "kernel accessors of NULL are not NULL");
  tirx_kernel_release(NULL);
  tirx_builder_destroy(NULL);
  INVARIANT(tirx_tensor_rank(NULL) == 0 && tirx_tensor_dtype(NULL) == TIRX_DTYPE_COUNT &&
                !tirx_tensor_name(NULL),
            "tensor accessors of NULL");
  tr_printf(&r->tr, "null %d", (int)w);
}

/* ---- operations -------------------------------------------------------------------------------- */

enum {
  OP_PARAM_INT, OP_PARAM_SCALAR, OP_PARAM_TENSOR, OP_PARAM_STRIDED, OP_ALLOC_SHARED,
  OP_ALLOC_LOCAL, OP_TENSOR_DIM, OP_TENSOR_ACCESS, OP_INT, OP_INT_TYPED, OP_FLOAT, OP_BOOL,
  OP_SPECIAL, OP_BINARY, OP_UNARY, OP_SELECT, OP_CAST, OP_LOAD, OP_SHFL, OP_FOR_BEGIN,
  OP_FOR_END, OP_IF_BEGIN, OP_ELSE, OP_IF_END, OP_LET, OP_VAR, OP_ASSIGN, OP_STORE, OP_ATOMIC,
  OP_SYNC, OP_SET_GRID, OP_SET_BLOCK, OP_SET_SHARED, OP_NULL_BUILDER, OP_BUILD, OP_REPEAT,
  OP_CHAIN, OP_SET_POLICY, OP_TEAM_BEGIN, OP_TEAM_END, OP_FILTER_BEGIN, OP_FILTER_END,
  OP_REGION_NEW, OP_REGION_OTHER, OP_ALLOC_MBAR, OP_MBAR, OP_PLAIN, OP_CLUSTER_EXPR,
  OP_SETMAXNREG, OP_NAMED_BAR, OP_GROUP_WAIT, OP_GEMM, OP_COPY_ASYNC, OP_TMAP_PREFETCH,
  OP_SET_CLUSTER, OP_PRIM, OP_RECIPE, OP_SET_TARGET, OP_CP_GROUP, N_OPS
};

/* Records a declared parameter when the call succeeded. */
static void note_param(run *r, const char *name) {
  if (tirx_builder_status(r->b) != TIRX_OK || r->nparams >= TIRX_BUILDER_MAX_PARAMS) return;
  snprintf(r->pname[r->nparams++], sizeof r->pname[0], "%s", name);
}

typedef tirx_expr *(*binfn)(tirx_builder *, tirx_expr *, tirx_expr *);

static const struct {
  const char *name;
  binfn f;
  int kind; /* 0 arith any, 1 int, 2 compare, 3 logical, 4 float */
} binops[22] = {
    {"tirx_add", tirx_add, 0},         {"tirx_sub", tirx_sub, 0},
    {"tirx_mul", tirx_mul, 0},         {"tirx_div", tirx_div, 0},
    {"tirx_mod", tirx_mod, 1},         {"tirx_min", tirx_min, 0},
    {"tirx_max", tirx_max, 0},         {"tirx_ceildiv", tirx_ceildiv, 1},
    {"tirx_bit_and", tirx_bit_and, 1}, {"tirx_bit_or", tirx_bit_or, 1},
    {"tirx_bit_xor", tirx_bit_xor, 1}, {"tirx_shl", tirx_shl, 1},
    {"tirx_shr", tirx_shr, 1},         {"tirx_eq", tirx_eq, 2},
    {"tirx_ne", tirx_ne, 2},           {"tirx_lt", tirx_lt, 2},
    {"tirx_le", tirx_le, 2},           {"tirx_gt", tirx_gt, 2},
    {"tirx_ge", tirx_ge, 2},           {"tirx_and", tirx_and, 3},
    {"tirx_or", tirx_or, 3},           {"tirx_pow", tirx_pow, 4},
};

static int int_rank(int t) { return t == TIRX_I64 ? 3 : t == TIRX_U32 ? 2 : 1; }

/* The harness's guess of a binary result's dtype (documented rules; -1 when unsure). */
static meta bin_meta(int kind, const meta *x, const meta *y) {
  meta m = unknown_meta;
  m.host = x->host && y->host;
  if (kind == 2 || kind == 3) {
    m.dtype = TIRX_BOOL;
    m.host = false;
    return m;
  }
  if (x->weak && y->weak) {
    m.dtype = TIRX_I64;
    m.weak = true;
    return m;
  }
  const meta *o = x->weak ? y : x;
  if (is_float(o->dtype)) {
    m.dtype = o->dtype;
    m.host = false;
  } else if (is_int(x->dtype) && is_int(y->dtype)) {
    int rk = int_rank(x->dtype) > int_rank(y->dtype) ? int_rank(x->dtype) : int_rank(y->dtype);
    if (x->weak) rk = int_rank(y->dtype);
    if (y->weak) rk = int_rank(x->dtype);
    m.dtype = rk == 3 ? TIRX_I64 : rk == 2 ? TIRX_U32 : TIRX_I32;
  }
  return m;
}

/* Index list operands: count byte, then n selectors into idx (room for 16). Returns n. */
static int index_list(run *r, const tirx_tensor *t, tirx_expr **idx, tirx_expr *const **out,
                      bool *bad) {
  uint8_t c = u8(r);
  int n;
  if (c < 0x80)
    n = tirx_tensor_rank(t);
  else if (c < 0xF0)
    n = c % 10;
  else
    n = oor_int[c - 0xF0];
  *out = c == 0xEF ? NULL : idx;
  int m = n < 0 ? 0 : n > 16 ? 16 : n;
  for (int k = 0; k < 16; k++) idx[k] = NULL;
  meta mm;
  *bad = !*out;
  for (int k = 0; k < m; k++) {
    idx[k] = pick_expr(r, W_INT, -1, &mm);
    if (!idx[k] || mm.foreign) *bad = true;
  }
  return n;
}

static void exec_op(run *r, bool nested);

/* The mirror of open blocks: the innermost for/if/filter block (team scopes open no block),
 * -1 when none. */
static int frame_top(const run *r) {
  for (int i = r->nopen - 1; i >= 0; i--)
    if (r->open[i] != 5) return i;
  return -1;
}
static int frame_kind(const run *r) {
  int i = frame_top(r);
  return i < 0 ? 0 : r->open[i];
}
/* Removes entry i (a closed block or scope) from the mirror. */
static void open_remove(run *r, int i) {
  if (i < 0 || i >= r->nopen) return;
  memmove(&r->open[i], &r->open[i + 1], (size_t)(r->nopen - i - 1) * sizeof r->open[0]);
  r->nopen--;
}
static void open_push(run *r, int kind) {
  if (r->nopen < MAX_OPEN) r->open[r->nopen++] = kind;
}

/* The product of n extents, -1 when one is < 1 or it overflows. */
static int64_t checked_product(const int64_t *v, int n) {
  int64_t p = 1;
  for (int k = 0; k < n; k++) {
    if (v[k] < 1 || __builtin_mul_overflow(p, v[k], &p)) return -1;
  }
  return p;
}

static void op_tensor(run *r, int op) {
  static const char *const fns[4] = {"tirx_param_tensor", "tirx_param_tensor_strided",
                                     "tirx_alloc_shared", "tirx_alloc_local"};
  const char *fn = fns[op - OP_PARAM_TENSOR];
  char nbuf[80];
  const char *name = name_val(r, nbuf);
  tirx_dtype dt = dtype_val(r);
  int rank = rank_val(r);
  uint8_t flags = u8(r);
  int m = rank < 0 ? 0 : rank > 16 ? 16 : rank;
  bool rank_ok = rank >= 1 && rank <= TIRX_BUILDER_MAX_RANK;
  int expect = !name_valid(name) || !dtype_usable(dt) || !rank_ok || (flags & 1) ? MUST_FAIL : ANY;
  tirx_tensor *t = NULL;
  tmeta tm = unknown_tmeta;
  if (op == OP_PARAM_TENSOR || op == OP_PARAM_STRIDED) {
    tirx_expr *shape[16] = {NULL};
    int64_t cshape[16];
    bool all_known = true;
    for (int k = 0; k < m; k++) {
      meta mm;
      shape[k] = pick_expr(r, W_HOST, -1, &mm);
      all_known = all_known && mm.known;
      cshape[k] = mm.val;
      if (!shape[k] || mm.foreign) expect = MUST_FAIL;
    }
    tirx_expr *const *sp = flags & 1 ? NULL : shape;
    if (op == OP_PARAM_TENSOR) {
      const tirx_layout *l = flags & 2 ? layout_val(r, rank, all_known ? cshape : NULL, dt) : NULL;
      pre(r, fn);
      t = tirx_param_tensor(r->b, name, dt, rank, sp, l);
    } else {
      tirx_expr *strides[16] = {NULL};
      uint8_t sf = u8(r);
      if (!(sf & 1))
        for (int k = 0; k < m; k++) {
          meta mm;
          strides[k] = pick_expr(r, W_HOST, -1, &mm);
          if (mm.foreign) expect = MUST_FAIL;
        }
      pre(r, fn);
      t = tirx_param_tensor_strided(r->b, name, dt, rank, sp, sf & 1 ? NULL : strides);
    }
    post(r, fn, NULL, true, t, expect);
    if (t) note_param(r, name);
    tm.storage = 0;
    tm.param = true;
    if (all_known && rank_ok) tm.elems = checked_product(cshape, rank);
  } else {
    int64_t shape[16];
    for (int k = 0; k < 16; k++) shape[k] = 1;
    for (int k = 0; k < m; k++) shape[k] = dim_val(r);
    const int64_t *sp = flags & 1 ? NULL : shape;
    const tirx_layout *l = flags & 2 ? layout_val(r, rank, shape, dt) : NULL;
    pre(r, fn);
    t = op == OP_ALLOC_SHARED ? tirx_alloc_shared(r->b, name, dt, rank, sp, l)
                              : tirx_alloc_local(r->b, name, dt, rank, sp, l);
    post(r, fn, NULL, true, t, expect);
    tm.storage = op == OP_ALLOC_SHARED ? 1 : 2;
    if (rank_ok) tm.elems = checked_product(shape, rank);
  }
  if (t) {
    INVARIANT(tirx_tensor_rank(t) == rank && (int)tirx_tensor_dtype(t) == (int)dt &&
                  tirx_tensor_name(t) && strcmp(tirx_tensor_name(t), name) == 0,
              "%s: the tensor's accessors disagree with the declaration", fn);
    tm.dtype = (int)dt;
    push_tensor_m(r, t, tm);
  }
}

/* ---- the sm_90 vocabulary: scopes, regions, synchronisation, TMA, gemm ------------------------ */

/* A call that the harness makes on its own account (recipes): any outcome is fine, but the
 * contract is checked as for every call. */
static void checked(run *r, const char *fn, bool obj_call, const void *obj) {
  post(r, fn, NULL, obj_call, obj, ANY);
}

static bool block_whole_wgs(const run *r) { return r->threads > 0 && r->threads % 128 == 0; }

static void h_team_begin(run *r, int team, int expect) {
  pre(r, "tirx_team_begin");
  tirx_team_begin(r->b, (tirx_team)team);
  post(r, "tirx_team_begin", NULL, false, NULL, expect);
  if (!r->failed) open_push(r, 5);
}

static void h_team_end(run *r) {
  pre(r, "tirx_team_end");
  tirx_team_end(r->b);
  int last_team = -1;
  for (int i = r->nopen - 1; i >= 0 && last_team < 0; i--)
    if (r->open[i] == 5) last_team = i;
  post(r, "tirx_team_end", NULL, false, NULL, last_team < 0 ? MUST_FAIL : ANY);
  if (!r->failed) open_remove(r, last_team);
}

static void h_filter_begin(run *r, int axis, int64_t lo, int64_t hi, int expect) {
  pre(r, "tirx_filter_begin");
  tirx_filter_begin(r->b, (tirx_axis)axis, lo, hi);
  post(r, "tirx_filter_begin", NULL, false, NULL, expect);
  if (!r->failed) open_push(r, 4);
}

static void h_filter_end(run *r) {
  pre(r, "tirx_filter_end");
  tirx_filter_end(r->b);
  post(r, "tirx_filter_end", NULL, false, NULL, frame_kind(r) == 4 ? ANY : MUST_FAIL);
  if (!r->failed) open_remove(r, frame_top(r));
}

static tirx_region *h_region(run *r, tirx_tensor *t, const tmeta *tm, int n,
                             tirx_expr *const *begins, const int64_t *extents, int expect) {
  pre(r, "tirx_region_new");
  tirx_region *g = tirx_region_new(r->b, t, n, begins, extents);
  post(r, "tirx_region_new", NULL, true, g, expect);
  rmeta m = unknown_rmeta;
  m.storage = tm->storage;
  m.dtype = t ? (int)tirx_tensor_dtype(t) : -1;
  m.elems = extents && n >= 1 && n <= 16 ? checked_product(extents, n) : -1;
  push_region(r, g, m);
  return g;
}

static tirx_region *h_whole(run *r, tirx_tensor *t, const tmeta *tm, int expect) {
  pre(r, "tirx_whole");
  tirx_region *g = tirx_whole(r->b, t);
  post(r, "tirx_whole", NULL, true, g, expect);
  rmeta m = unknown_rmeta;
  m.storage = tm->storage;
  m.dtype = t ? (int)tirx_tensor_dtype(t) : -1;
  m.elems = tm->elems;
  push_region(r, g, m);
  return g;
}

static tirx_tensor *h_tensor(run *r, const char *fn, tirx_tensor *t, tmeta tm) {
  checked(r, fn, true, t);
  if (t) tm.dtype = (int)tirx_tensor_dtype(t);
  push_tensor_m(r, t, tm);
  return t;
}

static tirx_expr *h_expr(run *r, const char *fn, tirx_expr *e, meta m) {
  checked(r, fn, true, e);
  push_expr(r, e, m);
  return e;
}

static void h_set_block(run *r, int x) {
  pre(r, "tirx_set_block");
  tirx_set_block(r->b, x, 1, 1);
  post(r, "tirx_set_block", NULL, false, NULL, r->block_set ? ANY : MUST_OK);
  r->block_set = true;
  r->threads = x;
}

/* An mbarrier tensor of n and a region of its element 0, through the public calls. */
static tirx_region *h_mbarrier(run *r, const char *name, int64_t n, int expect) {
  pre(r, "tirx_alloc_mbarrier");
  tirx_tensor *t = tirx_alloc_mbarrier(r->b, name, n);
  post(r, "tirx_alloc_mbarrier", NULL, true, t, expect);
  if (!t) return NULL;
  tmeta tm = {1, false, false, TIRX_I64, n};
  push_tensor_m(r, t, tm);
  pre(r, "tirx_int");
  tirx_expr *zero = tirx_int(r->b, 0);
  post(r, "tirx_int", NULL, true, zero, MUST_OK);
  return h_region(r, t, &tm, 1, (tirx_expr *[]){zero}, (int64_t[]){1}, ANY);
}

static const int bad_small[16] = {-1, 0, INT_MIN, INT_MAX, 9, 16, -8, 255,
                                  256, 264, 23, 25, 8, 7, 64, 1 << 20};

/*
 * Recipes: well-formed sm_90 kernel fragments the byte stream would rarely assemble by
 * itself (the layouts wgmma and TMA need), with a few parameters taken from the input. Their
 * tensors, regions and expressions go to the pools, where later ops can misuse them.
 *   0 TMA: a global tensor, a swizzled shared tile, an mbarrier; optionally the whole
 *     init / expect_tx / copy_async load (multicast when a cluster is set) / wait / store /
 *     bulk commit+wait sequence under one-thread filters.
 *   1 wgmma: a warpgroup team, shared A and B tiles, a wgmma_acc accumulator, gemm_async,
 *     commit and wait; optionally (the RS form) A ldmatrix'd into a wgmma_a register tile
 *     first and multiplied from there.
 *   2 mma: a warp team, padded A and B, a C-fragment accumulator, tirx_gemm.
 *   3 reduce.dsmem: a cluster team, a register tile spread on cbx, fill and reduce.
 */
static void op_recipe(run *r) {
  uint8_t w = u8(r), p1 = u8(r), p2 = u8(r), fl = u8(r);
  int id = r->recipes++;
  char n1[40], n2[40], n3[40], n4[40];
  snprintf(n1, sizeof n1, "ra%d", id);
  snprintf(n2, sizeof n2, "rb%d", id);
  snprintf(n3, sizeof n3, "rc%d", id);
  snprintf(n4, sizeof n4, "rd%d", id);
  tirx_arena *A = tirx_builder_arena(r->b);
  static const int sws[4] = {128, 64, 32, 0};
  switch (w % 4) {
  case 0: { /* TMA */
    static const tirx_dtype dts[4] = {TIRX_BF16, TIRX_F16, TIRX_F32, TIRX_U8};
    static const int64_t rows_t[8] = {64, 8, 16, 128, 32, 1, 3, 256};
    static const int64_t bytes_t[4] = {128, 64, 32, 256};
    tirx_dtype dt = dts[p1 % 4];
    int es = tirx_dtype_size(dt);
    int64_t rows = rows_t[(p1 >> 2) % 8], cols = bytes_t[p2 % 4] / es;
    int sw = sws[(p2 >> 2) % 4];
    if (!r->block_set && (fl & 1)) h_set_block(r, 128);
    pre(r, "tirx_param_int");
    tirx_expr *M = tirx_param_int(r->b, n1, TIRX_I32);
    checked(r, "tirx_param_int", true, M);
    if (M) note_param(r, n1);
    meta pm = mk(TIRX_I32, true);
    pm.pint = true;
    push_expr(r, M, pm);
    tmeta gm = {0, true, false, (int)dt, -1};
    pre(r, "tirx_param_tensor");
    tirx_tensor *g = tirx_param_tensor(r->b, n2, dt, 2, (tirx_expr *[]){M, M}, NULL);
    h_tensor(r, "tirx_param_tensor", g, gm);
    if (g) note_param(r, n2);
    const tirx_layout *l = sw ? tirx_layout_smem_tile(A, rows, cols, es, sw) : NULL;
    tirx_clear_error();
    tmeta sm = {1, false, false, (int)dt, rows * cols};
    pre(r, "tirx_alloc_shared");
    tirx_tensor *s = h_tensor(r, "tirx_alloc_shared",
                              tirx_alloc_shared(r->b, n3, dt, 2, (int64_t[]){rows, cols}, l), sm);
    tirx_region *bar = h_mbarrier(r, n4, 1 + (fl >> 6), ANY);
    pre(r, "tirx_block_idx");
    tirx_expr *bx = h_expr(r, "tirx_block_idx", tirx_block_idx(r->b, 0), mk(TIRX_I32, false));
    pre(r, "tirx_int");
    tirx_expr *c = h_expr(r, "tirx_int", tirx_int(r->b, rows), mk(TIRX_I64, true));
    pre(r, "tirx_mul");
    tirx_expr *r0 = h_expr(r, "tirx_mul", tirx_mul(r->b, bx, c), mk(TIRX_I32, false));
    pre(r, "tirx_int");
    tirx_expr *z = h_expr(r, "tirx_int", tirx_int(r->b, 0), mk(TIRX_I64, true));
    tirx_region *gr = g ? h_region(r, g, &gm, 2, (tirx_expr *[]){r0, z},
                                   (int64_t[]){rows, cols}, ANY)
                        : NULL;
    tirx_region *sr = s ? h_whole(r, s, &sm, ANY) : NULL;
    if (!(fl & 2) && (fl & 32) && gr && sr) { /* the tile with cp.async: no barrier, groups */
      tirx_config cp = {.family = fl & 16 ? "cp_async" : NULL};
      pre(r, "tirx_copy_async");
      tirx_copy_async(r->b, sr, gr, &cp);
      checked(r, "tirx_copy_async", false, NULL);
      pre(r, "tirx_cp_async_commit");
      tirx_cp_async_commit(r->b);
      checked(r, "tirx_cp_async_commit", false, NULL);
      pre(r, "tirx_cp_async_wait");
      tirx_cp_async_wait(r->b, 0);
      checked(r, "tirx_cp_async_wait", false, NULL);
      pre(r, "tirx_sync_threads");
      tirx_sync_threads(r->b);
      checked(r, "tirx_sync_threads", false, NULL);
      break;
    }
    if (!(fl & 2) || !gr || !sr || !bar) break;
    /* The whole sequence, as tests/unit/dispatch/families/test_copy_tma.c writes it. */
    h_filter_begin(r, TIRX_AXIS_TID, 0, 1, ANY);
    pre(r, "tirx_tmap_prefetch");
    tirx_tmap_prefetch(r->b, g);
    checked(r, "tirx_tmap_prefetch", false, NULL);
    pre(r, "tirx_mbarrier_init");
    tirx_mbarrier_init(r->b, bar, 1);
    checked(r, "tirx_mbarrier_init", false, NULL);
    pre(r, "tirx_fence_mbarrier_init");
    tirx_fence_mbarrier_init(r->b);
    checked(r, "tirx_fence_mbarrier_init", false, NULL);
    h_filter_end(r);
    pre(r, "tirx_sync_threads");
    tirx_sync_threads(r->b);
    checked(r, "tirx_sync_threads", false, NULL);
    h_filter_begin(r, TIRX_AXIS_TID, 0, 1, ANY);
    pre(r, "tirx_int");
    tirx_expr *bytes = h_expr(r, "tirx_int", tirx_int(r->b, rows * cols * es), mk(TIRX_I64, true));
    pre(r, "tirx_mbarrier_expect_tx");
    tirx_mbarrier_expect_tx(r->b, bar, bytes);
    checked(r, "tirx_mbarrier_expect_tx", false, NULL);
    tirx_expr *mask = NULL;
    if (fl & 4) {
      pre(r, "tirx_int");
      mask = h_expr(r, "tirx_int", tirx_int(r->b, 3), mk(TIRX_I64, true));
    }
    tirx_config cfg = {.barrier = bar, .multicast = mask};
    pre(r, "tirx_copy_async");
    tirx_copy_async(r->b, sr, gr, &cfg);
    checked(r, "tirx_copy_async", false, NULL);
    h_filter_end(r);
    pre(r, "tirx_mbarrier_wait");
    tirx_mbarrier_wait(r->b, bar, z);
    checked(r, "tirx_mbarrier_wait", false, NULL);
    if (fl & 8) {
      h_filter_begin(r, TIRX_AXIS_TID, 0, 1, ANY);
      pre(r, "tirx_copy_async");
      tirx_copy_async(r->b, gr, sr, NULL);
      checked(r, "tirx_copy_async", false, NULL);
      pre(r, "tirx_bulk_commit");
      tirx_bulk_commit(r->b);
      checked(r, "tirx_bulk_commit", false, NULL);
      pre(r, "tirx_bulk_wait");
      tirx_bulk_wait(r->b, 0, fl & 16);
      checked(r, "tirx_bulk_wait", false, NULL);
      h_filter_end(r);
    }
    break;
  }
  case 1: { /* wgmma */
    static const int ms[4] = {64, 128, 64, 32};
    static const int ks[4] = {16, 32, 64, 16};
    int m = ms[p1 % 4], k = ks[(p1 >> 2) % 4], n = 8 * (1 + p2 % 32);
    tirx_dtype dt = fl & 1 ? TIRX_F16 : TIRX_BF16;
    int sw = sws[(p2 >> 5) % 3];
    if (!r->block_set) h_set_block(r, fl & 2 ? 256 : 128);
    const tirx_layout *al = tirx_layout_smem_tile(A, m, k, 2, sw);
    const tirx_layout *bl0 = tirx_layout_smem_tile(A, n, k, 2, sw);
    const tirx_layout *bl = bl0 ? tirx_layout_permute(A, bl0, 2, (int64_t[]){1, 0}) : NULL;
    tmeta am = {1, false, false, (int)dt, (int64_t)m * k};
    tmeta bm = {1, false, false, (int)dt, (int64_t)k * n};
    tmeta dm = {2, false, false, TIRX_F32, (int64_t)m * n};
    const tirx_layout *dl = tirx_layout_wgmma_acc(A, m, n);
    pre(r, "tirx_alloc_shared");
    tirx_tensor *as = h_tensor(r, "tirx_alloc_shared",
                               tirx_alloc_shared(r->b, n1, dt, 2, (int64_t[]){m, k}, al), am);
    pre(r, "tirx_alloc_shared");
    tirx_tensor *bs = h_tensor(r, "tirx_alloc_shared",
                               tirx_alloc_shared(r->b, n2, dt, 2, (int64_t[]){k, n}, bl), bm);
    h_team_begin(r, TIRX_TEAM_WARPGROUP, ANY);
    pre(r, "tirx_alloc_local");
    tirx_tensor *d = h_tensor(r, "tirx_alloc_local",
                              tirx_alloc_local(r->b, n3, TIRX_F32, 2, (int64_t[]){m, n}, dl),
                              dm);
    tirx_region *dr = d ? h_whole(r, d, &dm, ANY) : NULL;
    tirx_region *ar = as ? h_whole(r, as, &am, ANY) : NULL;
    tirx_region *br = bs ? h_whole(r, bs, &bm, ANY) : NULL;
    if (fl & 64) { /* RS: a into registers by ldmatrix, then from there */
      tmeta fm = {2, false, false, (int)dt, (int64_t)m * k};
      const tirx_layout *fl_ = tirx_layout_wgmma_a(A, m, k);
      pre(r, "tirx_alloc_local");
      tirx_tensor *af = h_tensor(r, "tirx_alloc_local",
                                 tirx_alloc_local(r->b, n4, dt, 2, (int64_t[]){m, k}, fl_), fm);
      tirx_region *fr = af ? h_whole(r, af, &fm, ANY) : NULL;
      pre(r, "tirx_copy");
      tirx_copy(r->b, fr, ar, NULL);
      checked(r, "tirx_copy", false, NULL);
      ar = fr;
    }
    tirx_gemm_config cfg = {.family = fl & 4 ? "wgmma" : NULL};
    if (fl & 8) {
      pre(r, "tirx_bool");
      cfg.accumulate = h_expr(r, "tirx_bool", tirx_bool(r->b, fl & 16), mk(TIRX_BOOL, false));
    }
    pre(r, "tirx_gemm_async");
    tirx_gemm_async(r->b, dr, ar, br, &cfg);
    checked(r, "tirx_gemm_async", false, NULL);
    pre(r, "tirx_wgmma_commit");
    tirx_wgmma_commit(r->b);
    checked(r, "tirx_wgmma_commit", false, NULL);
    pre(r, "tirx_wgmma_wait");
    tirx_wgmma_wait(r->b, 0);
    checked(r, "tirx_wgmma_wait", false, NULL);
    if (fl & 32) h_team_end(r);
    break;
  }
  case 2: { /* mma */
    if (!r->block_set) h_set_block(r, fl & 2 ? 64 : 32);
    tirx_dtype dt = fl & 1 ? TIRX_F16 : TIRX_BF16;
    tmeta am = {1, false, false, (int)dt, 16 * 32};
    tmeta dm = {2, false, false, TIRX_F32, 16 * 16};
    const tirx_layout *al = tirx_layout_parse(A, "((16),(32)):((40@m),(1@m))");
    const tirx_layout *bl = tirx_layout_parse(A, "((32),(16)):((1@m),(40@m))");
    const tirx_layout *dl =
        tirx_layout_parse(A, "((2,8),(2,4,2)):((2@reg,4@laneid),(4@reg,1@laneid,1@reg))");
    pre(r, "tirx_alloc_shared");
    tirx_tensor *as = h_tensor(r, "tirx_alloc_shared",
                               tirx_alloc_shared(r->b, n1, dt, 2, (int64_t[]){16, 32}, al), am);
    pre(r, "tirx_alloc_shared");
    tirx_tensor *bs = h_tensor(r, "tirx_alloc_shared",
                               tirx_alloc_shared(r->b, n2, dt, 2, (int64_t[]){32, 16}, bl), am);
    h_team_begin(r, p1 & 1 ? TIRX_TEAM_WARP : TIRX_TEAM_THREAD, ANY);
    pre(r, "tirx_alloc_local");
    tirx_tensor *d = h_tensor(
        r, "tirx_alloc_local",
        tirx_alloc_local(r->b, n3, TIRX_F32, 2, (int64_t[]){16, 16}, dl), dm);
    static const char *const fams[4] = {NULL, "mma", "scalar", "wgmma"};
    tirx_gemm_config cfg = {.family = fams[p2 % 4]};
    tirx_region *dr = d ? h_whole(r, d, &dm, ANY) : NULL;
    tirx_region *ar = as ? h_whole(r, as, &am, ANY) : NULL;
    tirx_region *br = bs ? h_whole(r, bs, &am, ANY) : NULL;
    pre(r, "tirx_gemm");
    tirx_gemm(r->b, dr, ar, br, &cfg);
    checked(r, "tirx_gemm", false, NULL);
    if (fl & 32) h_team_end(r);
    break;
  }
  default: { /* reduce.dsmem */
    static const int cxs[4] = {2, 4, 1, 8};
    int cx = cxs[p1 % 4];
    pre(r, "tirx_set_cluster");
    tirx_set_cluster(r->b, cx, 1, 1);
    checked(r, "tirx_set_cluster", false, NULL);
    if (!r->block_set) h_set_block(r, fl & 2 ? 128 : 64);
    int64_t per = r->threads > 0 ? r->threads : 64;
    int regs = 1 + p2 % 4;
    char text[96];
    snprintf(text, sizeof text, "(%d,%lld,%d):(1@cbx,1@tid,1@reg)", cx, (long long)per, regs);
    h_team_begin(r, fl & 4 ? TIRX_TEAM_CTA : TIRX_TEAM_CLUSTER, ANY);
    static const tirx_dtype dts[4] = {TIRX_F32, TIRX_F32, TIRX_I32, TIRX_F64};
    tirx_dtype dt = dts[(p1 >> 2) % 4];
    int64_t cols = cx * per * regs;
    tmeta vm = {2, false, false, (int)dt, cols};
    tmeta sm = {2, false, false, (int)dt, 1};
    const tirx_layout *vl = tirx_layout_parse(A, text);
    pre(r, "tirx_alloc_local");
    tirx_tensor *v = h_tensor(r, "tirx_alloc_local",
                              tirx_alloc_local(r->b, n1, dt, 1, (int64_t[]){cols}, vl), vm);
    pre(r, "tirx_alloc_local");
    tirx_tensor *s = h_tensor(r, "tirx_alloc_local",
                              tirx_alloc_local(r->b, n2, dt, 1, (int64_t[]){1}, NULL), sm);
    tirx_region *vr = v ? h_whole(r, v, &vm, ANY) : NULL;
    tirx_region *sr = s ? h_whole(r, s, &sm, ANY) : NULL;
    pre(r, "tirx_float");
    tirx_expr *one = h_expr(r, "tirx_float", tirx_float(r->b, 1.0, TIRX_F32), mk(TIRX_F32, false));
    pre(r, "tirx_fill");
    tirx_fill(r->b, vr, one, NULL);
    checked(r, "tirx_fill", false, NULL);
    static const tirx_op ops[4] = {TIRX_OP_SUM, TIRX_OP_MAX, TIRX_OP_SUMSQ, TIRX_OP_MIN};
    pre(r, "tirx_reduce");
    tirx_reduce(r->b, sr, vr, ops[p2 >> 6], 1, fl & 8, NULL);
    checked(r, "tirx_reduce", false, NULL);
    if (fl & 32) h_team_end(r);
    break;
  }
  }
}

/* An int operand of the sm_90 calls: < 0xF0 from good (n entries, b % n), else bad_small. */
static int pick_int(run *r, const int *good, int n) {
  uint8_t v = u8(r);
  return v < 0xF0 ? good[v % n] : bad_small[v - 0xF0];
}

/* An expression argument that must be an integer: NULL, foreign, or of a known non-integer
 * dtype (bool and floats included) makes the call fail. */
static bool bad_int_arg(const tirx_expr *e, const meta *m) {
  return !e || m->foreign || (m->dtype >= 0 && !is_int(m->dtype));
}

static void op_sm90(run *r, int op) {
  char nbuf[80];
  meta mx;
  rmeta ra, rb, rc;
  switch (op) {
  case OP_TEAM_BEGIN: {
    static const int bad[16] = {-1, 5, INT_MIN, INT_MAX, 6, 255, -2, 100,
                                5, -1, 7, 1 << 20, 5, 5, -5, 8};
    uint8_t v = u8(r);
    int team = v < 0xF0 ? v % 5 : bad[v - 0xF0];
    bool in_enum = team >= 0 && team <= TIRX_TEAM_CLUSTER;
    h_team_begin(r, team, !in_enum || !r->block_set ? MUST_FAIL : ANY);
    break;
  }
  case OP_TEAM_END: h_team_end(r); break;
  case OP_FILTER_BEGIN: {
    static const int bad_axes[16] = {-1, 14, 32, INT_MIN, INT_MAX, 31, 12, 0,
                                     7, 8, 11, 13, 33, 1000, -100, 9};
    static const int64_t bounds[16] = {0, -1, 1, 31, 32, 127, 128, 1023, 1024, 4, 3,
                                       INT64_MAX, INT64_MIN, (int64_t)1 << 40, 8, 2};
    uint8_t av = u8(r), lv = u8(r), hv = u8(r);
    int axis = av < 0xF0 ? TIRX_AXIS_LANEID + av % 6 : bad_axes[av - 0xF0];
    int64_t lo = lv < 0xE0 ? lv % 132 : bounds[lv % 16];
    int64_t hi = hv < 0xE0 ? (lo < INT64_MAX - 40 ? lo + hv % 33 : lo) : bounds[hv % 16];
    /* Documented: lo >= hi, lo < 0 are invalid; axes outside the CTA are not supported. */
    bool bad = !r->block_set || lo >= hi || lo < 0 || axis < TIRX_AXIS_LANEID ||
               axis > TIRX_AXIS_TID;
    h_filter_begin(r, axis, lo, hi, bad ? MUST_FAIL : ANY);
    break;
  }
  case OP_FILTER_END: h_filter_end(r); break;
  case OP_REGION_NEW: {
    bool tbad, ibad;
    tmeta tm;
    tirx_tensor *t = pick_tensor_m(r, &tbad, &tm);
    tirx_expr *idx[16];
    tirx_expr *const *ip;
    int n = index_list(r, t, idx, &ip, &ibad);
    uint8_t fl = u8(r);
    int64_t ext[16];
    int m = n < 0 ? 0 : n > 16 ? 16 : n;
    bool ext_bad = false;
    for (int k = 0; k < m; k++) {
      ext[k] = fl & 2 ? 1 : dim_val(r);
      if (ext[k] < 1) ext_bad = true;
    }
    const int64_t *ep = fl & 1 ? NULL : ext;
    h_region(r, t, &tm, n, ip, ep,
             tbad || ibad || !ep || ext_bad || n != tirx_tensor_rank(t) ? MUST_FAIL : ANY);
    break;
  }
  case OP_REGION_OTHER: {
    if (u8(r) & 1) {
      tirx_expr *v = pick_expr(r, W_NUM, -1, &mx);
      pre(r, "tirx_broadcast");
      tirx_region *g = tirx_broadcast(r->b, v);
      post(r, "tirx_broadcast", NULL, true, g, !v || mx.foreign ? MUST_FAIL : ANY);
      rmeta m = unknown_rmeta;
      m.bcast = true;
      m.dtype = mx.dtype;
      push_region(r, g, m);
    } else {
      bool tbad;
      tmeta tm;
      tirx_tensor *t = pick_tensor_m(r, &tbad, &tm);
      h_whole(r, t, &tm, tbad ? MUST_FAIL : ANY);
    }
    break;
  }
  case OP_ALLOC_MBAR: {
    const char *name = name_val(r, nbuf);
    int64_t n = int_val(r);
    h_mbarrier(r, name, n, !name_valid(name) || n < 1 ? MUST_FAIL : ANY);
    break;
  }
  case OP_MBAR: {
    static const char *const fns[5] = {"tirx_mbarrier_init", "tirx_mbarrier_arrive",
                                       "tirx_mbarrier_arrive_cluster", "tirx_mbarrier_expect_tx",
                                       "tirx_mbarrier_wait"};
    int w = u8(r) % 5;
    tirx_region *bar = pick_region(r, R_MBAR, &ra);
    bool bad = not_mbar(bar, &ra);
    const char *fn = fns[w];
    if (w == 0) {
      int64_t count = int_val(r);
      pre(r, fn);
      tirx_mbarrier_init(r->b, bar, count);
      bad = bad || count < 1 || count > (1 << 20) - 1;
    } else if (w == 1) {
      pre(r, fn);
      tirx_mbarrier_arrive(r->b, bar);
    } else {
      tirx_expr *e = pick_expr(r, W_INT, -1, &mx);
      bad = bad || bad_int_arg(e, &mx);
      if (mx.known && !mx.foreign && e) {
        if (w == 2) bad = bad || mx.val < 0 || mx.val > 15;
        if (w == 3) bad = bad || mx.val < 0 || mx.val > (1 << 20) - 1;
      }
      pre(r, fn);
      if (w == 2)
        tirx_mbarrier_arrive_cluster(r->b, bar, e);
      else if (w == 3)
        tirx_mbarrier_expect_tx(r->b, bar, e);
      else
        tirx_mbarrier_wait(r->b, bar, e);
    }
    post(r, fn, NULL, false, NULL, bad ? MUST_FAIL : ANY);
    break;
  }
  case OP_PLAIN: {
    static const char *const fns[6] = {"tirx_fence_proxy_async", "tirx_fence_mbarrier_init",
                                       "tirx_cluster_sync",      "tirx_wgmma_fence",
                                       "tirx_wgmma_commit",      "tirx_bulk_commit"};
    int w = u8(r) % 6;
    pre(r, fns[w]);
    switch (w) {
    case 0: tirx_fence_proxy_async(r->b); break;
    case 1: tirx_fence_mbarrier_init(r->b); break;
    case 2: tirx_cluster_sync(r->b); break;
    case 3: tirx_wgmma_fence(r->b); break;
    case 4: tirx_wgmma_commit(r->b); break;
    default: tirx_bulk_commit(r->b); break;
    }
    int expect = w == 3 || w == 4 ? (block_whole_wgs(r) ? ANY : MUST_FAIL) : MUST_OK;
    post(r, fns[w], NULL, false, NULL, expect);
    break;
  }
  case OP_CLUSTER_EXPR: {
    int w = u8(r) % 3;
    tirx_expr *e;
    if (w == 0) {
      pre(r, "tirx_cluster_ctarank");
      e = tirx_cluster_ctarank(r->b);
      post(r, "tirx_cluster_ctarank", NULL, true, e, MUST_OK);
      push_expr(r, e, mk(TIRX_I32, false));
    } else if (w == 1) {
      int dim = small_val(r);
      pre(r, "tirx_cluster_id");
      e = tirx_cluster_id(r->b, dim);
      post(r, "tirx_cluster_id", NULL, true, e, dim >= 0 && dim <= 2 ? MUST_OK : MUST_FAIL);
      push_expr(r, e, mk(TIRX_I32, false));
    } else {
      pre(r, "tirx_elect_one");
      e = tirx_elect_one(r->b);
      post(r, "tirx_elect_one", NULL, true, e, MUST_OK);
      push_expr(r, e, mk(TIRX_BOOL, false));
    }
    break;
  }
  case OP_SETMAXNREG: {
    static const int good[8] = {24, 32, 40, 64, 128, 168, 232, 256};
    int regs = pick_int(r, good, 8);
    bool inc = u8(r) & 1;
    pre(r, "tirx_setmaxnreg");
    tirx_setmaxnreg(r->b, regs, inc);
    bool bad = regs < 24 || regs > 256 || regs % 8 || !block_whole_wgs(r);
    post(r, "tirx_setmaxnreg", NULL, false, NULL, bad ? MUST_FAIL : ANY);
    break;
  }
  case OP_NAMED_BAR: {
    static const int ids[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0};
    static const int nts[8] = {32, 64, 96, 128, 256, 512, 1024, 160};
    bool arrive = u8(r) & 1;
    int id = pick_int(r, ids, 16), nt = pick_int(r, nts, 8);
    const char *fn = arrive ? "tirx_named_barrier_arrive" : "tirx_named_barrier_sync";
    pre(r, fn);
    if (arrive)
      tirx_named_barrier_arrive(r->b, id, nt);
    else
      tirx_named_barrier_sync(r->b, id, nt);
    bool bad = id < 1 || id > 15 || !r->threads || nt < 32 || nt % 32 || nt > r->threads;
    post(r, fn, NULL, false, NULL, bad ? MUST_FAIL : MUST_OK);
    break;
  }
  case OP_GROUP_WAIT: {
    static const int good[10] = {0, 1, 2, 3, 7, 8, 15, 63, 64, 6};
    bool bulk = u8(r) & 1;
    int n = pick_int(r, good, 10);
    bool ro = u8(r) & 1;
    const char *fn = bulk ? "tirx_bulk_wait" : "tirx_wgmma_wait";
    pre(r, fn);
    if (bulk)
      tirx_bulk_wait(r->b, n, ro);
    else
      tirx_wgmma_wait(r->b, n);
    int expect = bulk ? (n >= 0 && n <= 63 ? MUST_OK : MUST_FAIL)
                      : (n >= 0 && n <= 7 && block_whole_wgs(r) ? ANY : MUST_FAIL);
    post(r, fn, NULL, false, NULL, expect);
    break;
  }
  case OP_GEMM: {
    static const char *const fams[8] = {NULL, "wgmma", "mma", "scalar", "bogus", "", "vec",
                                        "wgmma"};
    static const int64_t shp[8] = {0, 64, 16, 8, 256, -1, INT64_MAX, 3};
    uint8_t fl = u8(r);
    bool async = fl & 1;
    tirx_region *d = pick_region(r, async ? R_LOCAL : R_ANY, &ra);
    tirx_region *a = pick_region(r, R_SHARED, &rb);
    tirx_region *bm = pick_region(r, R_SHARED, &rc);
    tirx_gemm_config cfg = {.family = fams[(fl >> 2) % 8]};
    mx = unknown_meta;
    if (fl & 0x20)
      for (int k = 0; k < 3; k++) cfg.shape[k] = shp[u8(r) % 8];
    if (fl & 0x40) cfg.accumulate = pick_expr(r, W_BOOL, -1, &mx);
    const tirx_gemm_config *cp = fl & 2 ? NULL : &cfg;
    const char *fn = async ? "tirx_gemm_async" : "tirx_gemm";
    pre(r, fn);
    if (async)
      tirx_gemm_async(r->b, d, a, bm, cp);
    else
      tirx_gemm(r->b, d, a, bm, cp);
    bool bad = !d || !a || !bm || ra.foreign || rb.foreign || rc.foreign || ra.bcast ||
               rb.bcast || rc.bcast;
    if (cp && cfg.accumulate)
      bad = bad || mx.foreign || (mx.dtype >= 0 && mx.dtype != TIRX_BOOL);
    post(r, fn, NULL, false, NULL, bad ? MUST_FAIL : ANY);
    break;
  }
  case OP_COPY_ASYNC: {
    uint8_t fl = u8(r);
    tirx_region *dst = pick_region(r, R_SHARED, &ra);
    tirx_region *src = pick_region(r, R_GLOBAL, &rb);
    tirx_config cfg = {0};
    rc = unknown_rmeta;
    mx = unknown_meta;
    if (fl & 2) cfg.barrier = pick_region(r, R_MBAR, &rc);
    if (fl & 4) cfg.multicast = pick_expr(r, W_INT, -1, &mx);
    if (fl & 8) cfg.family = fl & 16 ? "tma" : fl & 32 ? "cp_async" : "bogus";
    const tirx_config *cp = fl & 1 ? NULL : &cfg;
    pre(r, "tirx_copy_async");
    tirx_copy_async(r->b, dst, src, cp);
    bool bad = !dst || !src || ra.foreign || rb.foreign || ra.bcast || rb.bcast ||
               (ra.dtype >= 0 && rb.dtype >= 0 && ra.dtype != rb.dtype);
    bool load = ra.storage == 1 && rb.storage == 0;
    bool known = ra.storage >= 0 && rb.storage >= 0;
    tirx_region *bar = cp ? cfg.barrier : NULL;
    tirx_expr *mask = cp ? cfg.multicast : NULL;
    if (known && !load && (bar || mask)) bad = true;
    if (mask && !bar) bad = true; /* a multicast load is a TMA load: it needs its barrier */
    if (bar && not_mbar(bar, &rc)) bad = true;
    if (mask && (mx.foreign || (mx.dtype >= 0 && !is_int(mx.dtype)))) bad = true;
    post(r, "tirx_copy_async", NULL, false, NULL, bad ? MUST_FAIL : ANY);
    break;
  }
  case OP_TMAP_PREFETCH: {
    bool tbad;
    tmeta tm;
    tirx_tensor *t = pick_tensor_m(r, &tbad, &tm);
    pre(r, "tirx_tmap_prefetch");
    tirx_tmap_prefetch(r->b, t);
    bool bad = tbad || (tm.storage >= 0 && (tm.storage != 0 || !tm.param));
    post(r, "tirx_tmap_prefetch", NULL, false, NULL, bad ? MUST_FAIL : ANY);
    break;
  }
  case OP_SET_CLUSTER: {
    static const int good[8] = {1, 2, 4, 8, 1, 2, 3, 1};
    int v[3];
    for (int i = 0; i < 3; i++) v[i] = pick_int(r, good, 8);
    pre(r, "tirx_set_cluster");
    tirx_set_cluster(r->b, v[0], v[1], v[2]);
    bool ok = true;
    for (int i = 0; i < 3; i++) ok = ok && v[i] >= 1 && v[i] <= 8;
    ok = ok && v[0] * v[1] * v[2] <= 8;
    post(r, "tirx_set_cluster", NULL, false, NULL, ok ? MUST_OK : MUST_FAIL);
    break;
  }
  case OP_PRIM: {
    static const char *const fams[8] = {NULL, "vec", "scalar", "shuffle", "dsmem", "smem",
                                        "bogus", "tma"};
    uint8_t fl = u8(r);
    tirx_config cfg = {.family = fams[(fl >> 2) % 8]};
    const tirx_config *cp = fl & 0x20 ? NULL : &cfg;
    int w = fl % 3;
    tirx_region *d = pick_region(r, R_TENSOR, &ra);
    bool bad = !d || ra.foreign || ra.bcast;
    const char *fn;
    if (w == 2) {
      tirx_expr *v = pick_expr(r, W_NUM, -1, &mx);
      bad = bad || !v || mx.foreign;
      fn = "tirx_fill";
      pre(r, fn);
      tirx_fill(r->b, d, v, cp);
    } else {
      tirx_region *s = pick_region(r, R_ANY, &rb);
      bad = bad || !s || rb.foreign || rb.bcast;
      if (w == 0) {
        fn = "tirx_copy";
        pre(r, fn);
        tirx_copy(r->b, d, s, cp);
      } else {
        static const tirx_op ops[8] = {TIRX_OP_SUM, TIRX_OP_MAX, TIRX_OP_SUMSQ, TIRX_OP_MIN,
                                       TIRX_OP_PROD, TIRX_OP_ADD, (tirx_op)0, (tirx_op)-1};
        uint8_t o = u8(r);
        tirx_op rop = ops[o % 8];
        uint32_t axes = (uint32_t)u8(r) % 5;
        fn = "tirx_reduce";
        pre(r, fn);
        tirx_reduce(r->b, d, s, rop, axes, o & 0x80, cp);
        bad = bad || o % 8 >= 5 || axes == 0;
      }
    }
    post(r, fn, NULL, false, NULL, bad ? MUST_FAIL : ANY);
    break;
  }
  case OP_RECIPE: op_recipe(r); break;
  case OP_SET_TARGET: {
    static const char *const good[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a",
                                       "sm_100a", "sm_100f", "sm_120"};
    static const char *const bad[] = {NULL, "", "sm90", "sm_9", "sm_90b", "compute_90",
                                      "sm_75", "sm_12345", "sm_90aa", "sm_-90", " sm_90",
                                      "SM_90", "sm_0090x", "sm_70", "sm_", "sm_8"};
    uint8_t v = u8(r);
    const char *arch = v < 0xC0 ? good[v % 8] : bad[v % 16];
    pre(r, "tirx_set_target");
    tirx_set_target(r->b, arch);
    post(r, "tirx_set_target", NULL, false, NULL, v < 0xC0 ? MUST_OK : MUST_FAIL);
    break;
  }
  case OP_CP_GROUP: {
    static const int good[8] = {0, 1, 2, 3, 7, 63, 0, 1};
    uint8_t w = u8(r) % 3;
    if (w == 0) {
      pre(r, "tirx_cp_async_commit");
      tirx_cp_async_commit(r->b);
      post(r, "tirx_cp_async_commit", NULL, false, NULL, MUST_OK);
    } else if (w == 1) {
      int n = pick_int(r, good, 8);
      pre(r, "tirx_cp_async_wait");
      tirx_cp_async_wait(r->b, n);
      post(r, "tirx_cp_async_wait", NULL, false, NULL, n >= 0 && n <= 63 ? MUST_OK : MUST_FAIL);
    } else {
      pre(r, "tirx_cp_async_wait_all");
      tirx_cp_async_wait_all(r->b);
      post(r, "tirx_cp_async_wait_all", NULL, false, NULL, MUST_OK);
    }
    break;
  }
  default: break;
  }
}

static void exec_op(run *r, bool nested) {
  if (r->calls >= MAX_CALLS) {
    r->pos = r->n;
    return;
  }
  int op = u8(r) % N_OPS;
  char nbuf[80];
  meta mx, my, mz;
  switch (op) {
  case OP_PARAM_INT:
  case OP_PARAM_SCALAR: {
    const char *name = name_val(r, nbuf);
    tirx_dtype dt = dtype_val(r);
    bool isint = op == OP_PARAM_INT;
    bool dt_ok = isint ? (dt == TIRX_I32 || dt == TIRX_I64)
                       : (dt == TIRX_F32 || dt == TIRX_F64 || dt == TIRX_I32 || dt == TIRX_I64);
    const char *fn = isint ? "tirx_param_int" : "tirx_param_scalar";
    pre(r, fn);
    tirx_expr *e = isint ? tirx_param_int(r->b, name, dt) : tirx_param_scalar(r->b, name, dt);
    post(r, fn, NULL, true, e, !name_valid(name) || !dt_ok ? MUST_FAIL : ANY);
    if (e) note_param(r, name);
    meta m = mk(dt, is_int(dt));
    m.pint = isint;
    push_expr(r, e, m);
    break;
  }
  case OP_PARAM_TENSOR:
  case OP_PARAM_STRIDED:
  case OP_ALLOC_SHARED:
  case OP_ALLOC_LOCAL: op_tensor(r, op); break;
  case OP_TENSOR_DIM: {
    bool tbad;
    tirx_tensor *t = pick_tensor(r, &tbad);
    int dim = small_val(r);
    pre(r, "tirx_tensor_dim");
    tirx_expr *e = tirx_tensor_dim(r->b, t, dim);
    post(r, "tirx_tensor_dim", NULL, true, e,
         tbad || dim < 0 || dim >= tirx_tensor_rank(t) ? MUST_FAIL : ANY);
    push_expr(r, e, mk(TIRX_I64, true));
    break;
  }
  case OP_TENSOR_ACCESS: {
    bool tbad;
    tirx_tensor *t = pick_tensor(r, &tbad);
    pre(r, "tensor accessors");
    int rk = tirx_tensor_rank(t);
    int dt = (int)tirx_tensor_dtype(t);
    const char *nm = tirx_tensor_name(t);
    if (t)
      INVARIANT(rk >= 1 && rk <= TIRX_BUILDER_MAX_RANK && dtype_usable(dt) && nm && name_valid(nm),
                "tensor accessors: rank %d dtype %d name %s", rk, dt, nm ? nm : "(null)");
    else
      INVARIANT(rk == 0 && dt == TIRX_DTYPE_COUNT && !nm, "tensor accessors of NULL");
    INVARIANT(tirx_builder_status(r->b) == (r->failed ? r->fstatus : TIRX_OK),
              "tensor accessors changed the builder's status");
    break;
  }
  case OP_INT: {
    int64_t v = int_val(r);
    pre(r, "tirx_int");
    tirx_expr *e = tirx_int(r->b, v);
    post(r, "tirx_int", NULL, true, e, MUST_OK);
    meta m = mk(TIRX_I64, true);
    m.weak = m.known = true;
    m.val = v;
    push_expr(r, e, m);
    break;
  }
  case OP_INT_TYPED: {
    int64_t v = int_val(r);
    tirx_dtype dt = dtype_val(r);
    pre(r, "tirx_int_typed");
    tirx_expr *e = tirx_int_typed(r->b, v, dt);
    bool ok = (is_int(dt) || dt == TIRX_BOOL) && int_fits(v, dt);
    post(r, "tirx_int_typed", NULL, true, e, ok ? MUST_OK : MUST_FAIL);
    meta m = mk(dt, dt != TIRX_BOOL);
    m.known = true;
    m.val = v;
    push_expr(r, e, m);
    break;
  }
  case OP_FLOAT: {
    double v = float_val(r);
    tirx_dtype dt = dtype_val(r);
    pre(r, "tirx_float");
    tirx_expr *e = tirx_float(r->b, v, dt);
    post(r, "tirx_float", NULL, true, e, is_float(dt) ? MUST_OK : MUST_FAIL);
    push_expr(r, e, mk(dt, false));
    break;
  }
  case OP_BOOL: {
    bool v = u8(r) & 1;
    pre(r, "tirx_bool");
    tirx_expr *e = tirx_bool(r->b, v);
    post(r, "tirx_bool", NULL, true, e, MUST_OK);
    push_expr(r, e, mk(TIRX_BOOL, false));
    break;
  }
  case OP_SPECIAL: {
    static const char *const fns[7] = {"tirx_thread_idx", "tirx_block_idx", "tirx_block_dim",
                                       "tirx_grid_dim",   "tirx_thread_linear", "tirx_lane_id",
                                       "tirx_warp_id"};
    int w = u8(r) % 7;
    int dim = w < 4 ? small_val(r) : 0;
    pre(r, fns[w]);
    tirx_expr *e;
    switch (w) {
    case 0: e = tirx_thread_idx(r->b, dim); break;
    case 1: e = tirx_block_idx(r->b, dim); break;
    case 2: e = tirx_block_dim(r->b, dim); break;
    case 3: e = tirx_grid_dim(r->b, dim); break;
    case 4: e = tirx_thread_linear(r->b); break;
    case 5: e = tirx_lane_id(r->b); break;
    default: e = tirx_warp_id(r->b); break;
    }
    post(r, fns[w], NULL, true, e, dim >= 0 && dim <= 2 ? MUST_OK : MUST_FAIL);
    push_expr(r, e, mk(TIRX_I32, false));
    break;
  }
  case OP_BINARY: {
    int w = u8(r) % 22;
    int kind = binops[w].kind;
    int want = kind == 1 ? W_INT : kind == 3 ? W_BOOL : kind == 4 ? W_FLOAT : W_NUM;
    tirx_expr *x = pick_expr(r, want, -1, &mx);
    tirx_expr *y = pick_expr(r, kind == 3 ? W_BOOL : W_LIKE, mx.dtype, &my);
    pre(r, binops[w].name);
    tirx_expr *e = binops[w].f(r->b, x, y);
    post(r, binops[w].name, NULL, true, e,
         !x || !y || mx.foreign || my.foreign ? MUST_FAIL : ANY);
    push_expr(r, e, bin_meta(kind, &mx, &my));
    break;
  }
  case OP_UNARY: {
    int u = u8(r) % 32;
    tirx_expr *x = pick_expr(r, u == 1 ? W_BOOL : u == 0 || u >= 29 ? W_NUM : W_FLOAT, -1, &mx);
    const char *fn;
    const char *alias = "tirx_math";
    tirx_expr *e;
    int expect = x && !mx.foreign ? ANY : MUST_FAIL;
    static const char *const wn[9] = {"tirx_exp",  "tirx_exp2", "tirx_log",
                                      "tirx_log2", "tirx_sqrt", "tirx_rsqrt",
                                      "tirx_tanh", "tirx_erf",  "tirx_fabs"};
    static const int bad_ops[4] = {-1, TIRX_MATH_COUNT, INT_MIN, INT_MAX};
    meta m = mx;
    m.weak = m.known = m.var = false;
    if (u == 0 || u >= 29) {
      fn = "tirx_neg";
      alias = NULL;
      pre(r, fn);
      e = tirx_neg(r->b, x);
      if (is_int(m.dtype) && int_rank(m.dtype) == 1) m.dtype = TIRX_I32;
    } else if (u == 1) {
      fn = "tirx_not";
      alias = NULL;
      pre(r, fn);
      e = tirx_not(r->b, x);
      m = mk(TIRX_BOOL, false);
    } else if (u <= 10) {
      fn = wn[u - 2];
      pre(r, fn);
      switch (u) {
      case 2: e = tirx_exp(r->b, x); break;
      case 3: e = tirx_exp2(r->b, x); break;
      case 4: e = tirx_log(r->b, x); break;
      case 5: e = tirx_log2(r->b, x); break;
      case 6: e = tirx_sqrt(r->b, x); break;
      case 7: e = tirx_rsqrt(r->b, x); break;
      case 8: e = tirx_tanh(r->b, x); break;
      case 9: e = tirx_erf(r->b, x); break;
      default: e = tirx_fabs(r->b, x); break;
      }
    } else {
      fn = "tirx_math";
      alias = NULL;
      int mop = u <= 24 ? u - 11 : bad_ops[u - 25];
      if (u > 24) expect = MUST_FAIL;
      pre(r, fn);
      e = tirx_math(r->b, (tirx_math_op)mop, x);
    }
    post(r, fn, alias, true, e, expect);
    m.host = m.host && u != 1 && (u == 0 || u >= 29) && is_int(m.dtype);
    push_expr(r, e, m);
    break;
  }
  case OP_SELECT: {
    tirx_expr *c = pick_expr(r, W_BOOL, -1, &mz);
    tirx_expr *x = pick_expr(r, W_ANY, -1, &mx);
    tirx_expr *y = pick_expr(r, W_LIKE, mx.dtype, &my);
    pre(r, "tirx_select");
    tirx_expr *e = tirx_select(r->b, c, x, y);
    post(r, "tirx_select", NULL, true, e,
         !c || !x || !y || mx.foreign || my.foreign || mz.foreign ? MUST_FAIL : ANY);
    meta m = mx.dtype == TIRX_BOOL ? mk(TIRX_BOOL, false) : bin_meta(0, &mx, &my);
    m.host = m.host && mz.host;
    push_expr(r, e, m);
    break;
  }
  case OP_CAST: {
    tirx_expr *x = pick_expr(r, W_ANY, -1, &mx);
    tirx_dtype dt = dtype_val(r);
    pre(r, "tirx_cast");
    tirx_expr *e = tirx_cast(r->b, x, dt);
    post(r, "tirx_cast", NULL, true, e,
         !x || mx.foreign || !dtype_usable(dt) ? MUST_FAIL : ANY);
    push_expr(r, e, mk(dt, mx.host && is_int(dt) && is_int(mx.dtype)));
    break;
  }
  case OP_LOAD: {
    bool tbad, ibad;
    tirx_tensor *t = pick_tensor(r, &tbad);
    tirx_expr *idx[16];
    tirx_expr *const *ip;
    int n = index_list(r, t, idx, &ip, &ibad);
    pre(r, "tirx_load");
    tirx_expr *e = tirx_load(r->b, t, n, ip);
    post(r, "tirx_load", NULL, true, e,
         tbad || ibad || n != tirx_tensor_rank(t) ? MUST_FAIL : ANY);
    push_expr(r, e, mk(t ? (int)tirx_tensor_dtype(t) : -1, false));
    break;
  }
  case OP_SHFL: {
    bool down = u8(r) & 1;
    tirx_expr *x = pick_expr(r, W_SHFL, -1, &mx);
    tirx_expr *y = pick_expr(r, W_INT, -1, &my);
    const char *fn = down ? "tirx_shfl_down" : "tirx_shfl_xor";
    pre(r, fn);
    tirx_expr *e = down ? tirx_shfl_down(r->b, x, y) : tirx_shfl_xor(r->b, x, y);
    post(r, fn, NULL, true, e, !x || !y || mx.foreign || my.foreign ? MUST_FAIL : ANY);
    push_expr(r, e, mk(mx.weak ? TIRX_I32 : mx.dtype, false));
    break;
  }
  case OP_FOR_BEGIN: {
    static const int bad_kinds[16] = {2, -1, INT_MIN, INT_MAX, 255, 3, 0, 1,
                                      2, -2, 256, 100, 0, 1, 0, 1};
    const char *name = name_val(r, nbuf);
    tirx_expr *lo = pick_expr(r, W_INT, -1, &mx);
    tirx_expr *hi = pick_expr(r, W_INT, -1, &my);
    tirx_expr *step = pick_expr(r, W_INT, -1, &mz);
    uint8_t kb = u8(r);
    int kind = kb < 0xF0 ? kb & 1 : bad_kinds[kb - 0xF0];
    pre(r, "tirx_for_begin");
    tirx_expr *v = tirx_for_begin(r->b, name, lo, hi, step, (tirx_loop_kind)kind);
    bool bad = !name_valid(name) || !lo || !hi || (kind != 0 && kind != 1) ||
               (mz.known && mz.val <= 0 && step) || mx.foreign || my.foreign || mz.foreign;
    post(r, "tirx_for_begin", NULL, true, v, bad ? MUST_FAIL : ANY);
    if (v) {
      open_push(r, 1);
      meta m = mk(TIRX_I32, false);
      if (mx.dtype == TIRX_I64 || my.dtype == TIRX_I64 || mz.dtype == TIRX_I64)
        m.dtype = TIRX_I64;
      push_expr(r, v, m);
    }
    break;
  }
  case OP_FOR_END: {
    pre(r, "tirx_for_end");
    tirx_for_end(r->b);
    bool top_for = frame_kind(r) == 1;
    post(r, "tirx_for_end", NULL, false, NULL, top_for ? ANY : MUST_FAIL);
    if (!r->failed) open_remove(r, frame_top(r));
    break;
  }
  case OP_IF_BEGIN: {
    tirx_expr *c = pick_expr(r, W_BOOL, -1, &mx);
    pre(r, "tirx_if_begin");
    tirx_if_begin(r->b, c);
    post(r, "tirx_if_begin", NULL, false, NULL, c && !mx.foreign ? ANY : MUST_FAIL);
    if (!r->failed) open_push(r, 2);
    break;
  }
  case OP_ELSE: {
    pre(r, "tirx_else");
    tirx_else(r->b);
    bool then = frame_kind(r) == 2;
    post(r, "tirx_else", NULL, false, NULL, then ? ANY : MUST_FAIL);
    if (!r->failed && frame_top(r) >= 0) r->open[frame_top(r)] = 3;
    break;
  }
  case OP_IF_END: {
    pre(r, "tirx_if_end");
    tirx_if_end(r->b);
    bool top_if = frame_kind(r) == 2 || frame_kind(r) == 3;
    post(r, "tirx_if_end", NULL, false, NULL, top_if ? ANY : MUST_FAIL);
    if (!r->failed) open_remove(r, frame_top(r));
    break;
  }
  case OP_LET: {
    const char *name = name_val(r, nbuf);
    tirx_expr *v = pick_expr(r, W_ANY, -1, &mx);
    pre(r, "tirx_let");
    tirx_expr *e = tirx_let(r->b, name, v);
    post(r, "tirx_let", NULL, true, e,
         !v || mx.foreign || !name_valid(name) ? MUST_FAIL : ANY);
    meta m = mx;
    if (m.weak) m.dtype = TIRX_I64;
    m.weak = m.known = m.var = false;
    m.host = false;
    push_expr(r, e, m);
    break;
  }
  case OP_VAR: {
    const char *name = name_val(r, nbuf);
    tirx_dtype dt = dtype_val(r);
    tirx_expr *init = pick_expr(r, W_LIKE, dt, &mx);
    pre(r, "tirx_var");
    tirx_expr *e = tirx_var(r->b, name, dt, init);
    post(r, "tirx_var", NULL, true, e,
         !name_valid(name) || !dtype_usable(dt) || mx.foreign || weak_misfit(&mx, dt)
             ? MUST_FAIL
             : ANY);
    meta m = mk(dt, false);
    m.var = true;
    push_expr(r, e, m);
    break;
  }
  case OP_ASSIGN: {
    tirx_expr *v = pick_expr(r, W_VAR, -1, &mx);
    tirx_expr *val = pick_expr(r, W_LIKE, mx.dtype, &my);
    pre(r, "tirx_assign");
    tirx_assign(r->b, v, val);
    post(r, "tirx_assign", NULL, false, NULL,
         !v || !val || mx.foreign || my.foreign || weak_misfit(&my, mx.dtype) ? MUST_FAIL
                                                                             : ANY);
    break;
  }
  case OP_STORE:
  case OP_ATOMIC: {
    bool tbad, ibad;
    tirx_tensor *t = pick_tensor(r, &tbad);
    tirx_expr *idx[16];
    tirx_expr *const *ip;
    int n = index_list(r, t, idx, &ip, &ibad);
    tirx_expr *val = pick_expr(r, W_LIKE, t ? (int)tirx_tensor_dtype(t) : -1, &mx);
    const char *fn = op == OP_STORE ? "tirx_store" : "tirx_atomic_add";
    pre(r, fn);
    if (op == OP_STORE)
      tirx_store(r->b, t, n, ip, val);
    else
      tirx_atomic_add(r->b, t, n, ip, val);
    post(r, fn, NULL, false, NULL,
         tbad || ibad || !val || mx.foreign || n != tirx_tensor_rank(t) ||
                 weak_misfit(&mx, (int)tirx_tensor_dtype(t))
             ? MUST_FAIL
             : ANY);
    break;
  }
  case OP_SYNC: {
    bool warp = u8(r) & 1;
    const char *fn = warp ? "tirx_sync_warp" : "tirx_sync_threads";
    pre(r, fn);
    if (warp)
      tirx_sync_warp(r->b);
    else
      tirx_sync_threads(r->b);
    post(r, fn, NULL, false, NULL, MUST_OK);
    break;
  }
  case OP_SET_GRID: {
    tirx_expr *x = pick_expr(r, W_HOST, -1, &mx);
    tirx_expr *y = pick_expr(r, W_HOST, -1, &my);
    tirx_expr *z = pick_expr(r, W_HOST, -1, &mz);
    pre(r, "tirx_set_grid");
    tirx_set_grid(r->b, x, y, z);
    post(r, "tirx_set_grid", NULL, false, NULL,
         mx.foreign || my.foreign || mz.foreign ? MUST_FAIL : ANY);
    break;
  }
  case OP_SET_BLOCK: {
    static const int good[16] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 3, 5, 7, 33, 1000};
    static const int bad[16] = {0, -1, 1025, 65, 2048, INT_MIN, INT_MAX, 0,
                                -1024, 1 << 20, 0, 1025, -1, 4096, 0, 65};
    int v[3];
    for (int i = 0; i < 3; i++) {
      uint8_t b = u8(r);
      v[i] = b < 0xF0 ? good[b % 16] : bad[b - 0xF0];
    }
    pre(r, "tirx_set_block");
    tirx_set_block(r->b, v[0], v[1], v[2]);
    bool ok = v[0] >= 1 && v[0] <= 1024 && v[1] >= 1 && v[1] <= 1024 && v[2] >= 1 &&
              v[2] <= 64 && (int64_t)v[0] * v[1] * v[2] <= 1024;
    /* a second call may change the block only before the body (tirx_set_block) */
    post(r, "tirx_set_block", NULL, false, NULL, !ok ? MUST_FAIL : r->block_set ? ANY : MUST_OK);
    r->block_set = true;
    if (ok) r->threads = (int64_t)v[0] * v[1] * v[2];
    break;
  }
  case OP_SET_SHARED: {
    tirx_expr *x = pick_expr(r, W_HOST, -1, &mx);
    pre(r, "tirx_set_shared_bytes");
    tirx_set_shared_bytes(r->b, x);
    post(r, "tirx_set_shared_bytes", NULL, false, NULL, x && !mx.foreign ? ANY : MUST_FAIL);
    break;
  }
  case OP_NULL_BUILDER:
    r->calls++;
    null_builder(r);
    break;
  case OP_BUILD: do_build(r); break;
  case OP_REPEAT: {
    int count = u8(r) % 80 + 1;
    if (nested) break;
    size_t at = r->pos;
    for (int i = 0; i < count && r->calls < MAX_CALLS; i++) {
      r->pos = at;
      exec_op(r, true);
    }
    break;
  }
  case OP_CHAIN: {
    int k = u8(r) % 24;
    int w = k % 3 == 0 ? 0 : k % 3 == 1 ? 2 : 8; /* add, mul, bit_and */
    tirx_expr *x = pick_expr(r, w == 8 ? W_INT : W_NUM, -1, &mx);
    meta m = mx;
    for (int i = 0; i < k && x; i++) {
      pre(r, binops[w].name);
      tirx_expr *e = binops[w].f(r->b, x, x);
      post(r, binops[w].name, NULL, true, e, ANY);
      x = e;
      m = bin_meta(binops[w].kind, &m, &m);
    }
    push_expr(r, x, m);
    break;
  }
  case OP_SET_POLICY: {
    static const int bad[16] = {-1, 3, INT_MIN, INT_MAX, 4, 255, -2, 1 << 20,
                                3, -1, 100, 3, INT_MIN, 7, 3, -1};
    tirx_expr *p = pick_expr(r, W_HOST, -1, &mx);
    uint8_t pb = u8(r);
    int policy = pb < 0xF0 ? pb % 3 : bad[pb - 0xF0];
    bool in_enum = policy >= 0 && policy <= 2;
    pre(r, "tirx_param_set_policy");
    tirx_status st = tirx_param_set_policy(r->b, p, (tirx_specialize)policy);
    bool was_failed = r->failed;
    /* DYNAMIC never meets the limit, so it cannot fail on a parameter from tirx_param_int. */
    int expect = !p || mx.foreign || !in_enum ? MUST_FAIL
                 : mx.pint && policy == TIRX_SPECIALIZE_DYNAMIC ? MUST_OK
                                                               : ANY;
    post(r, "tirx_param_set_policy", NULL, false, NULL, expect);
    if (was_failed)
      INVARIANT(st == r->fstatus, "tirx_param_set_policy on a failed builder returned %s, its "
                "first error is %s", tirx_status_name(st), tirx_status_name(r->fstatus));
    else
      INVARIANT(st == tirx_builder_status(r->b),
                "tirx_param_set_policy returned %s, the builder has %s", tirx_status_name(st),
                tirx_status_name(tirx_builder_status(r->b)));
    tr_printf(&r->tr, "policy %d", (int)st);
    break;
  }
  default: op_sm90(r, op); break;
  }
}

/* ---- one run ------------------------------------------------------------------------------------ */

static void run_input(run *r, const uint8_t *d, size_t n, int which) {
  memset(r, 0, sizeof *r);
  r->d = d;
  r->n = n;
  r->which = which;
  cur_run = r;
  make_foreign(r);
  uint8_t h = u8(r);
  int ki = h & 0x3F;
  const char *kname = names[ki < 56 ? ki : 63 + (ki - 56)];
  snprintf(r->kname, sizeof r->kname, "%s", kname);
  pre(r, "tirx_builder_create");
  r->b = tirx_builder_create(kname);
  INVARIANT(r->b, "tirx_builder_create returned NULL (out of memory?)");
  if (tirx_builder_status(r->b) == TIRX_OK) {
    INVARIANT(name_valid(kname), "tirx_builder_create accepted the invalid name \"%s\"", kname);
  } else {
    const char *msg = tirx_builder_error(r->b);
    INVARIANT(msg_names(msg, "tirx_builder_create", NULL),
              "tirx_builder_create: message \"%s\"", msg);
    INVARIANT(!name_valid(kname) || strstr(msg, "reserved"),
              "tirx_builder_create rejected the valid name \"%s\": %s", kname, msg);
    INVARIANT(tirx_last_status() == tirx_builder_status(r->b) &&
                  strcmp(tirx_last_error(), msg) == 0,
              "tirx_builder_create: last error differs from the builder's");
    r->failed = true;
    r->fstatus = tirx_builder_status(r->b);
    snprintf(r->fmsg, sizeof r->fmsg, "%s", msg);
  }
  tr_printf(&r->tr, "create %d", (int)tirx_builder_status(r->b));

  int op_index = 0;
  while (r->pos < r->n && r->calls < MAX_CALLS) {
    r->op_index = op_index++;
    exec_op(r, false);
  }

  /* Finishing touches chosen by the header. */
  if (h & 0x40)
    while (r->nopen && !r->failed) {
      int k = r->open[r->nopen - 1];
      const char *fn = k == 1   ? "tirx_for_end"
                       : k == 4 ? "tirx_filter_end"
                       : k == 5 ? "tirx_team_end"
                                : "tirx_if_end";
      pre(r, fn);
      if (k == 1)
        tirx_for_end(r->b);
      else if (k == 4)
        tirx_filter_end(r->b);
      else if (k == 5)
        tirx_team_end(r->b);
      else
        tirx_if_end(r->b);
      post(r, fn, NULL, false, NULL, ANY);
      if (!r->failed) r->nopen--;
    }
  if ((h & 0x80) && !r->block_set) {
    pre(r, "tirx_set_block");
    tirx_set_block(r->b, 128, 1, 1);
    post(r, "tirx_set_block", NULL, false, NULL, MUST_OK);
    r->threads = 128;
  }

  /* The final build, twice: the builder stays usable and building is repeatable. */
  do_build(r);
  int before = r->nkept;
  do_build(r);
  if (before > 0 && r->nkept == before + 1) {
    const char *s1 = tirx_kernel_source(r->kept[before - 1]);
    const char *s2 = tirx_kernel_source(r->kept[before]);
    if (strcmp(s1, s2) != 0)
      fprintf(stderr, "---- first build ----\n%s\n---- second build ----\n%s\n", s1, s2);
    INVARIANT(strcmp(s1, s2) == 0, "building the same builder twice gave different sources");
    INVARIANT(strcmp(tirx_kernel_ir_str(r->kept[before - 1]), tirx_kernel_ir_str(r->kept[before])) == 0,
              "building the same builder twice gave different IR");
  }
}

static void run_free(run *r) {
  for (int i = 0; i < r->nkept; i++) tirx_kernel_release(r->kept[i]);
  r->nkept = 0;
  tirx_builder_destroy(r->b);
  tirx_builder_destroy(r->fb);
  r->b = r->fb = NULL;
  free(r->tr.p);
  r->tr.p = NULL;
}

/* Where two transcripts first differ, for the report. */
static void show_diff(const tbuf *a, const tbuf *b) {
  size_t i = 0;
  while (i < a->n && i < b->n && a->p[i] == b->p[i]) i++;
  size_t from = i > 200 ? i - 200 : 0;
  fprintf(stderr, "transcripts differ at byte %zu (lengths %zu, %zu)\n", i, a->n, b->n);
  fprintf(stderr, "---- run 1 around it ----\n");
  for (size_t j = from; j < a->n && j < i + 400; j++) fputc(a->p[j] ? a->p[j] : '|', stderr);
  fprintf(stderr, "\n---- run 2 around it ----\n");
  for (size_t j = from; j < b->n && j < i + 400; j++) fputc(b->p[j] ? b->p[j] : '|', stderr);
  fprintf(stderr, "\n");
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *e = getenv("TIRX_FUZZ_NVRTC_EVERY");
  if (e && *e) nvrtc_every = strtol(e, NULL, 10);
  e = getenv("TIRX_FUZZ_TRACE");
  trace = e && *e && *e != '0';
  e = getenv("TIRX_FUZZ_PRINT");
  print_src = e && *e && *e != '0';
  e = getenv("TIRX_FUZZ_IGNORE");
  ignore_weak = e && strstr(e, "weak");
  e = getenv("TIRX_FUZZ_NVRTC_IGNORE");
  if (e) snprintf(nvrtc_ignore, sizeof nvrtc_ignore, "%s", e);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static run r1, r2;
  if (trace) fprintf(stderr, "---- run 1 ----\n");
  run_input(&r1, data, size, 1);
  bool t = trace;
  trace = false;
  run_input(&r2, data, size, 2);
  trace = t;
  cur_run = NULL;
  if (r1.tr.n != r2.tr.n || memcmp(r1.tr.p, r2.tr.p, r1.tr.n) != 0) show_diff(&r1.tr, &r2.tr);
  INVARIANT(r1.tr.n == r2.tr.n && memcmp(r1.tr.p, r2.tr.p, r1.tr.n) == 0,
            "the same call sequence in fresh builders gave different results (statuses, "
            "messages or kernel sources)");
  run_free(&r1);
  run_free(&r2);
  return 0;
}
