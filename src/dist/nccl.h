/*
 * NCCL, loaded at run time: dlopen of libnccl.so.2 (or the path the caller names) and dlsym of
 * the few entry points tirx calls. tirx never links NCCL and never includes nccl.h; the types
 * below are declared here and checked against nccl.h 2.28 (ncclUniqueId is 128 bytes, ncclComm_t
 * a pointer, the enum values equal nccl.h's).
 */
#ifndef TIRX_DIST_NCCL_H
#define TIRX_DIST_NCCL_H

#include "../core/internal.h"

typedef struct tirx__nccl_comm *tirx__nccl_comm_t; /* ncclComm_t */

typedef struct tirx__nccl_unique_id {
  char internal[128]; /* NCCL_UNIQUE_ID_BYTES */
} tirx__nccl_unique_id;

/* ncclResult_t */
enum {
  TIRX__NCCL_SUCCESS = 0,
  TIRX__NCCL_UNHANDLED_CUDA_ERROR = 1,
  TIRX__NCCL_SYSTEM_ERROR = 2,
  TIRX__NCCL_INTERNAL_ERROR = 3,
  TIRX__NCCL_INVALID_ARGUMENT = 4,
  TIRX__NCCL_INVALID_USAGE = 5,
  TIRX__NCCL_REMOTE_ERROR = 6,
  TIRX__NCCL_IN_PROGRESS = 7
};
typedef int tirx__nccl_result;

/* ncclRedOp_t */
enum { TIRX__NCCL_SUM = 0, TIRX__NCCL_PROD = 1, TIRX__NCCL_MAX = 2, TIRX__NCCL_MIN = 3 };

/* ncclDataType_t */
enum {
  TIRX__NCCL_INT8 = 0,
  TIRX__NCCL_UINT8 = 1,
  TIRX__NCCL_INT32 = 2,
  TIRX__NCCL_UINT32 = 3,
  TIRX__NCCL_INT64 = 4,
  TIRX__NCCL_UINT64 = 5,
  TIRX__NCCL_FLOAT16 = 6,
  TIRX__NCCL_FLOAT32 = 7,
  TIRX__NCCL_FLOAT64 = 8,
  TIRX__NCCL_BFLOAT16 = 9
};

/*
 * ncclConfig_t as NCCL 2.14 defined it (size, magic, version, blocking). NCCL copies
 * min(size, its own sizeof) bytes over its defaults and ignores the fields a config of an older
 * version does not have, so this prefix is valid for every NCCL from 2.14 on. `pad` makes the
 * copied bytes explicit (NCCL resets cgaClusterSize for versions before 2.17).
 */
typedef struct tirx__nccl_config {
  size_t size;
  unsigned int magic;   /* 0xcafebeef */
  unsigned int version; /* NCCL_VERSION(2,14,0) = 21400 */
  int blocking;
  int pad; /* INT_MIN, NCCL_CONFIG_UNDEF_INT */
} tirx__nccl_config;

/* The oldest NCCL tirx accepts: ncclCommInitRankConfig and non-blocking communicators. */
#define TIRX__NCCL_MIN_VERSION 21400

/* The entry points tirx calls: name, parameters. */
#define TIRX__NCCL_FUNCS(X)                                                                        \
  X(GetVersion, (int *version))                                                                    \
  X(GetUniqueId, (tirx__nccl_unique_id * id))                                                      \
  X(CommInitRankConfig, (tirx__nccl_comm_t * comm, int nranks, tirx__nccl_unique_id id, int rank,  \
                         tirx__nccl_config *config))                                               \
  X(CommFinalize, (tirx__nccl_comm_t comm))                                                       \
  X(CommDestroy, (tirx__nccl_comm_t comm))                                                         \
  X(CommAbort, (tirx__nccl_comm_t comm))                                                           \
  X(CommGetAsyncError, (tirx__nccl_comm_t comm, tirx__nccl_result * async_error))                  \
  X(CommCount, (tirx__nccl_comm_t comm, int *count))                                               \
  X(CommUserRank, (tirx__nccl_comm_t comm, int *rank))                                             \
  X(CommCuDevice, (tirx__nccl_comm_t comm, int *device))                                           \
  X(AllReduce, (const void *send, void *recv, size_t count, int dtype, int op,                     \
                tirx__nccl_comm_t comm, void *stream))                                             \
  X(ReduceScatter, (const void *send, void *recv, size_t recvcount, int dtype, int op,             \
                    tirx__nccl_comm_t comm, void *stream))                                         \
  X(AllGather, (const void *send, void *recv, size_t sendcount, int dtype,                         \
                tirx__nccl_comm_t comm, void *stream))                                             \
  X(Broadcast, (const void *send, void *recv, size_t count, int dtype, int root,                   \
                tirx__nccl_comm_t comm, void *stream))                                             \
  X(Send, (const void *send, size_t count, int dtype, int peer, tirx__nccl_comm_t comm,            \
           void *stream))                                                                          \
  X(Recv, (void *recv, size_t count, int dtype, int peer, tirx__nccl_comm_t comm, void *stream))   \
  X(GroupStart, (void))                                                                            \
  X(GroupEnd, (void))

typedef struct tirx__nccl {
  void *lib;   /* the dlopen handle; never closed (NCCL keeps threads) */
  char *path;  /* what was opened */
  int version; /* ncclGetVersion */
  const char *(*GetErrorString)(tirx__nccl_result result);
  /* Every other entry point returns ncclResult_t. */
#define TIRX__NCCL_MEMBER_(name, params) tirx__nccl_result(*name) params;
  TIRX__NCCL_FUNCS(TIRX__NCCL_MEMBER_)
#undef TIRX__NCCL_MEMBER_
} tirx__nccl;

/*
 * The NCCL table for path (NULL: $TIRX_NCCL_LIBRARY, else "libnccl.so.2"), loaded on first use
 * and kept for the life of the process (one table per distinct path). On the first load of any
 * table, sets NCCL_NVLS_ENABLE=0 unless the environment has it. Thread-safe.
 * Errors (message starting with fn): TIRX_E_NOT_SUPPORTED ("<fn>: cannot load NCCL
 * (libnccl.so.2): <dlerror>", a missing entry point, a version older than 2.14),
 * TIRX_E_NO_MEMORY.
 */
tirx_status tirx__nccl_load(const char *fn, const char *path, const tirx__nccl **out);

/* "ncclInvalidArgument (4): invalid argument" into buf. */
void tirx__nccl_describe(const tirx__nccl *n, tirx__nccl_result r, char *buf, size_t size);

/* The library path tirx__nccl_load would open for path. Static or from the environment. */
const char *tirx__nccl_path(const char *path);

#endif
