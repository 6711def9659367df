/*
 * What the library and its compile worker (tirx-compile-worker, src/jit/worker_main.c) share:
 * the raw NVRTC call and the framed protocol over the worker's socket. This file and
 * worker_proto.c use libc and NVRTC (through nvrtc_lib.h, loaded with dlopen) only, no
 * tirx__error: the worker links them without libtirx.
 *
 * The raw call runs NVRTC and records what happened (which stage failed, NVRTC's result code,
 * the log and the outputs) without wording a message: nvrtc.c turns a raw result into the
 * library's status and message (tirx__nvrtc_finish), the same way for a compile that ran in
 * the process and for one that ran in a worker, so the two paths give the same bytes and the
 * same errors.
 *
 * Frames. A frame is a kind and up to TIRX__WFRAME_MAX_FIELDS byte strings:
 *
 *     u32 magic 'TXWF' | u16 version | u16 kind | u32 nfields | u32 0 |
 *     u64 length[nfields] | the fields' bytes, one after another
 *
 * in the host's byte order (both ends run on one machine). A frame is at most
 * TIRX__WFRAME_MAX_BYTES of fields. The worker starts by sending HELLO; then for each REQUEST
 * it reads it answers one REPLY; on a malformed request it answers ERROR and exits with status
 * 2 (the stream cannot be resynchronised); on end of input it exits 0.
 *
 *   HELLO   [0] "tirx-compile-worker"  [1] tirx__whello (protocol, NVRTC version, pid)
 *   REQUEST [0] name  [1] arch (for messages; the options carry it)  [2] source  [3] flags (one byte: 1 = want PTX)  [4..] options
 *   REPLY   [0] tirx__wreply_head  [1] log  [2] cubin  [3] PTX ("" unless asked for)
 *   ERROR   [0] message
 */
#ifndef TIRX_JIT_WORKER_PROTO_H
#define TIRX_JIT_WORKER_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the raw NVRTC call ---- */

/* Where a raw compile stopped. */
enum {
  TIRX__RAW_OK = 0,         /* cubin (and PTX when asked for) are set */
  TIRX__RAW_CREATE = 1,     /* nvrtcCreateProgram failed (result) */
  TIRX__RAW_LOG_OOM = 2,    /* no memory for the log */
  TIRX__RAW_COMPILE = 3,    /* nvrtcCompileProgram failed (result, log) */
  TIRX__RAW_OUTPUT = 4,     /* getting the cubin or PTX failed (result) */
  TIRX__RAW_OUTPUT_OOM = 5, /* no memory for the cubin or PTX */
  TIRX__RAW_NO_NVRTC = 6,   /* NVRTC could not be loaded (log: what was tried, nvrtc_lib.h) */
  TIRX__RAW_STAGES = 7
};

typedef struct tirx__nvrtc_raw {
  int stage;  /* TIRX__RAW_* */
  int result; /* the nvrtcResult of the failed call (0 on success) */
  char *log;  /* malloc'ed, NUL-terminated; set from the compile stage on, else NULL */
  void *cubin; /* malloc'ed; set when stage is OK */
  size_t cubin_size;
  char *ptx; /* malloc'ed, NUL-terminated; set when stage is OK and PTX was asked for */
} tirx__nvrtc_raw;

/* Runs NVRTC on source (file name "kernel.cu", as TIRX__NVRTC_FILE) with the options in
 * order, on the calling thread (which needs a stack of 1.5 MiB or more). Always fills *out;
 * when NVRTC cannot be loaded, stage TIRX__RAW_NO_NVRTC with the reason as the log. */
void tirx__nvrtc_raw_compile(const char *source, int nopts, const char *const *opts,
                             bool want_ptx, tirx__nvrtc_raw *out);
void tirx__nvrtc_raw_free(tirx__nvrtc_raw *r);

/* ---- frames ---- */

enum {
  TIRX__WFRAME_MAGIC = 0x46575854u, /* "TXWF" */
  TIRX__WFRAME_VERSION = 1,
  TIRX__WFRAME_MAX_FIELDS = 16,
  TIRX__WPROTOCOL = 1 /* tirx__whello.protocol */
};
#define TIRX__WFRAME_MAX_BYTES ((uint64_t)1 << 30)

enum {
  TIRX__WFRAME_HELLO = 1,
  TIRX__WFRAME_REQUEST = 2,
  TIRX__WFRAME_REPLY = 3,
  TIRX__WFRAME_ERROR = 4
};

typedef struct tirx__whello {
  int32_t protocol;
  int32_t nvrtc_version; /* major * 1000 + minor * 10, as tirx__nvrtc_version */
  int32_t pid;
  int32_t reserved;
} tirx__whello;

typedef struct tirx__wreply_head {
  int32_t stage, result;
  double millis; /* NVRTC's time in the worker */
} tirx__wreply_head;

typedef struct tirx__wfield {
  const void *data;
  size_t len;
} tirx__wfield;

/* A frame read from a stream: field i is data + off[i], len[i] bytes, followed by a NUL (so
 * text fields are C strings). data is malloc'ed; free it with tirx__wframe_free. */
typedef struct tirx__wframe {
  int kind;
  int nfields;
  size_t len[TIRX__WFRAME_MAX_FIELDS];
  size_t off[TIRX__WFRAME_MAX_FIELDS];
  char *data;
} tirx__wframe;

static inline const char *tirx__wframe_field(const tirx__wframe *f, int i) {
  return f->data + f->off[i];
}

/* Writes one frame to fd, in one call when the stream has room (a socket: sendmsg with
 * MSG_NOSIGNAL; else writev(2), the caller ignoring SIGPIPE).
 * Returns 0, or a negative errno (-EPIPE when the other end is gone, -EINVAL for a frame
 * beyond the limits). */
int tirx__wframe_write(int fd, int kind, const tirx__wfield *fields, int nfields);

/* Reads one frame from fd. Returns 1 with *out filled, 0 at a clean end of input (nothing
 * read), -1 with why[] filled for a read error, input that ends inside a frame or no memory,
 * and -2 with why[] filled for a malformed frame (a wrong magic or version, too many fields,
 * over the limit). Never reads more than the frame's header before it is validated. */
int tirx__wframe_read(int fd, tirx__wframe *out, char *why, size_t why_len);
void tirx__wframe_free(tirx__wframe *f);

#endif
