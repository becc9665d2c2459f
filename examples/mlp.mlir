// A two-layer perceptron: y = relu(x W1 + b1) W2 + b2, with x (2x4),
// W1 (4x8), b1 (8), W2 (8x3), b2 (3). ReLU is a called function.
func.func @main(%x: tensor<2x4xf32>, %w1: tensor<4x8xf32>, %b1: tensor<8xf32>,
                %w2: tensor<8x3xf32>, %b2: tensor<3xf32>) -> tensor<2x3xf32> {
  %xb = "meta.reindex"(%x) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<2x4xf32>) -> tensor<2x8x4xf32>
  %w1b = "meta.reindex"(%w1) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<4x8xf32>) -> tensor<2x8x4xf32>
  %p1 = "meta.binary"(%xb, %w1b) {kind = "mul"} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %z1 = "meta.reindex_reduce"(%p1) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
        : (tensor<2x8x4xf32>) -> tensor<2x8xf32>
  %b1b = "meta.reindex"(%b1) {indices = affine_map<(i, j) -> (j)>} : (tensor<8xf32>) -> tensor<2x8xf32>
  %a1 = "meta.binary"(%z1, %b1b) {kind = "add"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %h = func.call @relu(%a1) : (tensor<2x8xf32>) -> tensor<2x8xf32>

  %hb = "meta.reindex"(%h) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<2x8xf32>) -> tensor<2x3x8xf32>
  %w2b = "meta.reindex"(%w2) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<8x3xf32>) -> tensor<2x3x8xf32>
  %p2 = "meta.binary"(%hb, %w2b) {kind = "mul"} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %z2 = "meta.reindex_reduce"(%p2) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
        : (tensor<2x3x8xf32>) -> tensor<2x3xf32>
  %b2b = "meta.reindex"(%b2) {indices = affine_map<(i, j) -> (j)>} : (tensor<3xf32>) -> tensor<2x3xf32>
  %y = "meta.binary"(%z2, %b2b) {kind = "add"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

func.func private @relu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %zeros = "meta.reindex"(%zero) {indices = affine_map<(i, j) -> ()>} : (tensor<f32>) -> tensor<2x8xf32>
  %y = "meta.binary"(%x, %zeros) {kind = "max"} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
