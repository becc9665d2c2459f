// Contractions (schedule rule 6): a sum of products of two reindexed
// operands runs as register tiles. Matmul's tile is rows of i by vectors
// of j, each accumulator a vector carried through the k loop: one vector
// load of B per step serves every row, one broadcast of A every vector.
// The last vector of a row is masked (40 columns), as are the loads of a
// convolution's padding, which read the overflow value.
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 | FileCheck %s --check-prefix=MLIR
// RUN: jitc compile %s --emit mlir --cpu x86-64-v3 | FileCheck %s --check-prefix=AVX2
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 --math exact | FileCheck %s --check-prefix=EXACT
// RUN: jitc compile %s --emit asm --cpu x86-64-v4 | FileCheck %s --check-prefix=ASM
// RUN: jitc compile %s --emit asm --cpu x86-64-v3 | FileCheck %s --check-prefix=ASM2
// RUN: jitc explain %s | FileCheck %s --check-prefix=EXPLAIN
// RUN: jitc explain %s --function conv | FileCheck %s --check-prefix=ONE
// RUN: jitc explain %s --function twin | FileCheck %s --check-prefix=TWIN
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 | FileCheck %s --check-prefix=DOT
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 | FileCheck %s --check-prefix=GATHER
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 --math exact | FileCheck %s --check-prefix=GATHER-EXACT
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 | FileCheck %s --check-prefix=PACK
// RUN: jitc compile %s --emit mlir --cpu x86-64-v4 --math exact | FileCheck %s --check-prefix=NODOT

// 512-bit vectors: 16 lanes; 40 columns take 3 vectors, which leaves
// registers for 8 rows. The accumulators are carried by the k loop.
// MLIR-LABEL: func.func @main_fused_0(
// MLIR: scf.for {{.*}} step %c48
// MLIR: scf.for {{.*}} step %c8
// MLIR: scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>
// MLIR: llvm.intr.masked.load {{.*}} -> vector<16xf32>
// MLIR: llvm.shufflevector
// MLIR: math.fma {{.*}} : vector<16xf32>
// MLIR: llvm.intr.masked.store
// The convolution: x's padded indices make per-lane masks.
// MLIR-LABEL: func.func @conv_fused_0(
// MLIR: arith.cmpi sge, {{.*}} : vector<16xi64>
// MLIR: arith.cmpi slt, {{.*}} : vector<16xi64>
// MLIR: llvm.intr.masked.load
// MLIR: math.fma

// 256-bit vectors: 8 lanes, two per row.
// AVX2-LABEL: func.func @main_fused_0(
// AVX2: scf.for {{.*}} step %c16
// AVX2: math.fma {{.*}} : vector<8xf32>

// Exact math: a multiply, then an add, in the interpreter's order.
// EXACT-LABEL: func.func @main_fused_0(
// EXACT-NOT: math.fma
// EXACT: arith.mulf {{.*}} : vector<16xf32>
// EXACT: arith.addf {{.*}} : vector<16xf32>

// The micro-kernel's FMAs, on zmm registers with AVX-512 and ymm with
// AVX2.
// ASM-LABEL: main_fused_0:
// ASM: vfmadd{{.*}}%zmm
// ASM2-LABEL: main_fused_0:
// ASM2: vfmadd{{.*}}%ymm

// EXPLAIN: contractions on the cpu backend (register tiles, schedule rule 6):
// EXPLAIN-NEXT: @main_fused_0: rows d0 x vector d1, tiles of {{[0-9]+}} x {{[0-9]+}} ({{.*}}), folding d2
// Fast math folds the window (d5, d6), which the padding checks read,
// outside the input channels (d4); exact math keeps the domain's order.
// EXPLAIN-NEXT: @conv_fused_0: rows d1 x vector d3, tiles of {{.*}}, folding d5, d6, d4 inside loops over d0, d2
// EXPLAIN-NEXT: @packed_fused_0: rows d0 x vector d1, {{.*}}, folding d2, packed in blocks of 256
// EXPLAIN-NEXT: @nt_fused_0: rows d0 x vector d1, {{.*}}, folding d2, d1 gathered into packed blocks of 256
// EXPLAIN-NEXT: @two_folds_fused_0: dot form: rows d0 x columns d1 in tiles of {{[0-9]+}} x {{[0-9]+}}, summing {{[0-9]+}}-lane vectors along d3 inside d2
// ONE: contractions on the cpu backend
// ONE-NOT: @main_fused_0
// ONE: @conv_fused_0

// A fold of 512 steps or more packs B: one block of 256 rows at a time is
// copied into a 64-byte aligned stack buffer, which the tiles read with
// aligned loads; each block after the first goes on from the output.
// PACK-LABEL: func.func @packed_fused_0(
// PACK: llvm.alloca {{.*}} {alignment = 64 : i64} : (i64) -> !llvm.ptr
// PACK: scf.for {{.*}} step %c256
// PACK: llvm.store {{.*}} {alignment = 64 : i64} : vector<16xf32>, !llvm.ptr
// PACK: arith.select {{.*}} : vector<16xf32>
// PACK: llvm.load {{.*}} {alignment = 64 : i64} : !llvm.ptr -> vector<16xf32>
// PACK: math.fma

// A transposed operand (B read as B[j, k]) is strided along j: it is
// gathered lane by lane into the packed panel (each lane's steps in
// order), which the tiles read as usual, in either math mode.
// GATHER-LABEL: func.func @nt_fused_0(
// GATHER: llvm.alloca
// GATHER: scf.for {{.*}} step %c256
// GATHER: scf.for
// GATHER: scf.for
// GATHER: llvm.load {{.*}} : !llvm.ptr -> f32
// GATHER: llvm.store {{.*}} : f32, !llvm.ptr
// GATHER: math.fma {{.*}} : vector<16xf32>
// GATHER-EXACT-LABEL: func.func @nt_fused_0(
// GATHER-EXACT: llvm.alloca
// GATHER-EXACT: arith.mulf {{.*}} : vector<16xf32>

// Over a fold of two dimensions, a strided operand is not gathered;
// under fast math the dot form sums each output's products in a vector
// along the last fold, both operands contiguous in it, masked past its
// end (40 = 2 x 16 + 8), and adds the vector up at the end; exact math
// keeps the loop nest.
// DOT-LABEL: func.func @two_folds_fused_0(
// DOT: scf.for {{.*}} step %c16{{.*}} iter_args
// DOT: math.fma {{.*}} : vector<16xf32>
// DOT: llvm.intr.masked.load
// DOT: arith.select {{.*}} : vector<16xi1>, vector<16xf32>
// DOT: llvm.intr.vector.reduce.fadd{{.*}}fastmath<reassoc>
// NODOT-LABEL: func.func @two_folds_fused_0(
// NODOT-NOT: vector<16xf32>
// NODOT: return

func.func @main(%a: tensor<32x24xf32>, %b: tensor<24x40xf32>) -> tensor<32x40xf32> {
  %aa = "meta.reindex"(%a) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<32x24xf32>) -> tensor<32x40x24xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<24x40xf32>) -> tensor<32x40x24xf32>
  %p = "meta.binary"(%aa, %bb) {kind = "mul"} : (tensor<32x40x24xf32>, tensor<32x40x24xf32>) -> tensor<32x40x24xf32>
  %c = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
       : (tensor<32x40x24xf32>) -> tensor<32x40xf32>
  return %c : tensor<32x40xf32>
}

func.func @conv(%x: tensor<1x4x12x20xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x12x20xf32> {
  %xx = "meta.reindex"(%x) {
          indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, i, h + kh - 1, w + kw - 1)>,
          overflow_value = 0.0 : f32}
        : (tensor<1x4x12x20xf32>) -> tensor<1x8x12x20x4x3x3xf32>
  %ww = "meta.reindex"(%w) {indices = affine_map<(n, o, h, w, i, kh, kw) -> (o, i, kh, kw)>}
        : (tensor<8x4x3x3xf32>) -> tensor<1x8x12x20x4x3x3xf32>
  %yy = "meta.binary"(%xx, %ww) {kind = "mul"}
        : (tensor<1x8x12x20x4x3x3xf32>, tensor<1x8x12x20x4x3x3xf32>) -> tensor<1x8x12x20x4x3x3xf32>
  %y = "meta.reindex_reduce"(%yy) {kind = "add", indices = affine_map<(n, o, h, w, i, kh, kw) -> (n, o, h, w)>}
       : (tensor<1x8x12x20x4x3x3xf32>) -> tensor<1x8x12x20xf32>
  return %y : tensor<1x8x12x20xf32>
}

func.func @packed(%a: tensor<8x600xf32>, %b: tensor<600x64xf32>) -> tensor<8x64xf32> {
  %aa = "meta.reindex"(%a) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<8x600xf32>) -> tensor<8x64x600xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<600x64xf32>) -> tensor<8x64x600xf32>
  %p = "meta.binary"(%aa, %bb) {kind = "mul"} : (tensor<8x64x600xf32>, tensor<8x64x600xf32>) -> tensor<8x64x600xf32>
  %c = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
       : (tensor<8x64x600xf32>) -> tensor<8x64xf32>
  return %c : tensor<8x64xf32>
}

func.func @nt(%a: tensor<12x40xf32>, %b: tensor<20x40xf32>) -> tensor<12x20xf32> {
  %aa = "meta.reindex"(%a) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<12x40xf32>) -> tensor<12x20x40xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k) -> (j, k)>} : (tensor<20x40xf32>) -> tensor<12x20x40xf32>
  %p = "meta.binary"(%aa, %bb) {kind = "mul"} : (tensor<12x20x40xf32>, tensor<12x20x40xf32>) -> tensor<12x20x40xf32>
  %c = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
       : (tensor<12x20x40xf32>) -> tensor<12x20xf32>
  return %c : tensor<12x20xf32>
}

func.func @two_folds(%a: tensor<12x2x40xf32>, %b: tensor<20x2x40xf32>) -> tensor<12x20xf32> {
  %aa = "meta.reindex"(%a) {indices = affine_map<(i, j, k, l) -> (i, k, l)>} : (tensor<12x2x40xf32>) -> tensor<12x20x2x40xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k, l) -> (j, k, l)>} : (tensor<20x2x40xf32>) -> tensor<12x20x2x40xf32>
  %p = "meta.binary"(%aa, %bb) {kind = "mul"} : (tensor<12x20x2x40xf32>, tensor<12x20x2x40xf32>) -> tensor<12x20x2x40xf32>
  %c = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k, l) -> (i, j)>}
       : (tensor<12x20x2x40xf32>) -> tensor<12x20xf32>
  return %c : tensor<12x20xf32>
}

// The same matmul in another function: its kernel is merged with @main's
// (equal kernels compile once), and `explain --function twin` still lists
// it, found by its call, not by its name.
// TWIN: contractions on the cpu backend
// TWIN-NEXT: @main_fused_0: rows d0 x vector d1
// TWIN-NOT: @conv_fused_0
func.func @twin(%a: tensor<32x24xf32>, %b: tensor<24x40xf32>) -> tensor<32x40xf32> {
  %aa = "meta.reindex"(%a) {indices = affine_map<(i, j, k) -> (i, k)>} : (tensor<32x24xf32>) -> tensor<32x40x24xf32>
  %bb = "meta.reindex"(%b) {indices = affine_map<(i, j, k) -> (k, j)>} : (tensor<24x40xf32>) -> tensor<32x40x24xf32>
  %p = "meta.binary"(%aa, %bb) {kind = "mul"} : (tensor<32x40x24xf32>, tensor<32x40x24xf32>) -> tensor<32x40x24xf32>
  %c = "meta.reindex_reduce"(%p) {kind = "add", indices = affine_map<(i, j, k) -> (i, j)>}
       : (tensor<32x40x24xf32>) -> tensor<32x40xf32>
  return %c : tensor<32x40xf32>
}
