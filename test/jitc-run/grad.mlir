// Gradient functions made by `meta-grad` run, on the CPU and in the
// interpreter, with the values the rules promise.
// RUN: jitc opt %s --meta-grad | jitc run - --function main_grad --input "4x4xf32=1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16" --input "4xf32=1 3 3 2" | FileCheck %s
// RUN: jitc opt %s --meta-grad | jitc run - --backend interp --function main_grad --input "4x4xf32=1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16" --input "4xf32=1 3 3 2" | FileCheck %s

// loss = sum(pad(x)) + max(v): the pad's border (overflow value 1, 24
// elements) and x's last row (dropped by the overflow condition) give no
// gradient; max's two tied elements share it.
// CHECK: result[0]: f32=105
// CHECK-NEXT: result[1]: 4x4xf32=[1 1 1 1][1 1 1 1][1 1 1 1][0 0 0 0]
// CHECK-NEXT: result[2]: 4xf32=0 0.5 0.5 0
func.func @main(%x: tensor<4x4xf32>, %v: tensor<4xf32>) -> tensor<f32> {
  %p = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d0 - 1, d1 - 1)>, overflow_value = 1.0 : f32, overflow_conditions = [affine_set<(d0, d1) : (d0 - 4 >= 0)>]} : (tensor<4x4xf32>) -> tensor<6x6xf32>
  %s = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(d0, d1) -> ()>} : (tensor<6x6xf32>) -> tensor<f32>
  %m = "meta.reindex_reduce"(%v) {kind = "max", indices = affine_map<(d0) -> ()>} : (tensor<4xf32>) -> tensor<f32>
  %l = "meta.binary"(%s, %m) {kind = "add"} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
