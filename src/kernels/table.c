/*
 * The process-wide table of the ops' kernels. A kernel is immutable and reference-counted and
 * belongs to no runtime, so one table serves every runtime and thread. Entries are found by
 * the bytes of their key (linear search: an application uses a few dozen kernels at most) under
 * one mutex. A build runs without the lock; an entry in the BUILDING state makes other threads
 * that want the same key wait on the condition variable, so each key is built once.
 */
#include "kernels_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  unsigned char key[TIRX__KERNELS_KEY_MAX];
  size_t len;
  tirx_kernel *kernel; /* NULL while building */
  bool building;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t tirx__kernels_scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t built = PTHREAD_COND_INITIALIZER;
static entry *entries;
static int count, cap;

static entry *find(const void *key, size_t len) {
  for (int i = 0; i < count; i++)
    if (entries[i].len == len && memcmp(entries[i].key, key, len) == 0)
      return &entries[i];
  return NULL;
}

/* Removes the entry for key (a failed build). */
static void drop(const void *key, size_t len) {
  entry *e = find(key, len);
  if (e)
    *e = entries[--count];
}

tirx_status tirx__kernels_get(const void *key, size_t len, tirx__kernels_build_fn build,
                              const void *ctx, tirx_kernel **out) {
  *out = NULL;
  if (len > TIRX__KERNELS_KEY_MAX)
    return tirx__error(TIRX_E_INTERNAL, "kernel table: key of %zu bytes", len);
  pthread_mutex_lock(&lock);
  entry *e;
  while ((e = find(key, len)) && e->building)
    pthread_cond_wait(&built, &lock);
  if (e) {
    *out = tirx_kernel_retain(e->kernel);
    pthread_mutex_unlock(&lock);
    return TIRX_OK;
  }
  if (count == cap) {
    int n = cap ? 2 * cap : 16;
    entry *grown = realloc(entries, (size_t)n * sizeof *grown);
    if (!grown) {
      pthread_mutex_unlock(&lock);
      return tirx__error(TIRX_E_NO_MEMORY, "kernel table: out of memory");
    }
    entries = grown, cap = n;
  }
  e = &entries[count++];
  memset(e, 0, sizeof *e);
  memcpy(e->key, key, len);
  e->len = len;
  e->building = true;
  pthread_mutex_unlock(&lock);

  tirx_kernel *k = NULL;
  tirx_status st = build(ctx, &k);

  pthread_mutex_lock(&lock);
  if (st == TIRX_OK) {
    e = find(key, len); /* entries may have moved */
    e->kernel = k;
    e->building = false;
    *out = tirx_kernel_retain(k);
  } else {
    drop(key, len);
  }
  pthread_cond_broadcast(&built);
  pthread_mutex_unlock(&lock);
  return st;
}

int tirx_kernels_cached(void) {
  pthread_mutex_lock(&lock);
  int n = 0;
  for (int i = 0; i < count; i++)
    n += !entries[i].building;
  pthread_mutex_unlock(&lock);
  return n;
}

void tirx_kernels_clear(void) {
  pthread_mutex_lock(&lock);
  /* Entries being built stay: their builders will fill them in. */
  int kept = 0;
  for (int i = 0; i < count; i++) {
    if (entries[i].building)
      entries[kept++] = entries[i];
    else
      tirx_kernel_release(entries[i].kernel);
  }
  count = kept;
  if (!count) {
    free(entries);
    entries = NULL, cap = 0;
  }
  pthread_mutex_unlock(&lock);
}
