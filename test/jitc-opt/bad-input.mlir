// Malformed input gives a located diagnostic and exit code 1, never a crash
// (`not` fails on a crash).

// RUN: not jitc opt %S/Inputs/syntax-error.mlir 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: syntax-error.mlir:1:19: error: expected non-function type

// RUN: not jitc opt %S/Inputs/unknown-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: unknown-op.mlir:2:3: error: unregistered operation 'meta.fuse' found in dialect ('meta')

// RUN: not jitc opt %S/Inputs/unknown-dialect.mlir 2>&1 | FileCheck %s --check-prefix=DIALECT
// DIALECT: unknown-dialect.mlir:2:3: error: Dialect `frob' not found for custom op 'frob.op'

// RUN: not jitc opt %S/Inputs/wrong-attribute.mlir 2>&1 | FileCheck %s --check-prefix=ATTR
// ATTR: wrong-attribute.mlir:2:8: error: expected base attribute 'builtin.string' but got 'builtin.integer'

// RUN: not jitc opt %S/Inputs/missing-attribute.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: missing-attribute.mlir:2:8: error: 'meta.reindex' op attribute "indices" is expected but not provided

// RUN: not jitc opt %S/Inputs/rank-mismatch.mlir 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: rank-mismatch.mlir:2:8: error: 'meta.reindex' op indices map has 2 results but the input has rank 1

// RUN: printf '' > %t.empty.mlir
// RUN: not jitc opt %t.empty.mlir 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: empty.mlir:1:1: error: the input is empty; expected MLIR operations

// RUN: printf '\x7fELF\x02\x01\x01\x00\x00\xff\xfe\x80 binary' > %t.garbage.mlir
// RUN: not jitc opt %t.garbage.mlir 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: garbage.mlir:1:1: error: unexpected character

// RUN: not jitc opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: jitc opt: error: cannot read '{{.*}}does-not-exist.mlir': No such file or directory

// MLIR fails silently on custom syntax for IRDL ops; jitc says why.
// RUN: not jitc opt %S/Inputs/custom-syntax.mlir 2>&1 | FileCheck %s --check-prefix=CUSTOM
// CUSTOM: custom-syntax.mlir:2:8: error: 'meta.unary' must be written in the generic form "meta.unary"(...); meta ops have no custom syntax
