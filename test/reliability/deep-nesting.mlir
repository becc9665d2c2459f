// Deeply nested regions: parsing, passes, compilation and interpretation
// run on a worker thread with a 1 GiB stack, so 9,997 nested `scf.if`s,
// the most the limit admits, work (5,000 overflow the stack of MLIR 22's
// own mlir-opt); past 10,000
// levels of brackets of any kind (here the types of the op inside the
// 9,998th `scf.if`) the file is refused in one sentence before anything recurses.
// RUN: %python %S/Inputs/nested-ifs.py 9997 > %t.9997.mlir
// RUN: jitc opt %t.9997.mlir --meta-fuse | FileCheck %s --check-prefix=OPT
// OPT: call @main_fused_0
// OPT: func.func private @main_fused_0
// RUN: jitc run %t.9997.mlir --input i1=1 --input 4xf32=1 | FileCheck %s --check-prefix=DEEP
// DEEP: result[0]: 4xf32=-1 -1 -1 -1
//
// RUN: %python %S/Inputs/nested-ifs.py 9998 > %t.9998.mlir
// RUN: not jitc opt %t.9998.mlir 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not jitc run %t.9998.mlir --input i1=1 --input 4xf32=1 2>&1 | FileCheck %s --check-prefix=LIMIT
// LIMIT: error: '{{.*}}9998.mlir' nests more than 10000 levels deep at line 10000; jitc reads at most 10000 levels of brackets
// LIMIT-NOT: overflowed
//
// Parentheses count too: 3,000,000 of them in an affine map overflowed
// even the worker's stack in MLIR's expression parser.
// RUN: %python -c "n = 3000000; print('#map = affine_map<(d0) -> (' + '(' * n + 'd0' + ')' * n + ')>')" > %t.parens.mlir
// RUN: not jitc opt %t.parens.mlir 2>&1 | FileCheck %s --check-prefix=PARENS
// PARENS: error: '{{.*}}parens.mlir' nests more than 10000 levels deep at line 1; jitc reads at most 10000 levels of brackets
//
// Where the worker's stack cannot be reserved (here a 1.2 GB address-space
// limit), jitc says so, runs on the main thread, and lowers the limit to
// what that stack holds.
// RUN: not bash -c 'ulimit -v 1200000 && exec jitc run "$0" --input i1=1 --input 4xf32=1' %t.9997.mlir 2>&1 | FileCheck %s --check-prefix=SMALL
// SMALL: jitc: note: cannot reserve a 1024 MiB stack ({{.*}}); files nested more than 200 levels deep are refused
// SMALL: error: '{{.*}}9997.mlir' nests more than 200 levels deep at line 200
// RUN: %python %S/Inputs/nested-ifs.py 100 > %t.100.mlir
// RUN: bash -c 'ulimit -v 1200000 && exec jitc run "$0" --input i1=1 --input 4xf32=1' %t.100.mlir 2>&1 | FileCheck %s --check-prefix=SHALLOW
// SHALLOW: jitc: note: cannot reserve a 1024 MiB stack
// SHALLOW: result[0]: 4xf32=-1 -1 -1 -1
