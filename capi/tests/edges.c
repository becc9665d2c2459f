/* The C ABI's edges, each once a defect a probe found: a dtype that is
 * no JitcDtype, a handle used or freed on another thread, boolean bytes
 * other than 0 and 1, a fetch into a wrong buffer (refused before anything
 * runs), an absurd rank, an index expression nested past what a parser's
 * stack holds, and jitc called from an atexit handler after a failure.
 * Prints "edges: ok" and exits 0 when every check holds. */
#include "jitc.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(condition, ...)                      \
  do {                                             \
    if (!(condition)) {                            \
      fprintf(stderr, "failed: " __VA_ARGS__);     \
      fprintf(stderr, " (last error: %s)\n", jitc_last_error()); \
      failures++;                                  \
    }                                              \
  } while (0)

static int has(const char *needle) { return strstr(jitc_last_error(), needle) != NULL; }

static struct JitcVar *made_here;

static void *use_from_another_thread(void *unused) {
  (void)unused;
  struct JitcVar *out = NULL;
  enum JitcStatus status = jitc_unary(made_here, "exp", &out);
  CHECK(status == JITC_STATUS_INVALID_ARGUMENT && has("belongs to the thread that made it"),
        "another thread's handle: status %d", status);
  float data[2];
  status = jitc_fetch(made_here, data, sizeof data);
  CHECK(status == JITC_STATUS_INVALID_ARGUMENT, "another thread's fetch: status %d", status);
  jitc_var_free(made_here); /* leaked, not freed: the handle stays usable here */
  return NULL;
}

static void at_exit(void) {
  /* The thread's locals are destroyed by now: no abort, an empty message. */
  struct JitcVar *out = NULL;
  (void)jitc_unary(NULL, "exp", &out);
  (void)jitc_last_error();
}

int main(void) {
  size_t two[1] = {2};
  float values[2] = {1.0f, 2.0f};
  struct JitcVar *x = NULL, *out = NULL;

  /* A dtype that is none of JitcDtype's. */
  enum JitcStatus status = jitc_var_new(values, two, 1, 5, &x);
  CHECK(status == JITC_STATUS_INVALID_ARGUMENT && has("dtype 5 is not a JitcDtype"), "dtype 5: %d", status);
  status = jitc_full(two, 1, 100000, 1.0, &x);
  CHECK(status == JITC_STATUS_INVALID_ARGUMENT, "full of dtype 100000: %d", status);

  /* A rank past any shape: refused before the shape is read. */
  status = jitc_var_new(values, two, (size_t)1 << 61, JITC_DTYPE_F32, &x);
  CHECK(status == JITC_STATUS_INVALID_ARGUMENT && has("rank"), "rank 2^61: %d", status);

  /* Booleans: any byte but 0 is true. */
  uint8_t flags[4] = {0, 1, 2, 255};
  size_t four[1] = {4};
  struct JitcVar *b = NULL, *n = NULL;
  CHECK(jitc_var_new(flags, four, 1, JITC_DTYPE_BOOL, &b) == JITC_STATUS_OK, "bools");
  CHECK(jitc_unary(b, "not", &n) == JITC_STATUS_OK, "not");
  uint8_t got[4];
  CHECK(jitc_fetch(b, got, 4) == JITC_STATUS_OK && got[0] == 0 && got[1] == 1 && got[2] == 1 && got[3] == 1,
        "bools read back %d %d %d %d", got[0], got[1], got[2], got[3]);
  CHECK(jitc_fetch(n, got, 4) == JITC_STATUS_OK && got[0] == 1 && got[1] == 0 && got[2] == 0 && got[3] == 0,
        "not of bools %d %d %d %d", got[0], got[1], got[2], got[3]);
  jitc_var_free(n);
  jitc_var_free(b);

  /* A fetch into a wrong buffer is refused before anything runs: the
     division by zero it would compute is not reported. */
  int32_t ints[2] = {1, 0};
  struct JitcVar *i = NULL, *q = NULL;
  CHECK(jitc_var_new(ints, two, 1, JITC_DTYPE_I32, &i) == JITC_STATUS_OK, "ints");
  CHECK(jitc_binary(i, "div", i, &q) == JITC_STATUS_OK, "div");
  int32_t small[1];
  status = jitc_fetch(q, small, sizeof small);
  CHECK(status == JITC_STATUS_INVALID_ARGUMENT && has("the value takes 8 bytes"), "wrong buffer: %d", status);
  jitc_var_free(q);
  jitc_var_free(i);

  /* Index expressions nested past a parser's stack. */
  CHECK(jitc_var_new(values, two, 1, JITC_DTYPE_F32, &x) == JITC_STATUS_OK, "x");
  char *deep = malloc(20003);
  memset(deep, '(', 10000);
  strcpy(deep + 10000, "i0");
  memset(deep + 10002, ')', 10000);
  deep[20002] = '\0';
  const char *indices[1] = {deep};
  status = jitc_reindex(x, two, 1, indices, 1, NULL, NULL, 0, &out);
  CHECK(status == JITC_STATUS_INVALID_ARGUMENT, "deep expression: %d", status);
  free(deep);

  /* A handle used and freed on another thread. */
  made_here = x;
  pthread_t thread;
  pthread_create(&thread, NULL, use_from_another_thread, NULL);
  pthread_join(thread, NULL);
  float back[2];
  CHECK(jitc_fetch(x, back, sizeof back) == JITC_STATUS_OK && back[1] == 2.0f, "x after the other thread");
  jitc_var_free(x);

  /* A failure left behind, then jitc called at exit. */
  (void)jitc_unary(NULL, "exp", &out);
  atexit(at_exit);
  if (failures == 0) printf("edges: ok\n");
  return failures == 0 ? 0 : 1;
}
