/* Arenas: bump allocation in chunks, freed all at once. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct chunk {
  struct chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} chunk;

struct tirx_arena {
  chunk *head;
  size_t bytes;
};

enum { CHUNK_MIN = 4096 };

static _Thread_local int64_t fail_countdown = -1;

void tirx__arena_fail_after(int64_t n) { fail_countdown = n; }

tirx_arena *tirx_arena_create(void) {
  tirx_arena *a = calloc(1, sizeof *a);
  if (!a) tirx__error(TIRX_E_NO_MEMORY, "tirx_arena_create: out of memory");
  return a;
}

void tirx_arena_destroy(tirx_arena *a) {
  if (!a) return;
  chunk *c = a->head;
  while (c) {
    chunk *n = c->next;
    free(c);
    c = n;
  }
  free(a);
}

size_t tirx_arena_bytes(const tirx_arena *a) { return a ? a->bytes : 0; }

void *tirx__arena_alloc(tirx_arena *a, size_t size, const char *fn) {
  if (fail_countdown >= 0 && fail_countdown-- == 0) {
    tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
    return NULL;
  }
  size = (size + 15) & ~(size_t)15;
  if (size == 0) size = 16;
  chunk *c = a->head;
  if (!c || c->size - c->used < size) {
    size_t csize = size > CHUNK_MIN ? size : CHUNK_MIN;
    if (csize > SIZE_MAX - sizeof(chunk)) {
      tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
      return NULL;
    }
    chunk *n = malloc(sizeof(chunk) + csize);
    if (!n) {
      tirx__error(TIRX_E_NO_MEMORY, "%s: out of memory", fn);
      return NULL;
    }
    n->size = csize;
    n->used = 0;
    /* A big allocation gets its own chunk behind the current one so the current one keeps
     * serving small allocations. */
    if (c && csize == size && c->size - c->used >= 64) {
      n->next = c->next;
      c->next = n;
    } else {
      n->next = c;
      a->head = n;
    }
    a->bytes += csize;
    c = n;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

void *tirx__arena_array(tirx_arena *a, size_t n, size_t elem, const char *fn) {
  if (elem && n > SIZE_MAX / elem) {
    tirx__error(TIRX_E_NO_MEMORY, "%s: allocation of %zu x %zu bytes overflows", fn, n, elem);
    return NULL;
  }
  return tirx__arena_alloc(a, n * elem, fn);
}

char *tirx__arena_strdup(tirx_arena *a, const char *s, const char *fn) {
  size_t n = strlen(s);
  char *p = tirx__arena_alloc(a, n + 1, fn);
  if (p) memcpy(p, s, n + 1);
  return p;
}
