/* The generated source depends only on the kernel: building the same kernel again in the same
 * process, after other kernels, gives the same bytes and hash (so the caches hit). */
#include "../helpers.h"
#include "rows_ref.h"

/* The row kernels' options of the current test (each test runs in its own process). */
static tirx_row_options ro;

static char *build_source(tirx_row_op kind, tirx_dtype dtype, int64_t width) {
  char err[512] = "";
  tirx_kernel *k = row_kernel(kind, &ro, dtype, width, false, err, sizeof err);
  cr_assert_not_null(k, "%s", err);
  char *src = strdup(tirx_kernel_source(k));
  tirx_kernel_release(k);
  return src;
}

Test(prim_determinism, same_kernel_same_source_whatever_was_built_before) {
  for (int kind = 0; kind < TIRX_ROW_OP_COUNT; kind++) {
    char *first = build_source((tirx_row_op)kind, TIRX_BF16, 5000);
    /* Build others in between: nothing they do may leak into the next build's names. */
    for (int other = 0; other < TIRX_ROW_OP_COUNT; other++)
      free(build_source((tirx_row_op)other, TIRX_F32, 8192));
    char *again = build_source((tirx_row_op)kind, TIRX_BF16, 5000);
    cr_assert_str_eq(first, again, "%s differs between two builds",
                     tirx_kernels_row_name((tirx_row_op)kind));
    free(first);
    free(again);
  }
}
