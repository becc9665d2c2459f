// Float min/max order -0 below +0 (docs/semantics.md), element-wise and as
// reductions, whether the fold accumulates in registers (@rows: the folded
// dimension innermost) or in memory (@cols), in f32 and f64: the cpu
// backend prints the interpreter's results under both math modes. A
// compare and select (what `arith-expand` makes of `arith.minimumf`) gets
// half of these wrong.
// x = [-0 0 -0 0][0 -0 0 -0], y = [0 -0 -0 0][-0 0 0 -0].

// RUN: jitc run %s --function rows --backend interp --input "2x4xf32=[-0 0 -0 0][0 -0 0 -0]" --input "2x4xf32=[0 -0 -0 0][-0 0 0 -0]" | FileCheck %s --check-prefix=ROWS
// RUN: jitc run %s --function rows --backend cpu --math exact --input "2x4xf32=[-0 0 -0 0][0 -0 0 -0]" --input "2x4xf32=[0 -0 -0 0][-0 0 0 -0]" | FileCheck %s --check-prefix=ROWS
// RUN: jitc run %s --function rows --backend cpu --math fast --input "2x4xf32=[-0 0 -0 0][0 -0 0 -0]" --input "2x4xf32=[0 -0 -0 0][-0 0 0 -0]" | FileCheck %s --check-prefix=ROWS
// ROWS: result[0]: 2x4xf32=[-0 -0 -0 0][-0 -0 0 -0]
// ROWS-NEXT: result[1]: 2x4xf32=[0 0 -0 0][0 0 0 -0]
// ROWS-NEXT: result[2]: 2xf32=-0 -0
// ROWS-NEXT: result[3]: 2xf32=0 0
func.func @rows(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>) {
  %min = "meta.binary"(%x, %y) {kind = "min"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %max = "meta.binary"(%x, %y) {kind = "max"} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %rmin = "meta.reindex_reduce"(%x) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<2x4xf32>) -> tensor<2xf32>
  %rmax = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<2x4xf32>) -> tensor<2xf32>
  return %min, %max, %rmin, %rmax : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>
}

// RUN: jitc run %s --function cols --backend interp --input "2x4xf32=[-0 0 -0 0][0 -0 0 -0]" | FileCheck %s --check-prefix=COLS
// RUN: jitc run %s --function cols --backend cpu --math exact --input "2x4xf32=[-0 0 -0 0][0 -0 0 -0]" | FileCheck %s --check-prefix=COLS
// RUN: jitc run %s --function cols --backend cpu --math fast --input "2x4xf32=[-0 0 -0 0][0 -0 0 -0]" | FileCheck %s --check-prefix=COLS
// COLS: result[0]: 4xf32=-0 -0 -0 -0
// COLS-NEXT: result[1]: 4xf32=0 0 0 0
func.func @cols(%x: tensor<2x4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %cmin = "meta.reindex_reduce"(%x) {kind = "min", indices = affine_map<(i, j) -> (j)>} : (tensor<2x4xf32>) -> tensor<4xf32>
  %cmax = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (j)>} : (tensor<2x4xf32>) -> tensor<4xf32>
  return %cmin, %cmax : tensor<4xf32>, tensor<4xf32>
}

// RUN: jitc run %s --function rows64 --backend interp --input "2x4xf64=[-0 0 -0 0][0 -0 0 -0]" --input "2x4xf64=[0 -0 -0 0][-0 0 0 -0]" | FileCheck %s --check-prefix=ROWS64
// RUN: jitc run %s --function rows64 --backend cpu --math exact --input "2x4xf64=[-0 0 -0 0][0 -0 0 -0]" --input "2x4xf64=[0 -0 -0 0][-0 0 0 -0]" | FileCheck %s --check-prefix=ROWS64
// RUN: jitc run %s --function rows64 --backend cpu --math fast --input "2x4xf64=[-0 0 -0 0][0 -0 0 -0]" --input "2x4xf64=[0 -0 -0 0][-0 0 0 -0]" | FileCheck %s --check-prefix=ROWS64
// ROWS64: result[0]: 2x4xf64=[-0 -0 -0 0][-0 -0 0 -0]
// ROWS64-NEXT: result[1]: 2x4xf64=[0 0 -0 0][0 0 0 -0]
// ROWS64-NEXT: result[2]: 2xf64=-0 -0
// ROWS64-NEXT: result[3]: 2xf64=0 0
func.func @rows64(%x: tensor<2x4xf64>, %y: tensor<2x4xf64>) -> (tensor<2x4xf64>, tensor<2x4xf64>, tensor<2xf64>, tensor<2xf64>) {
  %min = "meta.binary"(%x, %y) {kind = "min"} : (tensor<2x4xf64>, tensor<2x4xf64>) -> tensor<2x4xf64>
  %max = "meta.binary"(%x, %y) {kind = "max"} : (tensor<2x4xf64>, tensor<2x4xf64>) -> tensor<2x4xf64>
  %rmin = "meta.reindex_reduce"(%x) {kind = "min", indices = affine_map<(i, j) -> (i)>} : (tensor<2x4xf64>) -> tensor<2xf64>
  %rmax = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (i)>} : (tensor<2x4xf64>) -> tensor<2xf64>
  return %min, %max, %rmin, %rmax : tensor<2x4xf64>, tensor<2x4xf64>, tensor<2xf64>, tensor<2xf64>
}

// RUN: jitc run %s --function cols64 --backend interp --input "2x4xf64=[-0 0 -0 0][0 -0 0 -0]" | FileCheck %s --check-prefix=COLS64
// RUN: jitc run %s --function cols64 --backend cpu --math exact --input "2x4xf64=[-0 0 -0 0][0 -0 0 -0]" | FileCheck %s --check-prefix=COLS64
// RUN: jitc run %s --function cols64 --backend cpu --math fast --input "2x4xf64=[-0 0 -0 0][0 -0 0 -0]" | FileCheck %s --check-prefix=COLS64
// COLS64: result[0]: 4xf64=-0 -0 -0 -0
// COLS64-NEXT: result[1]: 4xf64=0 0 0 0
func.func @cols64(%x: tensor<2x4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %cmin = "meta.reindex_reduce"(%x) {kind = "min", indices = affine_map<(i, j) -> (j)>} : (tensor<2x4xf64>) -> tensor<4xf64>
  %cmax = "meta.reindex_reduce"(%x) {kind = "max", indices = affine_map<(i, j) -> (j)>} : (tensor<2x4xf64>) -> tensor<4xf64>
  return %cmin, %cmax : tensor<4xf64>, tensor<4xf64>
}
