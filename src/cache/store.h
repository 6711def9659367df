/*
 * The on-disk cubin store: one file per entry, named by the key's 32 hex characters, in one
 * directory that many processes share.
 *
 * Entry file (all integers little-endian):
 *
 *     off  size  field
 *       0     8  magic "\x89TIRX\r\n\x1a"
 *       8     4  format version (TIRX__STORE_FORMAT_VERSION)
 *      12     4  arch_len, 1..TIRX__STORE_ARCH_MAX
 *      16    16  the full key (echo of the file name)
 *      32     4  NVRTC major
 *      36     4  NVRTC minor
 *      40     8  meta_len: launch metadata bytes (opaque to the store)
 *      48     8  payload_len: cubin bytes
 *      56     .  arch (arch_len bytes, printable ASCII), metadata, payload
 *     end-8   8  XXH3-64 of every byte before it
 *
 * Publish: the whole file is built in memory, written to ".tmp.<key>.<random>" in the same
 * directory (openat O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600 set explicitly with fchmod
 * so the umask does not matter), optionally fsync'ed, closed, and renamed over the entry's
 * name. rename() is atomic, so a reader sees the old entry, no entry or the whole new one,
 * never a torn one (FM-01, FM-03). Every failure unlinks the temp file. fsync (options.fsync,
 * on by default) orders the data before the rename, so a power cut cannot leave a complete
 * name over zero-filled data (FM-14); the directory is not fsync'ed, so after a power cut a
 * just-published entry may be missing, which is only a miss. Without fsync a power cut can
 * leave a zero-filled entry, which the checksum rejects.
 *
 * Read: openat O_RDONLY|O_NOFOLLOW|O_CLOEXEC|O_NONBLOCK (a symlink fails, a FIFO does not
 * block), fstat (a regular file with at most one link, owned by the effective uid, mode
 * exactly 0600, no larger than options.max_entry_bytes), pread into a malloc'ed buffer (never mmap: FM-17),
 * then every check: magic, version, lengths against the file size, checksum, key echo equal
 * to the requested key, arch and NVRTC version equal to the caller's. Only then are bytes
 * returned. A file that fails any check is counted in corrupt_detected (with its reason),
 * unlinked when it is still the file that was read (a directory with its contents), and
 * reported as a miss; when it cannot be removed it is counted in corrupt_kept and the
 * warning says it was kept. ENOENT, ESTALE
 * and other errors on the read path are plain misses (FM-04, FM-22).
 *
 * Eviction: least recently used by mtime. A hit sets the entry's atime and mtime to now
 * (futimens; failure ignored). After each successful put, one process at a time (flock
 * LOCK_NB on the directory; others skip) scans the directory; when entry files total more
 * than options.max_bytes it removes the oldest-mtime entries until the total is at most 90%
 * of max_bytes (hysteresis, FM-23). The same scan removes temp files older than
 * options.tmp_max_age_s, which crashed writers leave behind (FM-15). Cost: one fstatat per
 * file in the directory per put, small next to an NVRTC compile.
 *
 * Best effort: nothing here fails a compile. get returns hit or miss. put returns a status
 * that callers may ignore. EROFS, ENOSPC, EDQUOT, EACCES, EPERM and EFBIG on the publish path
 * stop all further writes from this store (reads still hit), with one warning through the
 * log callback (FM-16, FM-18). I/O failures in get and put are reported through the log
 * callback, at most once per condition per store, and never through tirx_last_error; only
 * tirx__store_open and invalid arguments record an error there.
 *
 * Thread safety: every function but tirx__store_close may be called from any number of
 * threads on one store. Any number of processes may share a directory.
 */
#ifndef TIRX_CACHE_STORE_H
#define TIRX_CACHE_STORE_H

#include "key.h"

enum {
  TIRX__STORE_FORMAT_VERSION = 1,
  TIRX__STORE_ARCH_MAX = 63,        /* bytes in an arch string */
  TIRX__STORE_HEADER_BYTES = 56,    /* fixed header, before the arch string */
  TIRX__STORE_TRAILER_BYTES = 8,    /* the checksum */
  TIRX__STORE_META_MAX = 1 << 20,   /* launch metadata bytes */
  TIRX__STORE_PAYLOAD_PAD = 16,     /* NUL bytes after a returned payload */
};

#define TIRX__STORE_DEFAULT_MAX_BYTES ((uint64_t)1 << 30)        /* 1 GiB for all entries */
#define TIRX__STORE_DEFAULT_MAX_ENTRY_BYTES ((uint64_t)256 << 20) /* 256 MiB for one file */
#define TIRX__STORE_DEFAULT_TMP_MAX_AGE_S 600                    /* 10 minutes */

typedef struct tirx__store tirx__store;

/* Receives one warning; msg starts with the reporting function's name and lives for the
 * call only. Called from whichever thread hit the condition. */
typedef void (*tirx__store_log_fn)(void *user, const char *msg);

typedef struct tirx__store_options {
  const char *path;          /* root directory; NULL: $TIRX_CACHE_DIR, else
                                $XDG_CACHE_HOME/tirx (absolute only), else ~/.cache/tirx */
  uint64_t max_bytes;        /* soft limit on all entry files; 0: the default */
  uint64_t max_entry_bytes;  /* limit on one entry file, read or written; 0: the default */
  int tmp_max_age_s;         /* temp files older than this are swept; 0: the default */
  bool fsync;                /* fsync each entry before rename (options_init: true) */
  tirx__store_log_fn log;    /* NULL: warnings are dropped */
  void *log_user;
} tirx__store_options;

/* Sets the defaults: everything zero, fsync on. */
void tirx__store_options_init(tirx__store_options *opt);

/* What an entry was compiled for; put writes it into the header and get requires it equal. */
typedef struct tirx__store_info {
  const char *arch;          /* "sm_90a": 1..TIRX__STORE_ARCH_MAX printable ASCII bytes */
  int nvrtc_major, nvrtc_minor;
} tirx__store_info;

/* A validated entry returned by get. meta and payload are malloc'ed and owned by the entry;
 * payload is followed by TIRX__STORE_PAYLOAD_PAD NUL bytes, and neither is NULL on a hit,
 * even when empty. */
typedef struct tirx__store_entry {
  unsigned char *meta;
  size_t meta_len;
  unsigned char *payload;
  size_t payload_len;
  char arch[TIRX__STORE_ARCH_MAX + 1];
  int nvrtc_major, nvrtc_minor;
} tirx__store_entry;

/* Frees meta and payload and zeroes the entry. NULL is a no-op. */
void tirx__store_entry_free(tirx__store_entry *e);

/* Why an entry was rejected. */
#define TIRX__STORE_CORRUPT_MAP(X)                                                           \
  X(NOT_REGULAR, "not a regular file (directory, FIFO, socket, device)")                    \
  X(SYMLINK, "a symbolic link")                                                             \
  X(OWNER, "owned by another user")                                                         \
  X(MODE, "permissions are not 0600")                                                       \
  X(LINKS, "has more than one hard link")                                                   \
  X(TOO_SMALL, "shorter than a header and checksum")                                        \
  X(TOO_LARGE, "larger than the entry size limit")                                          \
  X(SHORT_READ, "changed size while being read")                                            \
  X(MAGIC, "bad magic")                                                                     \
  X(VERSION, "unknown format version")                                                      \
  X(LENGTH, "lengths in the header do not match the file")                                  \
  X(CHECKSUM, "checksum mismatch")                                                          \
  X(KEY, "key echo differs from the requested key")                                         \
  X(ARCH, "compiled for another arch")                                                      \
  X(NVRTC, "compiled by another NVRTC version")

typedef enum tirx__store_corrupt {
#define TIRX__STORE_CORRUPT_ENUM_(name, text) TIRX__STORE_CORRUPT_##name,
  TIRX__STORE_CORRUPT_MAP(TIRX__STORE_CORRUPT_ENUM_)
#undef TIRX__STORE_CORRUPT_ENUM_
  TIRX__STORE_CORRUPT_COUNT
} tirx__store_corrupt;

/* "CHECKSUM" and "checksum mismatch" for TIRX__STORE_CORRUPT_CHECKSUM; static strings. */
const char *tirx__store_corrupt_name(tirx__store_corrupt r);
const char *tirx__store_corrupt_str(tirx__store_corrupt r);

/* A snapshot of a store's counters. */
typedef struct tirx__store_counters {
  uint64_t hits, misses;
  uint64_t corrupt_detected;                       /* sum of corrupt_by_reason */
  uint64_t corrupt_by_reason[TIRX__STORE_CORRUPT_COUNT];
  uint64_t puts;                                   /* entries published */
  uint64_t publish_failed;                         /* puts that failed on I/O */
  uint64_t evictions;                              /* entries removed by the size limit */
  uint64_t tmp_swept;                              /* stale temp files removed */
  uint64_t corrupt_kept;   /* corrupt entries that could not be removed (also in
                              corrupt_detected): left in place, skipped, reported */
  uint64_t claims;                                 /* claims taken (OWNER) */
  uint64_t claim_waited_hits;                      /* HITs after waiting for another holder */
  uint64_t claim_timeouts;                         /* waits given up at the deadline */
} tirx__store_counters;

/*
 * Opens (creating with mode 0700, parents included) the cache directory named by opt->path or
 * the environment, and sweeps stale temp files. opt may be NULL for the defaults. Only the root
 * itself is checked; its parents are trusted.
 *
 * *out always receives a store the caller closes, unless out is NULL or memory runs out
 * (TIRX_E_NO_MEMORY, *out NULL). When the directory cannot be used the store is disabled
 * (every get misses, every put returns TIRX_E_NOT_SUPPORTED), the reason is recorded as the
 * thread's error, sent to the log callback and kept for tirx__store_disabled_reason, and the
 * status is TIRX_E_IO. Refused: a root that is a symbolic link or not a directory, is owned
 * by another uid, or is writable by group or others (FM-21); a path that cannot be resolved
 * (no HOME) or created. A relative opt->path is used as given.
 */
tirx_status tirx__store_open(const tirx__store_options *opt, tirx__store **out);

/* Closes the store. NULL is a no-op. No other call may be running on it. */
void tirx__store_close(tirx__store *s);

/* True when the directory was accepted by open. */
bool tirx__store_enabled(const tirx__store *s);

/* True when enabled and no persistent write error has stopped writes. */
bool tirx__store_writable(const tirx__store *s);

/* The directory's path (owned by the store; "" when it could not be resolved). */
const char *tirx__store_path(const tirx__store *s);

/* Why the store is disabled, owned by the store; "" when enabled. */
const char *tirx__store_disabled_reason(const tirx__store *s);

/*
 * Looks key up. On a hit fills *out (free it with tirx__store_entry_free) and returns true.
 * Otherwise returns false with *out zeroed: no entry, a disabled store, an I/O error, or a
 * corrupt or foreign entry (counted and removed). expect gives the arch and NVRTC version the
 * entry must have been compiled for. NULL s, key, expect or out is a miss (a bug in the caller,
 * never a crash).
 */
bool tirx__store_get(tirx__store *s, const tirx__cache_key *key, const tirx__store_info *expect,
                     tirx__store_entry *out);

/*
 * Publishes an entry for key, replacing any entry with that name. meta may be NULL when
 * meta_len is 0, payload when payload_len is 0.
 * Returns TIRX_OK; TIRX_E_NULL_ARG or TIRX_E_INVALID_ARG for bad arguments (recorded as the
 * thread's error); TIRX_E_LIMIT when the file would exceed max_entry_bytes or meta_len exceeds
 * TIRX__STORE_META_MAX; TIRX_E_NOT_SUPPORTED when the store is disabled or writes have
 * stopped; TIRX_E_IO when publishing failed (reported through the log callback). Callers may
 * ignore the result: the cache is best effort.
 */
tirx_status tirx__store_put(tirx__store *s, const tirx__cache_key *key,
                            const tirx__store_info *info, const void *meta, size_t meta_len,
                            const void *payload, size_t payload_len);

/* Runs the maintenance pass a put runs: sweeps stale temp files and evicts down to the size
 * limit when over it. Skips when another process holds the maintenance lock. */
void tirx__store_maintain(tirx__store *s);

/* Copies the counters into *out. */
void tirx__store_counters_get(const tirx__store *s, tirx__store_counters *out);

/* ---- single flight across processes ---- */

/*
 * A per-key claim: so that N processes that miss the same new key compile it once, a process
 * that missed calls tirx__store_claim before compiling. The claim is an flock(LOCK_EX) on the
 * lock file ".lock.<key hex>" in the cache directory (mode 0600, holding the holder's pid for
 * people). flock locks belong to open file descriptions, so the kernel drops a holder's claim
 * the moment it dies, SIGKILL included: a dead holder's claim is broken at once (within one
 * poll, at most 16 ms). A waiter polls, looking for the entry before each try, and gives up
 * at its deadline when a live holder keeps the claim (a hung compile): it then compiles
 * without a claim, which costs one duplicate compile and nothing else (publish is atomic).
 *
 * The holder unlinks the lock file before it unlocks it, so a successful run leaves nothing
 * behind; a waiter that locks an inode the holder already unlinked notices (the name no
 * longer refers to its file) and tries again. A killed holder leaves its lock file, unheld:
 * the next claim of the key takes it over, maintenance removes unheld ones older than
 * tmp_max_age_s, and clear removes them all. Lock files are not entries: list and verify
 * ignore them.
 */
typedef struct tirx__claim {
  int fd;                                    /* -1: no claim held */
  char name[TIRX__CACHE_KEY_HEX + 8];
} tirx__claim;

typedef enum tirx__store_claim_result {
  TIRX__CLAIM_OWNER = 0, /* the caller holds the claim: compile, put, then release */
  TIRX__CLAIM_HIT = 1,   /* the entry is there (published by another holder): *out filled */
  TIRX__CLAIM_NONE = 2,  /* no claim: disabled or unwritable store, a lock file that cannot
                            be made, or wait_ms passed with a live holder: compile anyway */
} tirx__store_claim_result;

/*
 * Looks for key's entry and, when it is missing, takes the key's claim, waiting up to wait_ms
 * milliseconds (0: not at all) while another live process or thread holds it. *claim must be
 * released with tirx__store_claim_release after OWNER (release is a no-op otherwise). On HIT,
 * *out is filled as by tirx__store_get (free it). NULL arguments give NONE with
 * TIRX_E_NULL_ARG recorded. Never blocks past wait_ms, never fails a compile.
 */
tirx__store_claim_result tirx__store_claim(tirx__store *s, const tirx__cache_key *key,
                                           const tirx__store_info *expect, int wait_ms,
                                           tirx__claim *claim, tirx__store_entry *out);

/* Gives the claim up (after the put, or after a failed compile). NULL or unheld: no-op. */
void tirx__store_claim_release(tirx__store *s, tirx__claim *claim);

/* ---- for the `tirx cache ls|verify|clear` tool ---- */

/* One directory entry whose name is a key. Header fields are valid when header_ok. */
typedef struct tirx__store_item {
  tirx__cache_key key;
  char name[TIRX__CACHE_KEY_HEX + 1];
  uint64_t file_bytes;
  int64_t mtime_s;
  bool header_ok;            /* a regular file with the right magic and version */
  char arch[TIRX__STORE_ARCH_MAX + 1];
  int nvrtc_major, nvrtc_minor;
  uint64_t meta_len, payload_len;
} tirx__store_item;

/* Called once per item; return false to stop the listing. */
typedef bool (*tirx__store_list_fn)(void *user, const tirx__store_item *item);

/*
 * Calls fn for every entry name in the directory (unsorted), reading only headers; nothing is
 * verified or removed. *count (may be NULL) receives the number of items passed to fn.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_NOT_SUPPORTED (disabled store), TIRX_E_IO.
 */
tirx_status tirx__store_list(tirx__store *s, tirx__store_list_fn fn, void *user, size_t *count);

typedef struct tirx__store_verify_counts {
  uint64_t checked;          /* entry names examined */
  uint64_t ok;               /* fully valid (arch and NVRTC version not compared) */
  uint64_t corrupt;          /* rejected, counted in corrupt_detected and removed */
  uint64_t kept;             /* rejected but could not be removed (a non-empty directory on
                                another filesystem, a permission error): left in place */
} tirx__store_verify_counts;

/* Reads and checks every entry as get does (without touching its mtime), removing the bad
 * ones. Errors: TIRX_E_NULL_ARG, TIRX_E_NOT_SUPPORTED, TIRX_E_IO. */
tirx_status tirx__store_verify(tirx__store *s, tirx__store_verify_counts *out);

/* Removes every entry and every temp file (of any age; a writer whose temp file is removed
 * fails its put harmlessly); a directory at such a name is removed with its contents (no
 * symbolic link followed, no mount point crossed). Files with other names are left alone.
 * *removed (may be NULL) receives the count of names removed. When some name cannot be
 * removed the others still are, and the status is TIRX_E_IO with a message naming the first
 * such name, the count removed of the total and the reason. Errors: TIRX_E_NULL_ARG,
 * TIRX_E_NOT_SUPPORTED, TIRX_E_IO. */
tirx_status tirx__store_clear(tirx__store *s, uint64_t *removed);

/* ---- bundles: warm start for a fleet (`tirx cache export|import`) ---- */

/*
 * A bundle is one file holding entries exactly as the store keeps them (integers
 * little-endian):
 *
 *     off  size  field
 *       0     8  magic "\x89TXBNDL\n"
 *       8     4  bundle format version (TIRX__STORE_BUNDLE_VERSION)
 *      12     4  0
 *      16     8  entry count n
 *      24     .  n times: u64 length, then that many bytes of one entry file (store.h format)
 *     end-8   8  XXH3-64 of every byte before it
 */
enum { TIRX__STORE_BUNDLE_VERSION = 1 };

/*
 * Writes every valid entry (checked as a load checks it; arch and NVRTC version kept, not
 * compared) into a new bundle at file: written to "<file>.tmp.<random>" and renamed over
 * file, so a failure leaves nothing. Entries are streamed, one in memory at a time.
 * *exported (may be NULL) receives the entry count.
 * Errors: TIRX_E_NULL_ARG, TIRX_E_NOT_SUPPORTED (disabled store), TIRX_E_NO_MEMORY,
 * TIRX_E_IO ("disk cache export: cannot write 'F': No space left on device").
 */
tirx_status tirx__store_export(tirx__store *s, const char *file, uint64_t *exported);

/*
 * Publishes every entry of the bundle at file into the store (replacing entries of the same
 * key). The whole bundle is checked first, its structure, its checksum and every entry as a
 * load checks it (magic, version, lengths, checksum, arch string; the key comes from the
 * entry's own header), so a bad bundle changes nothing; if publishing then fails, the
 * entries this import created are removed again. Entries for another arch or NVRTC version
 * are imported too (a runtime ignores them). *imported (may be NULL) receives the count.
 * Errors: TIRX_E_NULL_ARG; TIRX_E_NOT_SUPPORTED (disabled store, writes stopped);
 * TIRX_E_IO (cannot open file, cannot publish); TIRX_E_NO_MEMORY; TIRX_E_INVALID_ARG for a
 * bad bundle, with one of these messages ('F' is file):
 *   "disk cache import: 'F' is not a tirx cache bundle (bad magic)"
 *   "disk cache import: 'F' is not a tirx cache bundle (shorter than a bundle header)"
 *   "disk cache import: 'F' has bundle format version 7; this tirx reads version 1"
 *   "disk cache import: 'F' is truncated in entry 3 of 20"
 *   "disk cache import: 'F': entry 3 of 20 is 999999999999 bytes, over the entry size limit
 *    of 268435456" (one line)
 *   "disk cache import: 'F': entry 3 of 20 is corrupt (checksum mismatch)"
 *   "disk cache import: 'F' is truncated before its checksum"
 *   "disk cache import: 'F' fails its checksum (the bundle is damaged)"
 *   "disk cache import: 'F' has bytes after its checksum"
 */
tirx_status tirx__store_import(tirx__store *s, const char *file, uint64_t *imported);

/* ---- fault injection, for tests ---- */

/* The system calls the store makes through its shim. */
enum {
  TIRX__SYS_OPENAT = 1u << 0,
  TIRX__SYS_WRITE = 1u << 1,
  TIRX__SYS_PREAD = 1u << 2,
  TIRX__SYS_FSTAT = 1u << 3,
  TIRX__SYS_FSYNC = 1u << 4,
  TIRX__SYS_FCHMOD = 1u << 5,
  TIRX__SYS_CLOSE = 1u << 6,   /* the descriptor is closed even when the call "fails" */
  TIRX__SYS_RENAMEAT = 1u << 7,
  TIRX__SYS_UNLINKAT = 1u << 8,
  TIRX__SYS_FUTIMENS = 1u << 9,
  TIRX__SYS_MKDIR = 1u << 10,
  TIRX__SYS_ALL = (1u << 11) - 1
};

/*
 * On the calling thread, from now on: counts every shimmed call whose bit is in ops, and makes
 * the nth of them (0-based) fail with err, and when sticky every later one too. nth < 0 only
 * counts. ops 0 turns injection off (the default).
 */
void tirx__store_fault_set(unsigned ops, int64_t nth, int err, bool sticky);

/* Calls counted on this thread since the last tirx__store_fault_set. */
uint64_t tirx__store_fault_calls(void);

/* On the calling thread, the next temp file name uses this nonce instead of a random one
 * (to plant a file at the temp path in tests). */
void tirx__store_fault_next_nonce(uint64_t nonce);

#endif
