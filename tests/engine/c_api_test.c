/* The C API (roundtable/c.h), compiled as C and linked with the shared
 * library as a user's program would be: every function, and the errors a
 * caller meets (a missing key, a closed table, a locked table, an oversize
 * key, a damaged block, bad options). Exits 0 when every check holds;
 * otherwise prints each failed check and exits 1. */
#include "roundtable/c.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                \
      ++failures;                                                    \
    }                                                                \
  } while (0)

/* Checks that a call returned `want`, printing its message otherwise; then
 * frees the message in `err` (a variable of the caller's). */
#define EXPECT_CODE(call, want)                                          \
  do {                                                                   \
    int got_ = (call);                                                   \
    if (got_ != (want)) {                                                \
      fprintf(stderr, "%s:%d: %s returned %s (%s), not %s\n", __FILE__,  \
              __LINE__, #call, rt_code_name(got_), err ? err : "",       \
              rt_code_name(want));                                       \
      ++failures;                                                        \
    }                                                                    \
    rt_free(err);                                                        \
    err = NULL;                                                          \
  } while (0)

static char dir[256];

static rt_table* open_table(const char* path, int block_size) {
  rt_options* o = rt_options_create();
  if (block_size) rt_options_set_block_size(o, (uint32_t)block_size);
  rt_options_set_s0(o, 4);
  rt_options_set_backend(o, RT_BACKEND_POSIX);
  rt_options_set_block_cache_bytes(o, 0);
  rt_options_set_write_buffer_bytes(o, 0);
  rt_table* t = NULL;
  char* err = NULL;
  int code = rt_open(o, path, &t, &err);
  if (code != RT_OK) {
    fprintf(stderr, "rt_open(%s): %s %s\n", path, rt_code_name(code), err);
    ++failures;
  }
  rt_free(err);
  rt_options_destroy(o);
  return t;
}

/* One memory budget for the cache and the write buffer: a table several
   times the budget reads back every record. */
static void test_one_memory_budget(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/budget", dir);
  rt_options* o = rt_options_create();
  rt_options_set_block_size(o, 1024);
  rt_options_set_backend(o, RT_BACKEND_POSIX);
  rt_options_set_memory_bytes(o, 64 << 10);
  rt_table* t = NULL;
  char* err = NULL;
  CHECK(rt_open(o, path, &t, &err) == RT_OK);
  rt_options_destroy(o);
  if (t == NULL) return;
  char key[32], value[64], buf[64];
  memset(value, 'v', sizeof value);
  for (int i = 0; i < 5000; ++i) {
    const int n = snprintf(key, sizeof key, "key%d", i);
    CHECK(rt_put(t, NULL, key, (size_t)n, value, sizeof value, &err) == RT_OK);
  }
  size_t len = 0;
  for (int i = 0; i < 5000; i += 37) {
    const int n = snprintf(key, sizeof key, "key%d", i);
    CHECK(rt_get(t, key, (size_t)n, buf, sizeof buf, &len, &err) == RT_OK &&
          len == sizeof value && memcmp(buf, value, len) == 0);
  }
  uint64_t count = 0;
  CHECK(rt_count(t, &count, &err) == RT_OK && count == 5000);
  CHECK(rt_close(t, &err) == RT_OK);
  CHECK(err == NULL);
  rt_table_destroy(t);
  CHECK(rt_destroy(path, &err) == RT_OK);
}

static void test_reads_and_writes(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/rw", dir);
  rt_table* t = open_table(path, 1024);
  if (t == NULL) return;
  char* err = NULL;

  CHECK(rt_put(t, NULL, "alice", 5, "42", 2, &err) == RT_OK);
  rt_writeoptions* sync = rt_writeoptions_create();
  rt_writeoptions_set_sync(sync, 1);
  /* A key and a value with NUL bytes inside. */
  CHECK(rt_put(t, sync, "b\0b", 3, "x\0y", 3, &err) == RT_OK);
  rt_writeoptions_destroy(sync);
  CHECK(err == NULL);

  /* rt_get into a buffer: whole, cut short, and the length alone. */
  char buf[8];
  size_t len = 0;
  CHECK(rt_get(t, "alice", 5, buf, sizeof buf, &len, &err) == RT_OK);
  CHECK(len == 2 && memcmp(buf, "42", 2) == 0);
  CHECK(rt_get(t, "b\0b", 3, buf, 1, &len, &err) == RT_OK);
  CHECK(len == 3 && buf[0] == 'x');
  CHECK(rt_get(t, "alice", 5, NULL, 0, &len, &err) == RT_OK && len == 2);

  /* A missing key: NOT_FOUND with a message. */
  CHECK(rt_get(t, "nobody", 6, buf, sizeof buf, &len, &err) == RT_NOT_FOUND);
  CHECK(err != NULL && strlen(err) > 0);
  rt_free(err);
  err = NULL;

  /* rt_get_alloc: a large value, out of line, NUL after it. */
  const size_t big = 100000;
  char* value = malloc(big);
  for (size_t i = 0; i < big; ++i) value[i] = (char)('a' + i % 26);
  CHECK(rt_put(t, NULL, "big", 3, value, big, &err) == RT_OK);
  char* got = NULL;
  CHECK(rt_get_alloc(t, "big", 3, &got, &len, &err) == RT_OK);
  CHECK(got != NULL && len == big && memcmp(got, value, big) == 0 &&
        got[big] == '\0');
  rt_free(got);
  CHECK(rt_get_alloc(t, "none", 4, &got, &len, &err) == RT_NOT_FOUND &&
        got == NULL);
  free(value);

  /* An oversize key: longer than rt_max_key_bytes with a value that does
   * not fit beside it inline. */
  const size_t max_key = rt_max_key_bytes(t);
  CHECK(max_key > 0 && max_key < 1024);
  char* long_key = malloc(max_key + 1);
  memset(long_key, 'k', max_key + 1);
  EXPECT_CODE(rt_put(t, NULL, long_key, max_key + 1, "v", 900, &err),
              RT_INVALID_ARGUMENT);
  CHECK(rt_get(t, long_key, max_key + 1, buf, sizeof buf, &len, &err) ==
        RT_NOT_FOUND);
  free(long_key);

  /* A batch: all applied, in order. */
  rt_writebatch* b = rt_writebatch_create();
  rt_writebatch_put(b, "k1", 2, "v1", 2);
  rt_writebatch_put(b, "k2", 2, "v2", 2);
  rt_writebatch_delete(b, "alice", 5);
  rt_writebatch_put(b, "k1", 2, "v1b", 3);
  CHECK(rt_writebatch_count(b) == 4);
  CHECK(rt_write(t, NULL, b, &err) == RT_OK);
  rt_writebatch_clear(b);
  CHECK(rt_writebatch_count(b) == 0);
  rt_writebatch_destroy(b);
  CHECK(rt_get(t, "alice", 5, buf, sizeof buf, &len, &err) == RT_NOT_FOUND);
  CHECK(rt_get(t, "k1", 2, buf, sizeof buf, &len, &err) == RT_OK && len == 3 &&
        memcmp(buf, "v1b", 3) == 0);

  /* A delete, and a delete of an absent key. */
  CHECK(rt_delete(t, NULL, "k2", 2, &err) == RT_OK);
  CHECK(rt_delete(t, NULL, "k2", 2, &err) == RT_OK);

  /* Multi-get: found, missing, large. */
  const char* keys[3] = {"k1", "zz", "big"};
  const size_t keylens[3] = {2, 2, 3};
  char* values[3];
  size_t lengths[3];
  int codes[3];
  CHECK(rt_multi_get(t, 3, keys, keylens, values, lengths, codes, &err) ==
        RT_OK);
  CHECK(codes[0] == RT_OK && lengths[0] == 3 && memcmp(values[0], "v1b", 3) == 0);
  CHECK(codes[1] == RT_NOT_FOUND && values[1] == NULL);
  CHECK(codes[2] == RT_OK && lengths[2] == big);
  for (int i = 0; i < 3; ++i) rt_free(values[i]);

  /* The iterator sees k1, b\0b and big, each once. */
  rt_iterator* it = rt_iterator_create(t);
  int seen = 0, seen_k1 = 0;
  for (; rt_iterator_valid(it); rt_iterator_next(it)) {
    size_t kl, vl;
    const char* k = rt_iterator_key(it, &kl);
    const char* v = rt_iterator_value(it, &vl);
    if (kl == 2 && memcmp(k, "k1", 2) == 0) {
      seen_k1 = vl == 3 && memcmp(v, "v1b", 3) == 0;
    }
    ++seen;
  }
  CHECK(rt_iterator_status(it, &err) == RT_OK);
  rt_iterator_destroy(it);
  CHECK(seen == 3 && seen_k1);

  /* The expected NOT_FOUNDs above left their message; none from here. */
  rt_free(err);
  err = NULL;
  uint64_t count = 0;
  CHECK(rt_count(t, &count, &err) == RT_OK && count == 3);
  rt_stats st;
  rt_get_stats(t, &st);
  CHECK(st.block_size == 1024 && st.s0 == 4 && st.buckets >= 4);
  CHECK(st.value_count == 1 && st.value_bytes == big);
  CHECK(st.records + st.buffered_records >= 3);
  /* Every counter by its name: the summary's agree, the others are there,
     and an unknown name is refused with the value left as it was. */
  {
    uint64_t v = 0;
    CHECK(rt_get_stat(t, "buckets", &v, &err) == RT_OK && v == st.buckets);
    CHECK(rt_get_stat(t, "block_size", &v, &err) == RT_OK && v == 1024);
    CHECK(rt_get_stat(t, "value_bytes", &v, &err) == RT_OK && v == big);
    CHECK(rt_get_stat(t, "buffered_deletes", &v, &err) == RT_OK);
    CHECK(rt_get_stat(t, "stash_memory_bytes", &v, &err) == RT_OK);
    CHECK(rt_get_stat(t, "bucket_memory_bytes", &v, &err) == RT_OK && v > 0);
    CHECK(rt_get_stat(t, "logical.grows", &v, &err) == RT_OK);
    CHECK(rt_get_stat(t, "physical_wal.bytes_written", &v, &err) == RT_OK &&
          v > 0);
    CHECK(rt_get_stat(t, "recovered_journal", &v, &err) == RT_OK && v <= 1);
    v = 7;
    CHECK(rt_get_stat(t, "no_such_counter", &v, &err) == RT_INVALID_ARGUMENT);
    CHECK(v == 7 && err != NULL && strstr(err, "no_such_counter") != NULL);
    rt_free(err);
    err = NULL;
    EXPECT_CODE(rt_get_stat(t, "logical.", &v, &err), RT_INVALID_ARGUMENT);
    EXPECT_CODE(rt_get_stat(t, "physical_wal.grows", &v, &err),
                RT_INVALID_ARGUMENT);
  }
  CHECK(rt_flush(t, &err) == RT_OK);
  CHECK(rt_checkpoint(t, &err) == RT_OK);
  CHECK(rt_sync(t, &err) == RT_OK);
  CHECK(rt_check(t, &err) == RT_OK);
  CHECK(err == NULL);

  /* A reservation takes the buckets at once and keeps them. */
  CHECK(rt_reserve(t, 50000, 8, 8, &err) == RT_OK);
  rt_get_stats(t, &st);
  CHECK(st.buckets > 100);
  CHECK(rt_count(t, &count, &err) == RT_OK && count == 3);

  /* A backup opens as a table of its own with the same records; a second
     one into it is refused. */
  char copy[340];
  snprintf(copy, sizeof copy, "%s.backup", path);
  CHECK(rt_backup(t, copy, &err) == RT_OK);
  EXPECT_CODE(rt_backup(t, copy, &err), RT_ALREADY_EXISTS);
  rt_free(err);
  err = NULL;
  {
    rt_options* co = rt_options_create();
    rt_table* c = NULL;
    CHECK(rt_open(co, copy, &c, &err) == RT_OK);
    uint64_t copied = 0;
    CHECK(rt_count(c, &copied, &err) == RT_OK && copied == 3);
    CHECK(rt_check(c, &err) == RT_OK);
    CHECK(rt_close(c, &err) == RT_OK);
    rt_table_destroy(c);
    rt_options_destroy(co);
    CHECK(rt_destroy(copy, &err) == RT_OK);
  }

  /* A second handle on an open table: the lock refuses it. */
  rt_table* second = NULL;
  rt_options* o = rt_options_create();
  EXPECT_CODE(rt_open(o, path, &second, &err), RT_FAILED_PRECONDITION);
  CHECK(second == NULL);

  /* Closed: every call fails with FAILED_PRECONDITION. */
  CHECK(rt_close(t, &err) == RT_OK);
  EXPECT_CODE(rt_put(t, NULL, "a", 1, "b", 1, &err), RT_FAILED_PRECONDITION);
  EXPECT_CODE(rt_get(t, "k1", 2, buf, sizeof buf, &len, &err),
              RT_FAILED_PRECONDITION);
  EXPECT_CODE(rt_count(t, &count, &err), RT_FAILED_PRECONDITION);
  EXPECT_CODE(rt_close(t, &err), RT_FAILED_PRECONDITION);
  rt_table_destroy(t);

  /* Reopened with no layout given: the stored one; a different block size
   * is refused, naming both. */
  CHECK(rt_open(o, path, &t, &err) == RT_OK);
  CHECK(rt_get(t, "k1", 2, buf, sizeof buf, &len, &err) == RT_OK && len == 3);
  rt_table_destroy(t); /* closes */
  rt_options_set_block_size(o, 4096);
  CHECK(rt_open(o, path, &t, &err) == RT_INVALID_ARGUMENT);
  CHECK(err != NULL && strstr(err, "1024") != NULL && strstr(err, "4096"));
  rt_free(err);
  err = NULL;
  rt_options_destroy(o);

  CHECK(rt_destroy(path, &err) == RT_OK);
  CHECK(access(path, F_OK) != 0);
}

static void test_bad_options_and_missing(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/missing", dir);
  rt_options* o = rt_options_create();
  rt_table* t = NULL;
  char* err = NULL;
  rt_options_set_create_if_missing(o, 0);
  EXPECT_CODE(rt_open(o, path, &t, &err), RT_NOT_FOUND);
  rt_options_set_create_if_missing(o, 1);
  rt_options_set_block_size(o, 1000);
  EXPECT_CODE(rt_open(o, path, &t, &err), RT_INVALID_ARGUMENT);
  rt_options_set_block_size(o, 4096);
  rt_options_set_epsilon(o, 0.9);
  EXPECT_CODE(rt_open(o, path, &t, &err), RT_INVALID_ARGUMENT);
  rt_options_set_epsilon(o, 0.2);
  rt_options_set_backend(o, (rt_backend)42);
  EXPECT_CODE(rt_open(o, path, &t, &err), RT_INVALID_ARGUMENT);
  CHECK(t == NULL);
  /* The remaining setters, on a table in memory. */
  rt_options_set_backend(o, RT_BACKEND_MEMORY);
  rt_options_set_hash_seed(o, 99);
  rt_options_set_block_records(o, 0);
  rt_options_set_checkpoint_bytes(o, 1 << 20);
  rt_options_set_value_checkpoint_bytes(o, 1 << 20);
  rt_options_set_direct_io(o, 0);
  rt_options_set_error_if_exists(o, 0);
  rt_options_set_paranoid_checks(o, 1);
  CHECK(rt_open(o, path, &t, &err) == RT_OK);
  CHECK(rt_put(t, NULL, "m", 1, "n", 1, &err) == RT_OK);
  rt_stats st;
  rt_get_stats(t, &st);
  CHECK(st.epsilon == 0.2 && st.records == 1);
  rt_table_destroy(t);
  rt_options_set_backend(o, RT_BACKEND_POSIX);
  rt_options_set_read_only(o, 1);
  EXPECT_CODE(rt_open(o, path, &t, &err), RT_NOT_FOUND);
  rt_options_destroy(o);
  CHECK(err == NULL);
}

/* A damaged block: Get and Check answer DATA_LOSS, never wrong bytes. */
static void test_damaged_block(void) {
  char path[300], blocks[340];
  snprintf(path, sizeof path, "%s/damaged", dir);
  snprintf(blocks, sizeof blocks, "%s/blocks", path);
  rt_table* t = open_table(path, 512);
  if (t == NULL) return;
  char* err = NULL;
  for (int i = 0; i < 200; ++i) {
    char key[16];
    int n = snprintf(key, sizeof key, "key%d", i);
    CHECK(rt_put(t, NULL, key, (size_t)n, "value", 5, &err) == RT_OK);
  }
  CHECK(rt_close(t, &err) == RT_OK);
  rt_table_destroy(t);
  /* Every bucket block (after the two superblocks) gets garbage in its
   * middle. */
  int fd = open(blocks, O_WRONLY);
  CHECK(fd >= 0);
  const char junk[16] = "garbage garbage";
  off_t size = lseek(fd, 0, SEEK_END);
  for (off_t at = 2 * 512 + 200; at < size; at += 512) {
    CHECK(pwrite(fd, junk, sizeof junk, at) == (ssize_t)sizeof junk);
  }
  close(fd);
  t = open_table(path, 0);
  if (t == NULL) return;
  char buf[16];
  size_t len;
  int code = rt_get(t, "key7", 4, buf, sizeof buf, &len, &err);
  CHECK(code == RT_DATA_LOSS);
  CHECK(err != NULL && strstr(err, "bucket") != NULL);
  rt_free(err);
  err = NULL;
  EXPECT_CODE(rt_check(t, &err), RT_DATA_LOSS);
  rt_iterator* it = rt_iterator_create(t);
  while (rt_iterator_valid(it)) rt_iterator_next(it);
  EXPECT_CODE(rt_iterator_status(it, &err), RT_DATA_LOSS);
  rt_iterator_destroy(it);
  rt_table_destroy(t);
  CHECK(rt_destroy(path, &err) == RT_OK);
}

int main(void) {
  const char* tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/rt_c_api_XXXXXX", tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  CHECK(strlen(rt_version()) >= 5);
  CHECK(strcmp(rt_code_name(RT_DATA_LOSS), "DATA_LOSS") == 0);
  CHECK(strcmp(rt_code_name(99), "UNKNOWN") == 0);
  rt_free(NULL);
  rt_table_destroy(NULL);
  test_reads_and_writes();
  test_one_memory_budget();
  test_bad_options_and_missing();
  test_damaged_block();
  rmdir(dir);
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("c_api_test: every check held\n");
  return 0;
}
