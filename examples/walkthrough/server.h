/* The README's server walk-through (README.md, "A server walk-through"): the functions of
 * server.c, whose snippets the README quotes. Compiled in every build (examples/meson.build);
 * tools/check_snippets.py checks that the README's copies are the same text. */
#ifndef TIRX_WALKTHROUGH_SERVER_H
#define TIRX_WALKTHROUGH_SERVER_H

#include <cuda.h>
#include <tirx.h>

enum { SERVER_MAX_DEVICES = 8, SERVER_BATCHES = 4, SERVER_HIDDEN = 4096 };

/* What the server keeps per device: its runtime, a stream per worker and the buffers of the
 * largest batch (x, y: f32 [512 * SERVER_HIDDEN]; w: the norm's weights). */
typedef struct server_device {
  tirx_runtime *rt;
  void *stream;
  float *x, *y, *w;
} server_device;

typedef struct server {
  int ndevices;
  server_device dev[SERVER_MAX_DEVICES];
  tirx_kernel *scale; /* one kernel, shared by every device and thread */
} server;

tirx_status server_open(server *s, int ndevices);
tirx_kernel *server_build_scale(void);
tirx_status server_warmup(server *s);
tirx_status server_step(server_device *d, const tirx_kernel *k, int64_t batch);
tirx_status server_capture(server_device *d, const tirx_kernel *k, int64_t batch,
                           CUgraphExec *out);
tirx_status server_run_workers(server *s, int nworkers);
void server_close(server *s);

#endif
