// LLVM's command-line conventions beyond the single dash: a switch takes
// `=true`/`=false`/`=1`/`=0`, `-p` is `-pass-pipeline`, and the printing
// flags -mlir-pretty-debuginfo and -mlir-elide-elementsattrs-if-larger
// print as the system's mlir-opt 22 prints.
// RUN: jitc opt %s -allow-unregistered-dialect=true -verify-each=1 -mlir-disable-threading=0 -canonicalize > %t.jitc1
// RUN: %mlir_opt %s -allow-unregistered-dialect=true -verify-each=1 -mlir-disable-threading=0 -canonicalize > %t.mlir1
// RUN: diff %t.jitc1 %t.mlir1
// RUN: not jitc opt %s -allow-unregistered-dialect=false 2>&1 | FileCheck %s --check-prefix=OFF
// RUN: jitc opt %s -allow-unregistered-dialect -p 'builtin.module(func.func(canonicalize))' -mlir-elide-elementsattrs-if-larger=2 > %t.jitc2
// RUN: %mlir_opt %s -allow-unregistered-dialect -p 'builtin.module(func.func(canonicalize))' -mlir-elide-elementsattrs-if-larger=2 > %t.mlir2
// RUN: diff %t.jitc2 %t.mlir2
// RUN: FileCheck %s --check-prefix=ELIDED --input-file %t.jitc2
// RUN: jitc opt %s -allow-unregistered-dialect -mlir-print-debuginfo -mlir-pretty-debuginfo > %t.jitc3
// RUN: %mlir_opt %s -allow-unregistered-dialect -mlir-print-debuginfo -mlir-pretty-debuginfo > %t.mlir3
// RUN: diff %t.jitc3 %t.mlir3
// RUN: FileCheck %s --check-prefix=PRETTY --input-file %t.jitc3
// -split-input-file=<marker> splits at another marker, and
// -output-split-marker= joins the outputs with another line (or none).
// RUN: jitc opt %S/Inputs/split-marker.mlir -split-input-file='#-----' -output-split-marker='// == next' > %t.jitc4 2>&1
// RUN: %mlir_opt %S/Inputs/split-marker.mlir -split-input-file='#-----' -output-split-marker='// == next' > %t.mlir4 2>&1
// RUN: diff %t.jitc4 %t.mlir4
// RUN: FileCheck %s --check-prefix=MARKER --input-file %t.jitc4
// RUN: jitc opt %S/Inputs/split-marker.mlir -split-input-file='#-----' -output-split-marker= > %t.jitc5 2>&1
// RUN: %mlir_opt %S/Inputs/split-marker.mlir -split-input-file='#-----' -output-split-marker= > %t.mlir5 2>&1
// RUN: diff %t.jitc5 %t.mlir5
// RUN: not jitc opt %s -split-input-file=ab 2>&1 | FileCheck %s --check-prefix=SHORT
// A flag that is no flag is named whole, with the dashes it will be
// known by, and a switch's value must read as true or false.
// RUN: not jitc opt %s -test-bogus 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not jitc opt %s -allow-unregistered-dialect=maybe 2>&1 | FileCheck %s --check-prefix=VALUE

// OFF: please use -allow-unregistered-dialect
// ELIDED: dense_resource<__elided__>
// PRETTY: "test.op"(%{{.*}}) : (i32) -> () {{.*}}mlir-opt-flag-values.mlir:
// MARKER: warning: near miss with file split marker
// MARKER: func.func @first
// MARKER-NEXT: return
// MARKER-NEXT: }
// MARKER-NEXT: }
// MARKER-EMPTY:
// MARKER-NEXT: // == next
// MARKER: func.func @second
// SHORT: jitc opt: error: --split-input-file: the split marker 'ab' is too short
// UNKNOWN: error: unexpected argument '--test-bogus' found
// VALUE: error: unexpected value 'maybe' for '--allow-unregistered-dialect'

func.func @f(%a: i32) -> tensor<4xf32> {
  %c0 = arith.constant 0 : i32
  %b = arith.addi %a, %c0 : i32
  "test.op"(%b) : (i32) -> ()
  %t = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  return %t : tensor<4xf32>
}
