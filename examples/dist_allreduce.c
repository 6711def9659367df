/*
 * dist_allreduce: a distributed tensor and an NCCL all-reduce chosen from its layouts.
 *
 * One process, one rank (world size 1): a 1000 x 77 f32 tensor whose copies on every rank are
 * partial sums, all-reduced into a whole copy on every rank. tirx picks the collective from the
 * two layouts and prints why; on a machine with a GPU and NCCL it runs it and checks the result
 * against a float64 reference. Without a GPU or NCCL it says so and exits 0. It also prints the
 * local parts of the paper's S0S1 and S0R layouts on a 2x2 mesh (no GPU needed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tirx.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if ((call) != TIRX_OK) {                                                                       \
      fprintf(stderr, "%s failed: %s\n", #call, tirx_last_error());                                \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static void print_local(const tirx_dtensor *t) {
  int64_t shape[2], strides[2];
  tirx_dtensor_local_shape(t, shape, strides, 2);
  char *s = tirx_dtensor_str(t);
  printf("  %s\n    local part (%lld,%lld) strides (%lld,%lld) on ranks", s, (long long)shape[0],
         (long long)shape[1], (long long)strides[0], (long long)strides[1]);
  for (int r = 0; r < tirx_dtensor_nranks(t); r++)
    if (tirx_dtensor_on_rank(t, r)) printf(" %d", r);
  printf("\n");
  free(s);
}

int main(void) {
  tirx_arena *a = tirx_arena_create();
  /* The paper's 2x2 mesh (section 3.2), 64 x 128. */
  int64_t mesh_shape[] = {64, 128};
  tirx_dtensor *s0s1 = NULL, *s0r = NULL;
  CHECK(tirx_dtensor_create(TIRX_F32, 2, mesh_shape,
                            tirx_layout_parse(a, "(2,32,2,64):(1@pid,128@m,2@pid,1@m)"), 4,
                            TIRX_PARTIAL_NONE, &s0s1));
  CHECK(tirx_dtensor_create(TIRX_F32, 2, mesh_shape,
                            tirx_layout_parse(a, "(2,32,128):(1@pid,128@m,1@m)+[2:2@pid]"), 4,
                            TIRX_PARTIAL_NONE, &s0r));
  printf("the paper's layouts on a 2x2 mesh:\n");
  print_local(s0s1);
  print_local(s0r);

  /* World size 1: partial sums on every rank -> a whole copy on every rank. */
  const int world = 1;
  int64_t shape[] = {1000, 77};
  char text[128];
  snprintf(text, sizeof text, "(1000,77):(77,1)+[%d:1@pid]", world);
  tirx_dtensor *partial = NULL, *whole = NULL;
  CHECK(tirx_dtensor_create(TIRX_F32, 2, shape, tirx_layout_parse(a, text), world,
                            TIRX_PARTIAL_SUM, &partial));
  CHECK(tirx_dtensor_create(TIRX_F32, 2, shape, tirx_layout_parse(a, text), world,
                            TIRX_PARTIAL_NONE, &whole));
  tirx_collective *coll = NULL;
  CHECK(tirx_collective_create(partial, whole, NULL, &coll));
  printf("collective chosen from the layouts:\n%s", tirx_collective_report(coll));

  int version = 0;
  if (tirx_nccl_version(NULL, &version) != TIRX_OK) {
    printf("no NCCL on this machine (%s): nothing to run\n", tirx_last_error());
    return 0;
  }
  printf("NCCL %d\n", version);
  tirx_runtime *rt = NULL;
  CHECK(tirx_runtime_create(NULL, &rt));
  if (!tirx_runtime_has_device(rt)) {
    printf("no GPU on this machine (%s): nothing to run\n", tirx_runtime_device_error(rt));
    tirx_runtime_destroy(rt);
    return 0;
  }
  /* One rank: rank 0 makes the id; a real job sends these bytes to every other rank. */
  tirx_comm_id id;
  CHECK(tirx_comm_id_generate(NULL, &id));
  tirx_comm *comm = NULL;
  tirx_comm_options opts = {.timeout_ms = 60000};
  CHECK(tirx_comm_create(rt, &id, 0, world, &opts, &comm));

  size_t n = (size_t)tirx_dtensor_local_size(partial);
  float *host = malloc(n * sizeof *host), *back = malloc(n * sizeof *back);
  srand(7);
  for (size_t i = 0; i < n; i++) host[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  void *src = NULL, *dst = NULL;
  CHECK(tirx_runtime_alloc(rt, n * sizeof(float), &src));
  CHECK(tirx_runtime_alloc(rt, n * sizeof(float), &dst));
  CHECK(tirx_runtime_copy(rt, src, host, n * sizeof(float), TIRX_COPY_HOST_TO_DEVICE));
  CHECK(tirx_runtime_fill32(rt, dst, 0x7fc0badu, n));
  tirx_tensor_arg sa = {src, TIRX_F32, 2, shape, NULL}, da = {dst, TIRX_F32, 2, shape, NULL};
  CHECK(tirx_collective_run(coll, comm, &sa, &da, NULL));
  CHECK(tirx_comm_synchronize(comm, NULL, -2));
  CHECK(tirx_runtime_copy(rt, back, dst, n * sizeof(float), TIRX_COPY_DEVICE_TO_HOST));
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double want = (double)host[i] * world; /* every rank holds the same addends here */
    if (fabs((double)back[i] - want) > 1e-6 * fabs(want) + 1e-7) bad++;
  }
  printf("all_reduce over %d rank%s of %zu elements: %s\n", world, world == 1 ? "" : "s", n,
         bad ? "MISMATCH" : "all results match");
  tirx_runtime_free(rt, src);
  tirx_runtime_free(rt, dst);
  free(host);
  free(back);
  tirx_comm_destroy(comm);
  tirx_collective_destroy(coll);
  tirx_dtensor_destroy(partial);
  tirx_dtensor_destroy(whole);
  tirx_dtensor_destroy(s0s1);
  tirx_dtensor_destroy(s0r);
  tirx_runtime_destroy(rt);
  tirx_arena_destroy(a);
  return bad ? 1 : 0;
}
