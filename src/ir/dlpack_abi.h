/*
 * DLPack as tirx reads it: the unversioned DLTensor of <dlpack/dlpack.h> (any version), and
 * DLPack 1.x's DLManagedTensorVersioned. The header tirx builds against may predate 1.0
 * (Debian 12's libdlpack-dev is 0.6, without the versioned struct); then the structs and flags
 * below are defined here, exactly as DLPack 1.0's dlpack.h defines them (the ABI: a version,
 * the producer's context and deleter, 64 bits of flags, then the DLTensor). With a 1.x header
 * its own definitions are used. Internal: the public API passes these as const void *.
 */
#ifndef TIRX_IR_DLPACK_ABI_H
#define TIRX_IR_DLPACK_ABI_H

#include <dlpack/dlpack.h>
#include <stddef.h>

#include "../core/internal.h"

#ifndef DLPACK_MAJOR_VERSION /* a header older than DLPack 1.0 */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif

/* The major version of DLManagedTensorVersioned tirx reads (DLPack 1.x: any minor, whose
 * additions are enum values). Another major version changes the layout past `flags`. */
enum { TIRX__DLPACK_MAJOR = 1 };

/* The DLTensor of a DLPack argument of either kind; NULL for other kinds or a NULL pointer.
 * The caller has checked a versioned tensor's major version (tirx__kernel_plan does). */
static inline const DLTensor *tirx__arg_dltensor(const tirx_arg *a) {
  if (a->kind == TIRX_ARG_DLPACK)
    return (const DLTensor *)a->u.dlpack;
  if (a->kind == TIRX_ARG_DLPACK_VERSIONED && a->u.dlpack)
    return &((const DLManagedTensorVersioned *)a->u.dlpack)->dl_tensor;
  return NULL;
}

#endif
