// Bad flags and pipelines are reported before any input is read; exit 1.

// RUN: not jitc opt %s --no-such-flag 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: error: unexpected argument '--no-such-flag' found

// RUN: not jitc opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=PASS
// PASS: jitc opt: error: invalid pass pipeline: {{.*}}'no-such-pass' does not refer to a registered pass

// RUN: not jitc opt %s --pass-pipeline='func.func(cse)' 2>&1 | FileCheck %s --check-prefix=ANCHOR
// ANCHOR: jitc opt: error: invalid pass pipeline: the pipeline must be anchored on 'builtin.module', not 'func.func'

// RUN: not jitc opt %s --pass-pipeline='builtin.module(cse' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: jitc opt: error: invalid pass pipeline: expected ',' or ')'

// RUN: not jitc opt %s --meta-dce=fanout=3 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: jitc opt: error: invalid pass pipeline: pass 'meta-dce' has no option 'fanout'; it takes no options

// RUN: not jitc opt %s --meta-dce --pass-pipeline='builtin.module(cse)' 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: jitc opt: error: --pass-pipeline cannot be combined with individual pass flags

// RUN: not jitc frobnicate 2>&1 | FileCheck %s --check-prefix=SUBCOMMAND
// SUBCOMMAND: error: unrecognized subcommand 'frobnicate'

func.func @f() {
  return
}
