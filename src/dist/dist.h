/*
 * src/dist: distributed tensors (dtensor.c), the collective rules (rules.c: one ordered table),
 * selection and execution (collective.c), communicators (comm.c) and NCCL (nccl.c).
 */
#ifndef TIRX_DIST_DIST_H
#define TIRX_DIST_DIST_H

#include <pthread.h>
#include <stdatomic.h>

#include "../core/internal.h"
#include "nccl.h"

/* ---- Distributed tensors (dtensor.c) ------------------------------------------------------- */

struct tirx_dtensor {
  tirx_arena *arena;
  tirx_dtype dtype;
  int rank; /* logical rank of the global shape */
  int64_t shape[TIRX_LAYOUT_MAX_RANK];
  int nranks;
  tirx_partial partial;
  const tirx_layout *layout; /* canonical, grouped to shape */
  /* Derived from the layout. */
  int64_t local_shape[TIRX_LAYOUT_MAX_RANK];
  int64_t local_strides[TIRX_LAYOUT_MAX_RANK]; /* 1 for extent-1 dimensions */
  int64_t local_size;  /* elements of one holding rank's part */
  bool local_dense;    /* the local m coordinates are exactly [0, local_size) */
  int64_t nshards;     /* product of the pid D extents: distinct parts */
  int64_t ncopies;     /* product of the pid R extents: copies (or addends) of each part */
  int64_t pid_offset;  /* O on pid */
  int nholders;        /* ranks holding a part: nshards * ncopies */
  unsigned char *holds; /* holds[r] for r in [0, nranks) */
};

/* Copies t into arena-owned storage of a new dtensor (for collectives that keep their
 * operands). NULL with TIRX_E_NO_MEMORY recorded. */
tirx_dtensor *tirx__dtensor_clone(const tirx_dtensor *t, const char *fn);

/*
 * The layout of t as NCCL sees it, an m-only layout grouped to the global shape: every pid iter
 * (e):(s@pid) becomes (e):(s*pid_mult@m), the pid offset becomes offset*pid_mult on m; every m
 * coordinate v becomes (v / blk) * hi_mult + v % blk when blk > 0 (an m iter that straddles a
 * multiple of blk is split; one that cannot be split cleanly fails). Replicas are dropped.
 * NULL when the split is not clean (no error recorded) or out of memory.
 */
const tirx_layout *tirx__dtensor_view(tirx_arena *a, const tirx_dtensor *t, int64_t pid_mult,
                                      int64_t blk, int64_t hi_mult);

/* The NCCL data type of a tirx dtype for data movement (bool and fp8 move as uint8). */
int tirx__nccl_dtype(tirx_dtype t);

/* ---- Communicators (comm.c) ----------------------------------------------------------------- */

enum { TIRX__COMM_OK = 0, TIRX__COMM_ABORTED = 1 };

struct tirx_comm {
  tirx_runtime *rt;
  const tirx__nccl *nccl;
  tirx__nccl_comm_t comm; /* NULL once aborted; under mu */
  bool owned;             /* created by tirx (destroyed by tirx_comm_destroy) */
  int rank, size, device;
  int64_t timeout_ms; /* -1: none */
  _Atomic int state;
  pthread_mutex_t mu; /* serialises NCCL calls on comm against an abort from another thread */
  char reason[512];   /* why it was aborted; under mu */
};

/*
 * Waits for an NCCL call's result on c: ncclInProgress (a non-blocking communicator) is polled
 * through ncclCommGetAsyncError until it settles or the deadline passes. Any failure aborts c.
 * Called with c->mu held and the runtime's context current. what names the call in messages.
 * Returns TIRX_OK or TIRX_E_COMM_ABORTED (recorded, starting with fn).
 */
tirx_status tirx__comm_settle(tirx_comm *c, const char *fn, const char *what,
                              tirx__nccl_result r);

/* TIRX_E_COMM_ABORTED with the recorded reason when c was aborted, else TIRX_OK. */
tirx_status tirx__comm_check(tirx_comm *c, const char *fn);

/* Enters c for an NCCL call: checks c and its runtime, makes the runtime's context current and
 * locks c->mu. On TIRX_OK, tirx__comm_leave must follow. */
typedef struct tirx__comm_guard {
  bool pushed;
} tirx__comm_guard;
tirx_status tirx__comm_enter(tirx_comm *c, const char *fn, tirx__comm_guard *g);
void tirx__comm_leave(tirx_comm *c, tirx__comm_guard *g);

/* ---- Collective rules (rules.c) ------------------------------------------------------------- */

enum { TIRX__COLL_MAX_REASONS = 12 };

/* What a rule's check decides for a legal pair: the NCCL call's count, op and root. */
typedef struct tirx__coll_args {
  int64_t count; /* elements per NCCL call (recvcount, sendcount, block) */
  int op;        /* ncclRedOp_t, for reductions */
  int root;      /* broadcast */
  int dtype;     /* ncclDataType_t */
} tirx__coll_args;

typedef struct tirx__coll_ctx {
  const tirx_dtensor *src, *dst;
  tirx_arena *arena;
  int nreasons;
  const char *reasons[TIRX__COLL_MAX_REASONS];
  tirx__coll_args args;
} tirx__coll_ctx;

/* Enqueues the collective for this rank: src and dst are this rank's buffers (src may be NULL
 * when the rank holds no part of the source). Called inside tirx__comm_enter. */
typedef tirx__nccl_result (*tirx__coll_run_fn)(const tirx__nccl *n, tirx__nccl_comm_t comm,
                                               const tirx__coll_args *a, int nranks,
                                               int elem_bytes, const void *src, void *dst,
                                               void *stream);

typedef struct tirx__coll_rule {
  const char *name;    /* "all_gather" */
  const char *summary; /* "ncclAllGather: n shards -> a whole copy on every rank" */
  const char *call;    /* what messages name: "ncclAllGather" */
  void (*check)(tirx__coll_ctx *ctx);
  tirx__coll_run_fn run;
} tirx__coll_rule;

/* A chosen collective (collective.c). */
struct tirx_collective {
  const tirx__coll_rule *rule;
  tirx__coll_args args;
  tirx_dtensor *src, *dst; /* copies */
  char *report;            /* malloc'ed */
};

/* The ordered table of rules. */
const tirx__coll_rule *const *tirx__coll_rules(int *count);

/* Records a failed constraint (a sentence without a final period). */
void tirx__coll_reason(tirx__coll_ctx *ctx, const char *fmt, ...) TIRX_PRINTF(2, 3);

#endif
