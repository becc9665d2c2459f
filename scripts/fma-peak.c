/* The machine's measured FMA peak, for the benchmark tables
 * (docs/benchmarks.md): every thread runs independent chains of fused
 * multiply-adds on the widest vectors the compiler targets, long enough
 * that the loop is all FMAs. Not a test; run by hand:
 *
 *   /usr/lib/llvm-22/bin/clang -O3 -march=native -pthread scripts/fma-peak.c -o /tmp/fma-peak
 *   /tmp/fma-peak [threads]        # default 2; prints GFLOP/s, the median of 7 runs
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHAINS 12   /* independent accumulators: more than FMA latency x ports */
#define WIDTH 16    /* floats per vector: 512-bit; the compiler splits it when narrower */
#define STEPS 20000000L

typedef float vec __attribute__((vector_size(WIDTH * sizeof(float))));

static void *work(void *out) {
  vec acc[CHAINS], a, b;
  for (int k = 0; k < WIDTH; k++) {
    a[k] = 0.999999f;
    b[k] = 1e-7f;
  }
  for (int c = 0; c < CHAINS; c++) acc[c] = a * (float)c;
  for (long s = 0; s < STEPS; s++) {
    for (int c = 0; c < CHAINS; c++) acc[c] = acc[c] * a + b;
    __asm__ volatile("" : "+x"(a));
  }
  float sum = 0;
  for (int c = 0; c < CHAINS; c++)
    for (int k = 0; k < WIDTH; k++) sum += acc[c][k];
  *(float *)out = sum;
  return NULL;
}

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  if (threads < 1 || threads > 256) {
    fprintf(stderr, "fma-peak: threads must be 1 to 256, got %s\n", argv[1]);
    return 1;
  }
  pthread_t ids[256];
  float sums[256];
  double rates[7];
  for (int run = 0; run < 7; run++) {
    double start = seconds();
    for (int t = 0; t < threads; t++) pthread_create(&ids[t], NULL, work, &sums[t]);
    for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    double flops = 2.0 * WIDTH * CHAINS * (double)STEPS * threads;
    rates[run] = flops / (seconds() - start) / 1e9;
  }
  qsort(rates, 7, sizeof rates[0], compare);
  printf("FMA peak, %d threads: %.1f GFLOP/s (median of 7; min %.1f, max %.1f; checksum %g)\n", threads,
         rates[3], rates[0], rates[6], (double)sums[0]);
  return 0;
}
