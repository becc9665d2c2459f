// The bundled examples parse, verify and survive jitc's cleanup passes.
// RUN: jitc opt %examples/conv.mlir --meta-cse --meta-dce | FileCheck %s --check-prefix=CONV
// RUN: jitc opt %examples/sigmoid.mlir --meta-cse --meta-dce | FileCheck %s --check-prefix=SIGMOID

// CONV-LABEL: func.func @main
// CONV-COUNT-2: "meta.reindex"
// CONV: "meta.binary"{{.*}}kind = "mul"
// CONV: "meta.reindex_reduce"{{.*}}kind = "add"

// SIGMOID-LABEL: func.func @main
// SIGMOID-COUNT-1: kind = "exp"
// SIGMOID-NOT: kind = "exp"
