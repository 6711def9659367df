/* The raw NVRTC call and the compile worker's frames (worker_proto.h). libc and NVRTC only. */
#include "worker_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "nvrtc_lib.h"

/* ---- the raw NVRTC call ---- */

static char *program_log(const tirx__nvrtc_lib *nv, nvrtcProgram prog) {
  size_t size = 0;
  if (nv->GetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size == 0)
    size = 1;
  char *log = calloc(size + 1, 1);
  if (log && size > 1 && nv->GetProgramLog(prog, log) != NVRTC_SUCCESS)
    log[0] = '\0';
  return log;
}

void tirx__nvrtc_raw_compile(const char *source, int nopts, const char *const *opts,
                             bool want_ptx, tirx__nvrtc_raw *out) {
  memset(out, 0, sizeof *out);
  const tirx__nvrtc_lib *nv = tirx__nvrtc_lib_get();
  if (!nv) {
    out->stage = TIRX__RAW_NO_NVRTC;
    out->log = strdup(tirx__nvrtc_lib_error());
    return;
  }
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv->CreateProgram(&prog, source, "kernel.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    out->stage = TIRX__RAW_CREATE;
    out->result = (int)r;
    return;
  }
  r = nv->CompileProgram(prog, nopts, opts);
  out->log = program_log(nv, prog);
  if (!out->log) {
    nv->DestroyProgram(&prog);
    out->stage = TIRX__RAW_LOG_OOM;
    return;
  }
  if (r != NVRTC_SUCCESS) {
    nv->DestroyProgram(&prog);
    out->stage = TIRX__RAW_COMPILE;
    out->result = (int)r;
    return;
  }
  size_t cubin_size = 0, ptx_size = 0;
  void *cubin = NULL;
  char *ptx = NULL;
  r = nv->GetCUBINSize(prog, &cubin_size);
  if (r == NVRTC_SUCCESS && cubin_size > 0) {
    cubin = malloc(cubin_size);
    if (cubin)
      r = nv->GetCUBIN(prog, cubin);
  }
  if (r == NVRTC_SUCCESS && cubin && want_ptx) {
    r = nv->GetPTXSize(prog, &ptx_size);
    if (r == NVRTC_SUCCESS) {
      ptx = calloc(ptx_size + 1, 1);
      if (ptx)
        r = nv->GetPTX(prog, ptx);
    }
  }
  nv->DestroyProgram(&prog);
  if (r != NVRTC_SUCCESS || !cubin || cubin_size == 0 || (want_ptx && !ptx)) {
    out->stage = r != NVRTC_SUCCESS ? TIRX__RAW_OUTPUT : TIRX__RAW_OUTPUT_OOM;
    out->result = (int)r;
    free(cubin);
    free(ptx);
    return;
  }
  out->stage = TIRX__RAW_OK;
  out->cubin = cubin;
  out->cubin_size = cubin_size;
  out->ptx = ptx;
}

void tirx__nvrtc_raw_free(tirx__nvrtc_raw *r) {
  if (!r)
    return;
  free(r->log);
  free(r->cubin);
  free(r->ptx);
  memset(r, 0, sizeof *r);
}

/* ---- frames ---- */

typedef struct frame_head {
  uint32_t magic;
  uint16_t version, kind;
  uint32_t nfields, zero;
} frame_head;

/* Writes all of iov[0..n) (the array is consumed); 0 or a negative errno. A frame goes out in
 * one system call when the stream's buffer has room, so its reader wakes once per frame rather
 * than once per field (a request with four options was nine sends, a reply three). */
static int write_all(int fd, struct iovec *iov, int n) {
  bool sock = true;
  while (n > 0) {
    ssize_t w;
    if (sock) {
      struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
      w = sendmsg(fd, &m, MSG_NOSIGNAL);
      if (w < 0 && errno == ENOTSOCK) {
        sock = false;
        continue;
      }
    } else {
      w = writev(fd, iov, n); /* n <= 17, far below IOV_MAX */
    }
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    size_t left = (size_t)w;
    while (n > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + left;
      iov->iov_len -= left;
    }
  }
  return 0;
}

int tirx__wframe_write(int fd, int kind, const tirx__wfield *fields, int nfields) {
  if (nfields < 0 || nfields > TIRX__WFRAME_MAX_FIELDS || kind < 0 || kind > 0xffff)
    return -EINVAL;
  uint64_t total = 0;
  struct {
    frame_head h;
    uint64_t len[TIRX__WFRAME_MAX_FIELDS];
  } head;
  memset(&head, 0, sizeof head);
  head.h.magic = TIRX__WFRAME_MAGIC;
  head.h.version = TIRX__WFRAME_VERSION;
  head.h.kind = (uint16_t)kind;
  head.h.nfields = (uint32_t)nfields;
  struct iovec iov[1 + TIRX__WFRAME_MAX_FIELDS];
  int n = 0;
  iov[n++] = (struct iovec){&head, sizeof head.h + (size_t)nfields * sizeof head.len[0]};
  for (int i = 0; i < nfields; i++) {
    head.len[i] = fields[i].len;
    total += fields[i].len;
    if (fields[i].len)
      iov[n++] = (struct iovec){(void *)fields[i].data, fields[i].len};
  }
  if (total > TIRX__WFRAME_MAX_BYTES)
    return -EINVAL;
  return write_all(fd, iov, n);
}

/* Reads exactly len bytes: 1, 0 at end of input before the first byte, -1 on an error or an
 * end of input after it (errno 0 then). */
static int read_all(int fd, void *buf, size_t len) {
  char *p = buf;
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, p + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    if (n == 0) {
      errno = 0;
      return got == 0 ? 0 : -1;
    }
    got += (size_t)n;
  }
  return 1;
}

static int fail(char *why, size_t why_len, const char *text, int err) {
  if (why && why_len) {
    size_t n = strlen(text);
    if (n >= why_len)
      n = why_len - 1;
    memcpy(why, text, n);
    why[n] = '\0';
    if (err && n + 3 < why_len) {
      const char *e = strerror(err);
      size_t m = strlen(e);
      if (n + 2 + m >= why_len)
        m = why_len - n - 3;
      memcpy(why + n, ": ", 2);
      memcpy(why + n + 2, e, m);
      why[n + 2 + m] = '\0';
    }
  }
  return -1;
}

int tirx__wframe_read(int fd, tirx__wframe *out, char *why, size_t why_len) {
  memset(out, 0, sizeof *out);
  frame_head h;
  int rc = read_all(fd, &h, sizeof h);
  if (rc == 0)
    return 0;
  if (rc < 0)
    return fail(why, why_len, errno ? "cannot read a frame header" : "input ends inside a frame header",
                errno);
  if (h.magic != TIRX__WFRAME_MAGIC)
    return fail(why, why_len, "not a tirx worker frame (wrong magic)", 0) - 1;
  if (h.version != TIRX__WFRAME_VERSION)
    return fail(why, why_len, "frame of another protocol version", 0) - 1;
  if (h.nfields > TIRX__WFRAME_MAX_FIELDS)
    return fail(why, why_len, "frame with too many fields", 0) - 1;
  uint64_t len[TIRX__WFRAME_MAX_FIELDS];
  if (h.nfields && read_all(fd, len, h.nfields * sizeof len[0]) != 1)
    return fail(why, why_len, "input ends inside a frame's lengths", errno);
  uint64_t total = 0;
  for (uint32_t i = 0; i < h.nfields; i++) {
    if (len[i] > TIRX__WFRAME_MAX_BYTES || total + len[i] > TIRX__WFRAME_MAX_BYTES)
      return fail(why, why_len, "frame larger than 1 GiB", 0) - 1;
    total += len[i];
  }
  /* Each field followed by a NUL. */
  char *data = malloc((size_t)total + h.nfields + 1);
  if (!data)
    return fail(why, why_len, "no memory for a frame", 0);
  size_t off = 0;
  for (uint32_t i = 0; i < h.nfields; i++) {
    if (len[i] && read_all(fd, data + off, (size_t)len[i]) != 1) {
      free(data);
      return fail(why, why_len, "input ends inside a frame's fields", errno);
    }
    out->off[i] = off;
    out->len[i] = (size_t)len[i];
    off += (size_t)len[i];
    data[off++] = '\0';
  }
  data[off] = '\0';
  out->kind = h.kind;
  out->nfields = (int)h.nfields;
  out->data = data;
  return 1;
}

void tirx__wframe_free(tirx__wframe *f) {
  if (!f)
    return;
  free(f->data);
  memset(f, 0, sizeof *f);
}
