// A use of a name that is not in scope, whose next definition is in
// another region (here: case 0 of a later scf.index_switch), followed by
// a parse error in that switch. MLIR 22's parser resolves the use to that
// definition, the switch's parser then frees its case regions with the
// value still used, and the clean-up writes into freed memory: the heap
// corruption the fuzz smoke hit for months (docs/fuzzing.md); upstream
// mlir-opt does it too (valgrind: "Invalid write of size 8" in
// Operation::dropAllReferences). jitc refuses such text before MLIR
// parses it, with the use's location, on every command that reads a
// module, and the Python package's parse too.
// RUN: not jitc opt %s 2>&1 | FileCheck %s
// RUN: not jitc run %s --input 0 2>&1 | FileCheck %s
// CHECK: forward-reference-across-regions.mlir:[[@LINE+9]]:15: error: '%x' is used where no definition of it is in scope (a use before its definition, or of a value defined inside another region)
// CHECK-NOT: custom op
func.func @main(%arg0: index) -> index {
  %0 = scf.index_switch %arg0 -> index
  case 0 {
    %x = arith.constant 1 : index
    scf.yield %x : index
  }
  default {
    scf.yield %x : index
  }
  %1 = scf.index_switch %arg0 -> index
  case 0 {
    %x = arith.constant 2 : index
    scf.yield %x : index
  }
  default {
    garbage here
  }
  return %0 : index
}
