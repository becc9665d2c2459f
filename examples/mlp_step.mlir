// One SGD training step of a 784-512-10 MLP (ReLU, softmax cross-entropy)
// at batch 256, with its backward pass written out by hand: what
// `jitc.grad` and `jitc.optim.SGD` derive in examples/python/mlp_train.py
// (whose first step, with the momentum buffer at zero, is this plain SGD
// step). Arguments: x (256x784), one-hot labels y (256x10), W1, b1, W2,
// b2 and the learning rate; results: the loss before the step and the
// updated W1, b1, W2, b2.
//
//   loss = mean_i -sum_j y[i,j] log_softmax(relu(x W1 + b1) W2 + b2)[i,j]
func.func @main(%x: tensor<256x784xf32>, %y: tensor<256x10xf32>,
                %w1: tensor<784x512xf32>, %b1: tensor<512xf32>,
                %w2: tensor<512x10xf32>, %b2: tensor<10xf32>, %lr: tensor<f32>)
    -> (tensor<f32>, tensor<784x512xf32>, tensor<512xf32>, tensor<512x10xf32>, tensor<10xf32>) {
  // Forward: a1 = x W1 + b1, h = relu(a1).
  %xb = "meta.reindex"(%x) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<256x784xf32>) -> tensor<256x512x784xf32>
  %w1b = "meta.reindex"(%w1) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<784x512xf32>) -> tensor<256x512x784xf32>
  %p1 = "meta.binary"(%xb, %w1b) {kind = "mul"} : (tensor<256x512x784xf32>, tensor<256x512x784xf32>) -> tensor<256x512x784xf32>
  %z1 = "meta.reindex_reduce"(%p1) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<256x512x784xf32>) -> tensor<256x512xf32>
  %b1b = "meta.reindex"(%b1) {indices = affine_map<(i, j) -> (j)>} : (tensor<512xf32>) -> tensor<256x512xf32>
  %a1 = "meta.binary"(%z1, %b1b) {kind = "add"} : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  %zeros = arith.constant dense<0.0> : tensor<256x512xf32>
  %h = "meta.binary"(%a1, %zeros) {kind = "max"} : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>

  // Forward: logits = h W2 + b2.
  %hb = "meta.reindex"(%h) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<256x512xf32>) -> tensor<256x10x512xf32>
  %w2b = "meta.reindex"(%w2) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<512x10xf32>) -> tensor<256x10x512xf32>
  %p2 = "meta.binary"(%hb, %w2b) {kind = "mul"} : (tensor<256x10x512xf32>, tensor<256x10x512xf32>) -> tensor<256x10x512xf32>
  %z2 = "meta.reindex_reduce"(%p2) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>} : (tensor<256x10x512xf32>) -> tensor<256x10xf32>
  %b2b = "meta.reindex"(%b2) {indices = affine_map<(i, j) -> (j)>} : (tensor<10xf32>) -> tensor<256x10xf32>
  %logits = "meta.binary"(%z2, %b2b) {kind = "add"} : (tensor<256x10xf32>, tensor<256x10xf32>) -> tensor<256x10xf32>

  // Forward: log_softmax and the mean cross-entropy.
  %m = "meta.reindex_reduce"(%logits) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<256x10xf32>) -> tensor<256xf32>
  %mb = "meta.reindex"(%m) {indices = affine_map<(i, j) -> (i)>} : (tensor<256xf32>) -> tensor<256x10xf32>
  %s = "meta.binary"(%logits, %mb) {kind = "sub"} : (tensor<256x10xf32>, tensor<256x10xf32>) -> tensor<256x10xf32>
  %e = "meta.unary"(%s) {kind = "exp"} : (tensor<256x10xf32>) -> tensor<256x10xf32>
  %se = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i, j) -> (i)>} : (tensor<256x10xf32>) -> tensor<256xf32>
  %lse = "meta.unary"(%se) {kind = "log"} : (tensor<256xf32>) -> tensor<256xf32>
  %lseb = "meta.reindex"(%lse) {indices = affine_map<(i, j) -> (i)>} : (tensor<256xf32>) -> tensor<256x10xf32>
  %logp = "meta.binary"(%s, %lseb) {kind = "sub"} : (tensor<256x10xf32>, tensor<256x10xf32>) -> tensor<256x10xf32>
  %ylogp = "meta.binary"(%y, %logp) {kind = "mul"} : (tensor<256x10xf32>, tensor<256x10xf32>) -> tensor<256x10xf32>
  %total = "meta.reindex_reduce"(%ylogp) {kind = "add", indices = affine_map<(i, j) -> ()>} : (tensor<256x10xf32>) -> tensor<f32>
  %minus_mean = arith.constant dense<-0.00390625> : tensor<f32>
  %loss = "meta.binary"(%total, %minus_mean) {kind = "mul"} : (tensor<f32>, tensor<f32>) -> tensor<f32>

  // Backward: d loss / d logits = (softmax - y) / 256.
  %softmax = "meta.unary"(%logp) {kind = "exp"} : (tensor<256x10xf32>) -> tensor<256x10xf32>
  %diff = "meta.binary"(%softmax, %y) {kind = "sub"} : (tensor<256x10xf32>, tensor<256x10xf32>) -> tensor<256x10xf32>
  %inv_batch = arith.constant dense<0.00390625> : tensor<256x10xf32>
  %dlogits = "meta.binary"(%diff, %inv_batch) {kind = "mul"} : (tensor<256x10xf32>, tensor<256x10xf32>) -> tensor<256x10xf32>

  // Backward: db2 = sum_i dlogits, dW2 = h^T dlogits, dh = dlogits W2^T.
  %db2 = "meta.reindex_reduce"(%dlogits) {kind = "add", indices = affine_map<(i, j) -> (j)>} : (tensor<256x10xf32>) -> tensor<10xf32>
  %hT = "meta.reindex"(%h) {indices = affine_map<(k, j, i) -> (i, k)>} : (tensor<256x512xf32>) -> tensor<512x10x256xf32>
  %dlT = "meta.reindex"(%dlogits) {indices = affine_map<(k, j, i) -> (i, j)>} : (tensor<256x10xf32>) -> tensor<512x10x256xf32>
  %q2 = "meta.binary"(%hT, %dlT) {kind = "mul"} : (tensor<512x10x256xf32>, tensor<512x10x256xf32>) -> tensor<512x10x256xf32>
  %dw2 = "meta.reindex_reduce"(%q2) {kind = "add", indices = affine_map<(k, j, i) -> (k, j)>} : (tensor<512x10x256xf32>) -> tensor<512x10xf32>
  %dlb = "meta.reindex"(%dlogits) {indices = affine_map<(i, k, j) -> (i, j)>} : (tensor<256x10xf32>) -> tensor<256x512x10xf32>
  %w2t = "meta.reindex"(%w2) {indices = affine_map<(i, k, j) -> (k, j)>} : (tensor<512x10xf32>) -> tensor<256x512x10xf32>
  %q3 = "meta.binary"(%dlb, %w2t) {kind = "mul"} : (tensor<256x512x10xf32>, tensor<256x512x10xf32>) -> tensor<256x512x10xf32>
  %dh = "meta.reindex_reduce"(%q3) {kind = "add", indices = affine_map<(i, k, j) -> (i, k)>} : (tensor<256x512x10xf32>) -> tensor<256x512xf32>

  // Backward through relu, then db1 = sum_i da1, dW1 = x^T da1.
  %active = "meta.binary"(%a1, %zeros) {kind = "gt"} : (tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xi1>
  %da1 = "meta.ternary"(%active, %dh, %zeros) {kind = "select"} : (tensor<256x512xi1>, tensor<256x512xf32>, tensor<256x512xf32>) -> tensor<256x512xf32>
  %db1 = "meta.reindex_reduce"(%da1) {kind = "add", indices = affine_map<(i, j) -> (j)>} : (tensor<256x512xf32>) -> tensor<512xf32>
  %xT = "meta.reindex"(%x) {indices = affine_map<(k, j, i) -> (i, k)>} : (tensor<256x784xf32>) -> tensor<784x512x256xf32>
  %daT = "meta.reindex"(%da1) {indices = affine_map<(k, j, i) -> (i, j)>} : (tensor<256x512xf32>) -> tensor<784x512x256xf32>
  %q1 = "meta.binary"(%xT, %daT) {kind = "mul"} : (tensor<784x512x256xf32>, tensor<784x512x256xf32>) -> tensor<784x512x256xf32>
  %dw1 = "meta.reindex_reduce"(%q1) {kind = "add", indices = affine_map<(k, j, i) -> (k, j)>} : (tensor<784x512x256xf32>) -> tensor<784x512xf32>

  // SGD: p - lr * dp.
  %lr_w1 = "meta.reindex"(%lr) {indices = affine_map<(k, j) -> ()>} : (tensor<f32>) -> tensor<784x512xf32>
  %s_w1 = "meta.binary"(%lr_w1, %dw1) {kind = "mul"} : (tensor<784x512xf32>, tensor<784x512xf32>) -> tensor<784x512xf32>
  %new_w1 = "meta.binary"(%w1, %s_w1) {kind = "sub"} : (tensor<784x512xf32>, tensor<784x512xf32>) -> tensor<784x512xf32>
  %lr_b1 = "meta.reindex"(%lr) {indices = affine_map<(j) -> ()>} : (tensor<f32>) -> tensor<512xf32>
  %s_b1 = "meta.binary"(%lr_b1, %db1) {kind = "mul"} : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
  %new_b1 = "meta.binary"(%b1, %s_b1) {kind = "sub"} : (tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32>
  %lr_w2 = "meta.reindex"(%lr) {indices = affine_map<(k, j) -> ()>} : (tensor<f32>) -> tensor<512x10xf32>
  %s_w2 = "meta.binary"(%lr_w2, %dw2) {kind = "mul"} : (tensor<512x10xf32>, tensor<512x10xf32>) -> tensor<512x10xf32>
  %new_w2 = "meta.binary"(%w2, %s_w2) {kind = "sub"} : (tensor<512x10xf32>, tensor<512x10xf32>) -> tensor<512x10xf32>
  %lr_b2 = "meta.reindex"(%lr) {indices = affine_map<(j) -> ()>} : (tensor<f32>) -> tensor<10xf32>
  %s_b2 = "meta.binary"(%lr_b2, %db2) {kind = "mul"} : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  %new_b2 = "meta.binary"(%b2, %s_b2) {kind = "sub"} : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  return %loss, %new_w1, %new_b1, %new_w2, %new_b2
      : tensor<f32>, tensor<784x512xf32>, tensor<512xf32>, tensor<512x10xf32>, tensor<10xf32>
}
