// The same hazard as forward-reference-across-regions.mlir, through uses
// a first version of the check did not see: a loop's bound and a carried
// value's initial value, each naming a value first defined in a later
// switch's case, whose parse then fails. MLIR resolves each use to that
// definition and frees it with the switch's regions (valgrind: "Invalid
// write of size 8" in Operation::dropAllReferences). jitc refuses the
// text first, at the first such use.
// RUN: not jitc opt %s 2>&1 | FileCheck %s
// CHECK: forward-reference-from-a-loop.mlir:[[@LINE+5]]:23: error: '%n' is used where no definition of it is in scope
// CHECK-NOT: custom op
func.func @main(%arg0: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
  }
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%a = %x) -> index {
    scf.yield %a : index
  }
  %1 = scf.index_switch %arg0 -> index
  case 0 {
    %n = arith.constant 2 : index
    %x = arith.constant 3 : index
    scf.yield %x : index
  }
  default {
    garbage here
  }
  return %r : index
}
