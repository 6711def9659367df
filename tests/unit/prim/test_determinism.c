/* The generated source depends only on the kernel: building the same kernel again in the same
 * process, after other kernels, gives the same bytes and hash (so the caches hit). */
#include "../helpers.h"
#include "membound.h"

static char *build_source(membound_kind kind, tirx_dtype dtype, int64_t width) {
  char err[512] = "";
  tirx_kernel *k = membound_build(kind, dtype, width, false, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  char *src = strdup(tirx_kernel_source(k));
  tirx_kernel_release(k);
  return src;
}

Test(prim_determinism, same_kernel_same_source_whatever_was_built_before) {
  for (int kind = 0; kind < MEMBOUND_KIND_COUNT; kind++) {
    char *first = build_source((membound_kind)kind, TIRX_BF16, 5000);
    /* Build others in between: nothing they do may leak into the next build's names. */
    for (int other = 0; other < MEMBOUND_KIND_COUNT; other++)
      free(build_source((membound_kind)other, TIRX_F32, 8192));
    char *again = build_source((membound_kind)kind, TIRX_BF16, 5000);
    cr_assert_str_eq(first, again, "%s differs between two builds",
                     membound_name((membound_kind)kind));
    free(first);
    free(again);
  }
}
