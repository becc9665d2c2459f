/* An MLP forward pass (8 -> 16 -> 3, ReLU) through jitc's C ABI, checked
 * against the same computation in plain C; then the errors a caller gets
 * for bad arguments. Built and run by tests/c_program.rs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jitc.h"

#define CHECK(call)                                                        \
  do {                                                                     \
    JitcStatus status_ = (call);                                           \
    if (status_ != JITC_STATUS_OK) {                                       \
      fprintf(stderr, "%s failed (%d): %s\n", #call, (int)status_,        \
              jitc_last_error());                                          \
      return 1;                                                            \
    }                                                                      \
  } while (0)

enum { N = 4, I = 8, H = 16, O = 3 };

/* x @ w + b, by a broadcast of each, a multiply and a sum. */
static int dense(const JitcVar *x, const JitcVar *w, const JitcVar *b, size_t n, size_t k, size_t m,
                 JitcVar **out) {
  size_t cube[3] = {n, m, k}, plane[2] = {n, m};
  const char *x_at[2] = {"i0", "i2"}, *w_at[2] = {"i2", "i1"}, *b_at[1] = {"i1"};
  const char *to_row[2] = {"i0", "i1"};
  JitcVar *xx, *ww, *product, *sum, *bias;
  CHECK(jitc_reindex(x, cube, 3, x_at, 2, NULL, NULL, 0, &xx));
  CHECK(jitc_reindex(w, cube, 3, w_at, 2, NULL, NULL, 0, &ww));
  CHECK(jitc_binary(xx, "mul", ww, &product));
  CHECK(jitc_reindex_reduce(product, "add", plane, 2, to_row, 2, &sum));
  CHECK(jitc_reindex(b, plane, 2, b_at, 1, NULL, NULL, 0, &bias));
  CHECK(jitc_binary(sum, "add", bias, out));
  jitc_var_free(xx);
  jitc_var_free(ww);
  jitc_var_free(product);
  jitc_var_free(sum);
  jitc_var_free(bias);
  return 0;
}

int main(void) {
  float x[N][I], w1[I][H], b1[H], w2[H][O], b2[O];
  for (int a = 0; a < N; a++)
    for (int c = 0; c < I; c++) x[a][c] = (float)((a * 7 + c * 3) % 11) / 5.0f - 1.0f;
  for (int a = 0; a < I; a++)
    for (int c = 0; c < H; c++) w1[a][c] = (float)((a * 5 + c * 2) % 9) / 8.0f - 0.5f;
  for (int c = 0; c < H; c++) b1[c] = (float)(c % 4) / 10.0f - 0.1f;
  for (int a = 0; a < H; a++)
    for (int c = 0; c < O; c++) w2[a][c] = (float)((a + c * 4) % 7) / 6.0f - 0.5f;
  for (int c = 0; c < O; c++) b2[c] = 0.25f * (float)c;

  size_t sx[2] = {N, I}, sw1[2] = {I, H}, sb1[1] = {H}, sw2[2] = {H, O}, sb2[1] = {O};
  JitcVar *vx, *vw1, *vb1, *vw2, *vb2, *zero;
  CHECK(jitc_var_new(x, sx, 2, JITC_DTYPE_F32, &vx));
  CHECK(jitc_var_new(w1, sw1, 2, JITC_DTYPE_F32, &vw1));
  CHECK(jitc_var_new(b1, sb1, 1, JITC_DTYPE_F32, &vb1));
  CHECK(jitc_var_new(w2, sw2, 2, JITC_DTYPE_F32, &vw2));
  CHECK(jitc_var_new(b2, sb2, 1, JITC_DTYPE_F32, &vb2));
  float nothing = 0.0f;
  CHECK(jitc_var_new(&nothing, NULL, 0, JITC_DTYPE_F32, &zero));

  JitcVar *hidden, *zeros, *relu, *y;
  size_t sh[2] = {N, H};
  if (dense(vx, vw1, vb1, N, I, H, &hidden)) return 1;
  CHECK(jitc_reindex(zero, sh, 2, NULL, 0, NULL, NULL, 0, &zeros));
  CHECK(jitc_binary(hidden, "max", zeros, &relu));
  if (dense(relu, vw2, vb2, N, H, O, &y)) return 1;

  size_t shape[2];
  CHECK(jitc_var_shape(y, shape));
  if (jitc_var_rank(y) != 2 || shape[0] != N || shape[1] != O || jitc_var_dtype(y) != JITC_DTYPE_F32) {
    fprintf(stderr, "y has the wrong type\n");
    return 1;
  }
  float got[N][O];
  CHECK(jitc_fetch(y, got, sizeof got));

  double worst = 0.0;
  for (int a = 0; a < N; a++) {
    float h[H];
    for (int c = 0; c < H; c++) {
      float s = b1[c];
      for (int k = 0; k < I; k++) s += x[a][k] * w1[k][c];
      h[c] = s > 0.0f ? s : 0.0f;
    }
    for (int c = 0; c < O; c++) {
      float s = b2[c];
      for (int k = 0; k < H; k++) s += h[k] * w2[k][c];
      double error = fabs((double)s - (double)got[a][c]);
      if (error > worst) worst = error;
    }
  }
  if (worst > 1e-5) {
    fprintf(stderr, "mlp: max error %g\n", worst);
    return 1;
  }

  /* Bad arguments: a status and a sentence, never a crash. */
  JitcVar *bad = NULL;
  if (jitc_binary(vx, "add", vw1, &bad) != JITC_STATUS_INVALID_ARGUMENT || bad != NULL ||
      strstr(jitc_last_error(), "operands must have one shape") == NULL) {
    fprintf(stderr, "a shape mismatch was not reported: %s\n", jitc_last_error());
    return 1;
  }
  if (jitc_fetch(y, got, 4) != JITC_STATUS_INVALID_ARGUMENT ||
      strstr(jitc_last_error(), "takes 48 bytes") == NULL) {
    fprintf(stderr, "a short buffer was not reported: %s\n", jitc_last_error());
    return 1;
  }
  if (jitc_unary(NULL, "exp", &bad) != JITC_STATUS_INVALID_ARGUMENT ||
      strcmp(jitc_last_error(), "x is null") != 0) {
    fprintf(stderr, "a null handle was not reported: %s\n", jitc_last_error());
    return 1;
  }
  const char *wrong_rank[1] = {"i0"};
  if (jitc_reindex(vx, sh, 2, wrong_rank, 1, NULL, NULL, 0, &bad) != JITC_STATUS_INVALID_ARGUMENT) {
    fprintf(stderr, "a map of the wrong rank was not reported\n");
    return 1;
  }

  /* State: two deferred writes, committed by one sync. */
  float start[2] = {1.0f, 2.0f};
  size_t s2[1] = {2};
  CHECK(jitc_state_set("acc", start, s2, 1, JITC_DTYPE_F32));
  for (int step = 0; step < 2; step++) {
    JitcVar *acc, *twice;
    CHECK(jitc_state_read("acc", &acc));
    CHECK(jitc_binary(acc, "add", acc, &twice));
    CHECK(jitc_state_write("acc", twice));
    jitc_var_free(acc);
    jitc_var_free(twice);
  }
  CHECK(jitc_sync());
  JitcVar *acc;
  float now[2];
  CHECK(jitc_state_read("acc", &acc));
  CHECK(jitc_fetch(acc, now, sizeof now));
  jitc_var_free(acc);
  if (now[0] != 4.0f || now[1] != 8.0f) {
    fprintf(stderr, "state: %g %g\n", now[0], now[1]);
    return 1;
  }
  if (jitc_state_read("missing", &acc) != JITC_STATUS_INVALID_ARGUMENT) {
    fprintf(stderr, "a missing state was not reported\n");
    return 1;
  }

  /* Gradients: of sum(relu W2 + b2) by W2 and b2, recorded before the
     fetch, against their closed form (column sums of relu; N). */
  JitcVar *z, *loss, *wrt[2] = {vw2, vb2}, *grads[2] = {NULL, NULL};
  if (dense(relu, vw2, vb2, N, H, O, &z)) return 1;
  CHECK(jitc_reindex_reduce(z, "add", NULL, 0, NULL, 0, &loss));
  if (jitc_grad(z, (const JitcVar *const *)wrt, 2, grads) != JITC_STATUS_INVALID_ARGUMENT ||
      strstr(jitc_last_error(), "the loss must be a scalar") == NULL || grads[0] != NULL) {
    fprintf(stderr, "a non-scalar loss was not reported: %s\n", jitc_last_error());
    return 1;
  }
  CHECK(jitc_grad(loss, (const JitcVar *const *)wrt, 2, grads));
  float dw2[H][O], db2[O], r[N][H];
  CHECK(jitc_fetch(grads[0], dw2, sizeof dw2));
  CHECK(jitc_fetch(grads[1], db2, sizeof db2));
  CHECK(jitc_fetch(relu, r, sizeof r));
  for (int k = 0; k < H; k++)
    for (int c = 0; c < O; c++) {
      float s = 0.0f;
      for (int a = 0; a < N; a++) s += r[a][k];
      if (fabsf(s - dw2[k][c]) > 1e-5f || db2[c] != (float)N) {
        fprintf(stderr, "grad: dW2[%d][%d] = %g, want %g; db2 %g\n", k, c, dw2[k][c], s, db2[c]);
        return 1;
      }
    }
  JitcVar *extra[] = {z, loss, grads[0], grads[1]};
  for (size_t k = 0; k < 4; k++) jitc_var_free(extra[k]);

  JitcVar *handles[] = {vx, vw1, vb1, vw2, vb2, zero, hidden, zeros, relu, y};
  for (size_t k = 0; k < sizeof handles / sizeof handles[0]; k++) jitc_var_free(handles[k]);
  jitc_var_free(NULL);
  printf("mlp: ok, max error %g\n", worst);
  return 0;
}
