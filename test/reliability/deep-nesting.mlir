// Deeply nested regions: parsing, passes, compilation and interpretation
// run on a worker thread with a 1 GiB stack, so 5,000 nested `scf.if`s
// (which overflow the stack of MLIR 22's own mlir-opt) work; past 10,000
// levels of brackets of any kind (here the 10,000th `scf.if`'s result
// type) the file is refused in one sentence before anything recurses.
// RUN: %python %S/Inputs/nested-ifs.py 5000 > %t.5000.mlir
// RUN: jitc opt %t.5000.mlir --meta-fuse | FileCheck %s --check-prefix=OPT
// OPT: call @main_fused_0
// OPT: func.func private @main_fused_0
// RUN: jitc run %t.5000.mlir --input i1=1 --input 4xf32=1 | FileCheck %s --check-prefix=DEEP
// DEEP: result[0]: 4xf32=-1 -1 -1 -1
//
// RUN: %python %S/Inputs/nested-ifs.py 10001 > %t.10001.mlir
// RUN: not jitc opt %t.10001.mlir 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not jitc run %t.10001.mlir --input i1=1 --input 4xf32=1 2>&1 | FileCheck %s --check-prefix=LIMIT
// LIMIT: error: '{{.*}}10001.mlir' nests more than 10000 levels deep at line 10000; jitc reads at most 10000 levels of brackets
// LIMIT-NOT: overflowed
//
// Parentheses count too: 3,000,000 of them in an affine map overflowed
// even the worker's stack in MLIR's expression parser.
// RUN: %python -c "n = 3000000; print('#map = affine_map<(d0) -> (' + '(' * n + 'd0' + ')' * n + ')>')" > %t.parens.mlir
// RUN: not jitc opt %t.parens.mlir 2>&1 | FileCheck %s --check-prefix=PARENS
// PARENS: error: '{{.*}}parens.mlir' nests more than 10000 levels deep at line 1; jitc reads at most 10000 levels of brackets
