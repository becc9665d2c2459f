// `jitc compile --timings` reports each phase's wall-clock time on
// standard error, in the order the phases end, then the time no phase
// accounts for and the total; the output itself is unchanged.
// RUN: jitc compile %examples/softmax.mlir --emit obj -o %t.o --timings 2> %t.err
// RUN: FileCheck %s < %t.err
// RUN: jitc compile %examples/softmax.mlir --emit obj -o %t.plain.o
// RUN: cmp %t.o %t.plain.o
// RUN: jitc compile %examples/softmax.mlir --emit mlir --timings 2>&1 >/dev/null | FileCheck %s --check-prefix=MLIR

// CHECK: jitc compile: timings (wall clock)
// CHECK-NEXT: {{ +[0-9]+\.[0-9]{3} ms +[0-9]+\.[0-9]%}}  parse and verify
// CHECK-NEXT: ms {{.*}}%  fuse
// CHECK-NEXT: ms {{.*}}%  merge equal kernels
// CHECK-NEXT: ms {{.*}}%  contraction epilogues
// CHECK-NEXT: ms {{.*}}%  row chains
// CHECK-NEXT: ms {{.*}}%  merge equal kernels
// CHECK-NEXT: ms {{.*}}%  lower kernels
// CHECK-NEXT: ms {{.*}}%  convert to the LLVM dialect
// CHECK-NEXT: ms {{.*}}%  translate to LLVM IR
// CHECK-NEXT: ms {{.*}}%  LLVM default<O3>
// CHECK-NEXT: ms {{.*}}%  machine code
// CHECK-NEXT: ms {{.*}}%  other (reading, printing)
// CHECK-NEXT: ms 100.0%  total

// The lowered MLIR stops after lowering.
// MLIR: lower kernels
// MLIR-NOT: LLVM
// MLIR: total

// The GPU target reports its own lowering and LLVM phases (the example's
// rows are too few for a GPU row chain, but the phase looks for them).
// RUN: jitc compile %examples/softmax.mlir --target nvptx --emit ptx --timings 2>&1 >/dev/null | FileCheck %s --check-prefix=GPU
// GPU: parse and verify
// GPU-NEXT: fuse
// GPU-NEXT: merge equal kernels
// GPU-NEXT: row chains
// GPU-NEXT: merge equal kernels
// GPU-NEXT: lower kernels
// GPU-NEXT: convert to the LLVM dialect
// GPU-NEXT: translate to LLVM IR
// GPU-NEXT: LLVM default<O3>
// GPU-NEXT: print LLVM IR
// GPU-NEXT: machine code
// GPU-NEXT: other (reading, printing)
// GPU-NEXT: total
