/*
 * tirx/dist.h: distributed tensors and NCCL collectives (paper section 3.2).
 *
 * A distributed tensor (tirx_dtensor) is a global logical shape, an element type, and a layout
 * over the axes `pid` (the rank in a communicator of nranks ranks) and `m` (the element offset
 * in that rank's local buffer). The paper's examples on a 2x2 mesh of a 64x128 tensor:
 *
 *     S0S1  (2,32,2,64):(1@pid,64@m,2@pid,1@m)    rank p holds a 32x64 block, dense
 *     S0R   (2,32,128):(1@pid,128@m,1@m)+[2:2@pid] rows split over pid bit 0, copied on bit 1
 *
 * (The paper writes S0S1 with the global row stride 128; that is legal too and means each
 * rank's 32x64 block sits in a buffer with rows 128 elements apart.) tirx derives each rank's
 * local shape and strides from the layout (tirx_dtensor_local_shape) and checks the buffers a
 * rank passes against it (tirx_dtensor_check): the paper's "runtime checks to ensure the
 * consistency of the input DTensor".
 *
 * Rules of a distributed layout:
 *   - D, R and O use the axes pid and m only; no swizzle; the offset on m is 0.
 *   - Replicas are on pid (a copy per rank); a replica on m is rejected.
 *   - Every rank holds at most one part: the map from (pid digits, replica digits) to a rank is
 *     one-to-one, and every rank it reaches is in [0, nranks). A rank outside that map holds
 *     nothing (tirx_dtensor_on_rank; a broadcast's source lives on its root only: "+2@pid").
 *   - The local part of each dimension is one iter on m after the pid iters are taken out
 *     (adjacent m iters merge), with a positive stride, so that the local buffer is an ordinary
 *     strided tensor of the same rank as the global shape.
 *
 * Partial values. A layout places copies; it cannot say that the copies are addends. A
 * dtensor therefore carries a `partial` flag (PyTorch DTensor's Partial placement): with
 * TIRX_PARTIAL_SUM the pid replicas of an element hold addends and the logical value is their
 * sum (MAX, MIN, PROD likewise). The flag applies to all pid replicas of the layout.
 *
 * Collectives. tirx_collective_create picks, from the source and destination dtensors, the
 * NCCL collective that turns one into the other, through one ordered table of rules (the
 * spirit of the dispatch registry: name, legality check that lists failed constraints, and an
 * executor). The rules, in order, with n = nranks:
 *
 *   all_reduce      partial(op) on every rank -> a whole copy on every rank  ncclAllReduce
 *   reduce_scatter  partial(op) on every rank -> n shards                    ncclReduceScatter
 *   all_gather      n shards -> a whole copy on every rank                   ncclAllGather
 *   all_to_all      n shards -> n shards, block j of rank i to rank j        ncclSend/ncclRecv
 *   broadcast       the whole tensor on one rank -> a copy on every rank     ncclBroadcast
 *
 * and each also needs the data to land where NCCL puts it: both local buffers dense, and the
 * layouts related exactly as the collective's block order demands (for an all-gather, rank r's
 * shard is block r of the gathered buffer). Sub-mesh collectives (a reduce over pid bit 1 of a
 * 2x2 mesh) need sub-communicators and are not supported: no rule matches. With no matching
 * rule the error names both layouts and lists each rule's failed constraints.
 *
 * Communicators. NCCL is loaded at run time with dlopen("libnccl.so.2") (never linked; the
 * library path may be overridden by tirx_comm_options.nccl_library or TIRX_NCCL_LIBRARY). A
 * machine without it gets TIRX_E_NOT_SUPPORTED from the functions below that need it, with
 * the loader's reason; the rest of tirx works. NCCL 2.14 or newer is required. Before its first
 * use of NCCL, tirx sets NCCL_NVLS_ENABLE=0 in the environment unless it is already set
 * (NVLink multicast is off on the machines tirx targets, and tirx never calls
 * cuMulticastCreate); a host that initialised NCCL itself must set it itself.
 *
 * Faults (reliability plan T12). Communicators that tirx creates are non-blocking
 * (ncclConfig blocking = 0): initialisation and every collective return at once, and tirx
 * polls ncclCommGetAsyncError (about every millisecond, never less than once a second) until
 * NCCL finishes or the deadline passes. tirx_comm_synchronize waits for a stream the same way.
 * A deadline that passes, or an asynchronous NCCL error, aborts the communicator
 * (ncclCommAbort) and returns TIRX_E_COMM_ABORTED; every later call on it returns
 * TIRX_E_COMM_ABORTED at once. Nothing waits forever unless the caller asks for no deadline.
 *
 * Load kernels before collectives start. Loading a module (cuModuleLoadData, or a lazily loaded
 * function's first launch under CUDA_MODULE_LOADING=LAZY, the default) while a collective runs
 * can deadlock against it. Prepare every kernel that runs alongside collectives first
 * (tirx_runtime_warmup, or tirx_prepare_async + tirx_future_wait for each shape), and set
 * CUDA_MODULE_LOADING=EAGER in processes that launch tirx kernels next to NCCL. A host must not
 * issue blocking CUDA calls from another thread while a collective is enqueued on the same
 * device. CUDA_LAUNCH_BLOCKING=1 deadlocks NCCL with more than one rank: tirx_comm_create
 * refuses it.
 *
 * Thread safety: a dtensor and a collective are immutable after creation and may be shared. A
 * communicator is used by one thread at a time, except tirx_comm_abort, which any thread may
 * call at any time.
 *
 * Included by <tirx.h>; do not include it on its own.
 */
#ifndef TIRX_DIST_H
#define TIRX_DIST_H

#include "layout.h"
#include "runtime.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  TIRX_COMM_ID_BYTES = 128,  /* sizeof(ncclUniqueId) */
  TIRX_DIST_MAX_RANKS = 65536
};

/* ------------------------------------------------------------------------------------------ */
/* Distributed tensors                                                                         */
/* ------------------------------------------------------------------------------------------ */

typedef struct tirx_dtensor tirx_dtensor;

/* What the pid replicas of a distributed tensor hold: copies (NONE) or addends and the like. */
typedef enum tirx_partial {
  TIRX_PARTIAL_NONE = 0, /* replicas are copies of the value */
  TIRX_PARTIAL_SUM = 1,  /* the value is the sum of the replicas */
  TIRX_PARTIAL_PROD = 2,
  TIRX_PARTIAL_MAX = 3,
  TIRX_PARTIAL_MIN = 4
} tirx_partial;

/* "none", "sum", "prod", "max", "min"; NULL outside the enum. Static. */
TIRX_API const char *tirx_partial_name(tirx_partial p);

/*
 * Creates a distributed tensor of dtype with global shape shape[rank], placed on a mesh of
 * nranks ranks by layout (over pid and m; flat or grouped, it is grouped to shape) and holding
 * partial values as partial says. The layout is copied. The caller destroys the result.
 * Errors: TIRX_E_NULL_ARG; TIRX_E_INVALID_ARG (rank, shape, dtype, nranks, partial, a layout
 * that breaks a rule above, naming it: "layout uses axis warpid; a distributed layout uses pid
 * and m only"); TIRX_E_OVERFLOW (the global size); TIRX_E_NOT_REPRESENTABLE (the layout cannot be
 * grouped to shape, or a dimension's local part is not one stride); TIRX_E_OUT_OF_RANGE (a
 * part placed on a rank outside [0, nranks)); TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_status tirx_dtensor_create(tirx_dtype dtype, int rank, const int64_t *shape,
                                         const tirx_layout *layout, int nranks,
                                         tirx_partial partial, tirx_dtensor **out);

/* Frees t. NULL is a no-op. */
TIRX_API void tirx_dtensor_destroy(tirx_dtensor *t);

/* Accessors; 0, NULL or TIRX_PARTIAL_NONE for a NULL tensor. The layout is the canonical form
 * grouped to the global shape, owned by t. */
TIRX_API tirx_dtype tirx_dtensor_dtype(const tirx_dtensor *t);
TIRX_API int tirx_dtensor_rank(const tirx_dtensor *t);
TIRX_API int tirx_dtensor_nranks(const tirx_dtensor *t);
TIRX_API tirx_partial tirx_dtensor_partial(const tirx_dtensor *t);
TIRX_API const tirx_layout *tirx_dtensor_layout(const tirx_dtensor *t);

/*
 * The local part every holding rank has: its shape and strides (in elements) into shape[cap]
 * and strides[cap] (either may be NULL), cap >= rank. A dimension with extent 1 reports
 * stride 1. Errors: TIRX_E_NULL_ARG, TIRX_E_BUFFER_TOO_SMALL.
 */
TIRX_API tirx_status tirx_dtensor_local_shape(const tirx_dtensor *t, int64_t *shape,
                                              int64_t *strides, int cap);

/* Elements in one holding rank's part (the product of the local shape); 0 for NULL. */
TIRX_API int64_t tirx_dtensor_local_size(const tirx_dtensor *t);

/* True when rank holds a part of t (false for NULL or a rank outside [0, nranks)). */
TIRX_API bool tirx_dtensor_on_rank(const tirx_dtensor *t, int rank);

/*
 * Checks local, the buffer that rank passes for t: dtype, rank, shape and strides equal to the
 * local part's (strides NULL means dense row-major; a stride of an extent-1 dimension is not
 * compared), data non-NULL and aligned to the element size. A rank that holds no part may pass
 * NULL (nothing is checked). Errors: TIRX_E_NULL_ARG, TIRX_E_OUT_OF_RANGE (rank), and
 * TIRX_E_LAUNCH_ARG for a mismatch: "tirx_dtensor_check: rank 1: shape[0] is 64, expected 32".
 */
TIRX_API tirx_status tirx_dtensor_check(const tirx_dtensor *t, int rank,
                                        const tirx_tensor_arg *local);

/* The description "f32[64,128] over 4 ranks: (2,32,2,64):(1@pid,64@m,2@pid,1@m) partial sum"
 * (no "partial" part when it is NONE), malloc'ed (the caller frees it); NULL on failure. */
TIRX_API char *tirx_dtensor_str(const tirx_dtensor *t);

/* ------------------------------------------------------------------------------------------ */
/* Communicators                                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef struct tirx_comm tirx_comm;

/* An ncclUniqueId: rank 0 generates it and sends the bytes to every other rank. */
typedef struct tirx_comm_id {
  unsigned char bytes[TIRX_COMM_ID_BYTES]; /* the id's bytes, opaque */
} tirx_comm_id;

/* Options of the communicator functions. Zero-initialise and set what you need. An extensible
 * struct (README.md, "ABI policy"). */
typedef struct tirx_comm_options {
  /* 0 (version 1) or sizeof(tirx_comm_options); other values: TIRX_E_INVALID_ARG. */
  size_t size;
  /* The NCCL library to dlopen. NULL: $TIRX_NCCL_LIBRARY, else "libnccl.so.2". */
  const char *nccl_library;
  /* The communicator's deadline in milliseconds: for initialisation, for each collective's
   * enqueue, and for tirx_comm_synchronize called with timeout -2. 0: 300000 (5 minutes);
   * -1: none (NCCL's errors are still polled). */
  int64_t timeout_ms;
} tirx_comm_options;

/* The NCCL version (ncclGetVersion: 22809 for 2.28.9) of library (NULL: as in
 * tirx_comm_options.nccl_library). Needs no GPU. Errors: TIRX_E_NULL_ARG, TIRX_E_NOT_SUPPORTED
 * (the library cannot be loaded, lacks an entry point, or is older than 2.14). */
TIRX_API tirx_status tirx_nccl_version(const char *library, int *out);

/* A new unique id (ncclGetUniqueId) for tirx_comm_create. options may be NULL.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_NOT_SUPPORTED (NCCL), TIRX_E_IO (ncclGetUniqueId failed,
 * usually no usable network interface: NCCL's error string is in the message). */
TIRX_API tirx_status tirx_comm_id_generate(const tirx_comm_options *options, tirx_comm_id *out);

/*
 * Creates rank `rank` of a communicator of size ranks on rt's device, from id (the same bytes
 * on every rank). Non-blocking initialisation with the options' deadline: every rank must call
 * it. options may be NULL. The caller destroys the result; rt must outlive it.
 * Errors: TIRX_E_NULL_ARG; TIRX_E_INVALID_ARG (size < 1 or > TIRX_DIST_MAX_RANKS, rank outside
 * [0, size), timeout < -1); TIRX_E_NOT_SUPPORTED (NCCL missing, or CUDA_LAUNCH_BLOCKING=1 with
 * size > 1); TIRX_E_NO_DEVICE, TIRX_E_STICKY, TIRX_E_FORKED (the runtime);
 * TIRX_E_COMM_ABORTED (NCCL failed, or the deadline passed: the communicator was aborted).
 */
TIRX_API tirx_status tirx_comm_create(tirx_runtime *rt, const tirx_comm_id *id, int rank,
                                      int size, const tirx_comm_options *options,
                                      tirx_comm **out);

/*
 * Wraps an ncclComm_t that the host application created on rt's device. The communicator is
 * borrowed: tirx_comm_destroy does not destroy it, and it must outlive the wrapper; but
 * tirx_comm_abort aborts it (ncclCommAbort), after which the host must not use it.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_NOT_SUPPORTED (NCCL), TIRX_E_NO_DEVICE, TIRX_E_STICKY,
 * TIRX_E_FORKED, TIRX_E_INVALID_ARG (timeout; NCCL refused to report the communicator's rank,
 * size or device, for example while its non-blocking initialisation runs; it is on another
 * device than rt).
 */
TIRX_API tirx_status tirx_comm_wrap(tirx_runtime *rt, void *nccl_comm,
                                    const tirx_comm_options *options, tirx_comm **out);

/* Destroys a communicator tirx created (ncclCommDestroy, after the work on it finished) and
 * frees the wrapper; a wrapped one is only unwrapped; an aborted one is only freed. NULL is a
 * no-op. */
TIRX_API void tirx_comm_destroy(tirx_comm *c);

/* This rank, the number of ranks; -1 for NULL. */
TIRX_API int tirx_comm_rank(const tirx_comm *c);
TIRX_API int tirx_comm_size(const tirx_comm *c);

/* The ncclComm_t, NULL once aborted or for NULL. */
TIRX_API void *tirx_comm_nccl(const tirx_comm *c);

/* TIRX_OK while usable, TIRX_E_COMM_ABORTED once aborted (the reason in tirx_last_error()),
 * TIRX_E_NULL_ARG for NULL. Also polls ncclCommGetAsyncError: an error found aborts. */
TIRX_API tirx_status tirx_comm_health(tirx_comm *c);

/* Aborts the communicator (ncclCommAbort) from any thread; later calls on it return
 * TIRX_E_COMM_ABORTED. Aborting an aborted communicator does nothing. Errors: TIRX_E_NULL_ARG. */
TIRX_API tirx_status tirx_comm_abort(tirx_comm *c);

/* Aborts several communicators together: marks every one aborted first, then aborts them one
 * by one (FM-44: aborting them one after another while the others still run can deadlock).
 * NULL entries are skipped. Errors: TIRX_E_NULL_ARG (comms with count > 0),
 * TIRX_E_INVALID_ARG (count < 0). */
TIRX_API tirx_status tirx_comm_abort_all(tirx_comm *const *comms, int count);

/*
 * Waits until the work on stream (a CUstream; NULL: the legacy default stream) has finished,
 * polling the stream and ncclCommGetAsyncError. timeout_ms: -2 the communicator's deadline
 * (tirx_comm_options.timeout_ms), -1 none, else milliseconds. On an NCCL error or when the
 * deadline passes, the communicator is aborted and TIRX_E_COMM_ABORTED returned.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (timeout < -2), TIRX_E_COMM_ABORTED,
 * TIRX_E_STICKY and TIRX_E_DRIVER (the stream failed).
 */
TIRX_API tirx_status tirx_comm_synchronize(tirx_comm *c, void *stream, int64_t timeout_ms);

/* ------------------------------------------------------------------------------------------ */
/* Collectives                                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct tirx_collective tirx_collective;

/*
 * Chooses the collective that turns src into dst (see the rules above): the first legal rule
 * of the table, or the one named by rule ("all_reduce", "reduce_scatter", "all_gather",
 * "all_to_all", "broadcast"; NULL lets the table choose). The dtensors are copied. The caller
 * destroys the result.
 * Errors: TIRX_E_NULL_ARG; TIRX_E_TYPE (dtypes differ); TIRX_E_INVALID_ARG (global shapes or
 * nranks differ, an unknown rule name, or a named rule that is not legal: its failed
 * constraints follow); TIRX_E_NO_RULE ("no collective turns src <layout> into dst <layout>"
 * and, per rule, the constraints it failed); TIRX_E_NO_MEMORY.
 */
TIRX_API tirx_status tirx_collective_create(const tirx_dtensor *src, const tirx_dtensor *dst,
                                            const char *rule, tirx_collective **out);

/* Frees c. NULL is a no-op. */
TIRX_API void tirx_collective_destroy(tirx_collective *c);

/* The chosen rule's name, "all_gather"; NULL for NULL. Static. */
TIRX_API const char *tirx_collective_rule(const tirx_collective *c);

/*
 * The selection report, owned by c (lives as long as c):
 *
 *   f32[64,128] over 4 ranks: (64,128):(128@m,1@m)+[4:1@pid] partial sum
 *     -> f32[64,128] over 4 ranks: ((4,16),128):((1@pid,128@m),1@m)
 *     = reduce_scatter op=sum count=2048
 *     rejected all_reduce: dst is sharded into 4 parts; all_reduce needs a whole copy on every rank
 *
 * "" for NULL.
 */
TIRX_API const char *tirx_collective_report(const tirx_collective *c);

/*
 * Enqueues the collective on stream (a CUstream; NULL: the legacy default stream) for this
 * rank of comm: src and dst are this rank's local buffers, checked with tirx_dtensor_check
 * (a rank that holds no part of src, such as a broadcast's non-root, may pass NULL).
 * Asynchronous, like tirx_launch: wait with tirx_comm_synchronize. src and dst may be the same
 * buffer for all_reduce and broadcast (in place); other overlaps are undefined.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_INVALID_ARG (comm's size differs from the dtensors'
 * nranks), TIRX_E_LAUNCH_ARG (a buffer), TIRX_E_COMM_ABORTED, TIRX_E_STICKY, TIRX_E_FORKED.
 */
TIRX_API tirx_status tirx_collective_run(const tirx_collective *c, tirx_comm *comm,
                                         const tirx_tensor_arg *src, const tirx_tensor_arg *dst,
                                         void *stream);

#ifdef __cplusplus
}
#endif
#endif /* TIRX_DIST_H */
