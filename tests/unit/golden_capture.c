/*
 * The unit suite's part of the golden tests (tests/golden): the test binary is linked with
 * -Wl,--wrap=tirx_kernel_build, so every kernel a unit test builds passes through here. With
 * TIRX_GOLDEN_RECORD=DIR set, its source is written to DIR/unit.<suite>.<test>.<n>.cu (n counts
 * the kernels of one test, which runs in a process of its own); tests/golden/unit.sh compares
 * such a recording with tests/golden/expected/unit/. Without the variable nothing happens.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <tirx.h>

tirx_status __real_tirx_kernel_build(tirx_builder *b, tirx_kernel **out);
tirx_status __wrap_tirx_kernel_build(tirx_builder *b, tirx_kernel **out);

static int built; /* kernels built by the current test (its own process) */

tirx_status __wrap_tirx_kernel_build(tirx_builder *b, tirx_kernel **out) {
  tirx_status st = __real_tirx_kernel_build(b, out);
  const char *dir = getenv("TIRX_GOLDEN_RECORD");
  if (st != TIRX_OK || !out || !*out || !dir || !*dir || !criterion_current_test) return st;
  char path[4096];
  snprintf(path, sizeof path, "%s/unit.%s.%s.%d.cu", dir, criterion_current_suite->name,
           criterion_current_test->name, built++);
  FILE *f = fopen(path, "wb");
  if (f) {
    fputs(tirx_kernel_source(*out), f);
    fclose(f);
  }
  return st;
}
