/*
 * The README's server walk-through, as code that compiles against the public headers (every
 * snippet between a "snippet:" line and its "end snippet" line is quoted by README.md, and
 * tools/check_snippets.py checks the two are the same text). It is built, not run, in CI: the
 * graph capture calls the host's own CUDA driver (cuda.h), which a machine without a GPU lacks.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "server.h"

/* snippet: open */
/* One runtime per device, created at start-up and shared by every thread. */
tirx_status server_open(server *s, int ndevices) {
  for (int d = 0; d < ndevices; d++) {
    tirx_runtime_options o = {.size = sizeof o, .device = d,
                              .capture_policy = TIRX_CAPTURE_REFUSE};
    server_device *dev = &s->dev[d];
    tirx_status st = tirx_runtime_create(&o, &dev->rt);
    if (st == TIRX_OK)
      s->ndevices = d + 1; /* server_close destroys it */
    if (st == TIRX_OK)
      st = tirx_runtime_stream_create(dev->rt, &dev->stream); /* in the runtime's context */
    size_t bytes = (size_t)512 * SERVER_HIDDEN * sizeof(float);
    if (st == TIRX_OK)
      st = tirx_runtime_alloc(dev->rt, bytes, (void **)&dev->x);
    if (st == TIRX_OK)
      st = tirx_runtime_alloc(dev->rt, bytes, (void **)&dev->y);
    if (st == TIRX_OK)
      st = tirx_runtime_alloc(dev->rt, SERVER_HIDDEN * sizeof(float), (void **)&dev->w);
    if (st != TIRX_OK) {
      fprintf(stderr, "device %d: %s\n", d, tirx_last_error());
      return st;
    }
  }
  return TIRX_OK;
}
/* end snippet */

/* snippet: build */
/* y = a * x over n elements. A built kernel is immutable and reference-counted: build it once
 * and launch it on every device's runtime from any thread. */
tirx_kernel *server_build_scale(void) {
  tirx_builder *b = tirx_builder_create("scale");
  tirx_expr *n = tirx_param_int(b, "n", TIRX_I64);
  tirx_expr *a = tirx_param_scalar(b, "a", TIRX_F32);
  tirx_tensor *x = tirx_param_tensor(b, "x", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_tensor *y = tirx_param_tensor(b, "y", TIRX_F32, TIRX_EXPRS(n), NULL);
  tirx_set_block(b, 256, 1, 1);
  tirx_set_grid(b, tirx_ceildiv(b, n, tirx_int(b, 256)), NULL, NULL);
  tirx_expr *i = tirx_let(b, "i", tirx_add(b, tirx_mul(b, tirx_cast(b, tirx_block_idx(b, 0),
                                                                    TIRX_I64),
                                                       tirx_int(b, 256)),
                                           tirx_cast(b, tirx_thread_idx(b, 0), TIRX_I64)));
  tirx_if_begin(b, tirx_lt(b, i, n));
  tirx_store(b, y, TIRX_EXPRS(i), tirx_mul(b, a, tirx_load(b, x, TIRX_EXPRS(i))));
  tirx_if_end(b);
  tirx_kernel *k = NULL;
  if (tirx_kernel_build(b, &k) != TIRX_OK)
    fprintf(stderr, "%s\n", tirx_builder_error(b));
  tirx_builder_destroy(b); /* k outlives the builder */
  return k;
}
/* end snippet */

static const int64_t batches[SERVER_BATCHES] = {1, 8, 64, 512};

/* snippet: warmup */
/* Before taking traffic (and before capturing graphs): compile every shape the server will
 * launch, in parallel, on every device. Data pointers are checked, never read. */
tirx_status server_warmup(server *s) {
  for (int d = 0; d < s->ndevices; d++) {
    server_device *dev = &s->dev[d];
    int64_t n[SERVER_BATCHES];
    tirx_arg args[SERVER_BATCHES][4];
    const tirx_arg *lists[SERVER_BATCHES];
    int nargs[SERVER_BATCHES];
    for (int i = 0; i < SERVER_BATCHES; i++) {
      n[i] = batches[i] * SERVER_HIDDEN;
      args[i][0] = tirx_arg_i64(n[i]);
      args[i][1] = tirx_arg_f32(0.5f);
      args[i][2] = tirx_arg_tensor(dev->x, TIRX_F32, 1, &n[i], NULL);
      args[i][3] = tirx_arg_tensor(dev->y, TIRX_F32, 1, &n[i], NULL);
      lists[i] = args[i];
      nargs[i] = 4;
    }
    tirx_status st = tirx_runtime_warmup(dev->rt, s->scale, lists, nargs, SERVER_BATCHES);
    /* With options.tiered, background compiles may still run: wait for them too. */
    if (st == TIRX_OK)
      st = tirx_runtime_drain(dev->rt, 60000);
    /* The kernel library's ops build and compile on their first call: make one per shape. */
    for (int i = 0; st == TIRX_OK && i < SERVER_BATCHES; i++)
      st = server_step(dev, s->scale, batches[i]);
    if (st == TIRX_OK)
      st = tirx_runtime_synchronize(dev->rt, dev->stream);
    if (st != TIRX_OK) {
      fprintf(stderr, "warm-up on device %d: %s\n", d, tirx_last_error());
      return st;
    }
  }
  return TIRX_OK;
}
/* end snippet */

/* snippet: step */
/* One step of a request on a device's stream: a launch of the server's kernel, then a kernel
 * library op. Both are asynchronous; errors in the kernels show at the next synchronisation. */
tirx_status server_step(server_device *d, const tirx_kernel *k, int64_t batch) {
  int64_t n = batch * SERVER_HIDDEN;
  tirx_arg args[4] = {tirx_arg_i64(n), tirx_arg_f32(0.5f),
                      tirx_arg_tensor(d->x, TIRX_F32, 1, &n, NULL),
                      tirx_arg_tensor(d->y, TIRX_F32, 1, &n, NULL)};
  tirx_status st = tirx_launch(d->rt, k, args, 4, d->stream);
  if (st != TIRX_OK)
    return st;
  tirx_tensor_arg y = {d->y, TIRX_F32, 2, (int64_t[]){batch, SERVER_HIDDEN}, NULL};
  tirx_tensor_arg w = {d->w, TIRX_F32, 1, (int64_t[]){SERVER_HIDDEN}, NULL};
  tirx_tensor_arg x = {d->x, TIRX_F32, 2, (int64_t[]){batch, SERVER_HIDDEN}, NULL};
  return tirx_op_rmsnorm(d->rt, NULL, &y, &w, &x, 1e-6f, d->stream);
}
/* end snippet */

/* snippet: capture */
/* Capture a warmed-up step into a CUDA graph. With TIRX_CAPTURE_REFUSE a launch whose kernel
 * is not ready fails with TIRX_E_CAPTURE and records nothing, so the capture stays valid and
 * is ended either way. tirx leaves no context current on this thread: the host's own driver
 * calls run in the runtime's context, pushed around them. */
tirx_status server_capture(server_device *d, const tirx_kernel *k, int64_t batch,
                           CUgraphExec *out) {
  CUstream stream = (CUstream)d->stream;
  if (cuCtxPushCurrent((CUcontext)tirx_runtime_context(d->rt)) != CUDA_SUCCESS)
    return TIRX_E_DRIVER;
  CUgraph graph = NULL;
  tirx_status st = TIRX_E_DRIVER;
  if (cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) == CUDA_SUCCESS) {
    st = server_step(d, k, batch);
    if (cuStreamEndCapture(stream, &graph) != CUDA_SUCCESS && st == TIRX_OK)
      st = TIRX_E_DRIVER;
  }
  if (st == TIRX_OK && cuGraphInstantiate(out, graph, 0) != CUDA_SUCCESS)
    st = TIRX_E_DRIVER;
  if (graph)
    cuGraphDestroy(graph);
  cuCtxPopCurrent(NULL);
  return st; /* replay with cuGraphLaunch(*out, stream) */
}
/* end snippet */

/* snippet: threads */
/* Many threads launching at once: the runtime, the kernel and the ops take no lock of the
 * caller's, and a launch whose variant is in memory takes none of its own. Each thread uses
 * its own stream (work on one stream runs in order) and reads its own tirx_last_error().
 * (The workers of one device share its buffers here; a real server gives each request its
 * own.) */
typedef struct worker {
  server_device *dev;
  const tirx_kernel *k;
  void *stream;
  tirx_status status;
} worker;

static void *worker_main(void *arg) {
  worker *w = arg;
  server_device d = *w->dev;
  d.stream = w->stream;
  w->status = TIRX_OK;
  for (int i = 0; i < 1000 && w->status == TIRX_OK; i++)
    w->status = server_step(&d, w->k, batches[i % SERVER_BATCHES]);
  if (w->status == TIRX_OK)
    w->status = tirx_runtime_synchronize(d.rt, d.stream);
  if (w->status != TIRX_OK)
    fprintf(stderr, "worker: %s\n", tirx_last_error());
  return NULL;
}

tirx_status server_run_workers(server *s, int nworkers) {
  enum { MAX_WORKERS = 64 };
  worker w[MAX_WORKERS];
  pthread_t t[MAX_WORKERS];
  int started = 0;
  tirx_status st = TIRX_OK;
  for (int i = 0; i < nworkers && i < MAX_WORKERS && st == TIRX_OK; i++) {
    server_device *dev = &s->dev[i % s->ndevices]; /* spread over the devices */
    w[i] = (worker){.dev = dev, .k = s->scale};
    st = tirx_runtime_stream_create(dev->rt, &w[i].stream);
    if (st == TIRX_OK && pthread_create(&t[i], NULL, worker_main, &w[i]) == 0)
      started++;
  }
  for (int i = 0; i < started; i++) {
    pthread_join(t[i], NULL);
    if (w[i].status != TIRX_OK && st == TIRX_OK)
      st = w[i].status;
    tirx_runtime_stream_destroy(w[i].dev->rt, w[i].stream);
  }
  return st;
}
/* end snippet */

/* snippet: close */
/* Shut down: finish the work on every stream, then destroy; the kernel is released once. */
void server_close(server *s) {
  for (int d = 0; d < s->ndevices; d++) {
    server_device *dev = &s->dev[d];
    tirx_runtime_synchronize(dev->rt, NULL);
    tirx_runtime_free(dev->rt, dev->x);
    tirx_runtime_free(dev->rt, dev->y);
    tirx_runtime_free(dev->rt, dev->w);
    tirx_runtime_stream_destroy(dev->rt, dev->stream);
    tirx_runtime_destroy(dev->rt);
  }
  tirx_kernel_release(s->scale);
}
/* end snippet */
