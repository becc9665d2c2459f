// A profile records each entry function's argument types; a profile
// recorded on another program is refused before anything runs, in one
// sentence, by `--speculate`, `--profile-out` and `meta-specialize`, and
// the file is left as it was.
// RUN: rm -f %t.json
// RUN: jitc run %examples/rnn.mlir --input 5x4x6xf32=0.1 --input 6x8xf32=0.2 --input 8x8xf32=0.3 --state rnn.h=4x8xf32=0 --profile-out %t.json > /dev/null
// RUN: cp %t.json %t.before.json
//
// RUN: not jitc run %examples/indrnn.mlir --input 4x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --speculate %t.json 2>&1 | FileCheck %s
// RUN: not jitc run %examples/indrnn.mlir --input 4x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --profile-out %t.json 2>&1 | FileCheck %s
// CHECK: jitc run: error: {{.*}}.json: the profile was recorded on another program: its @main takes (tensor<5x4x6xf32>, tensor<6x8xf32>, tensor<8x8xf32>) but this program's @main takes (tensor<?x16x64xf32>, tensor<64x64xf32>, tensor<64xf32>)
// CHECK-NOT: speculation
//
// RUN: not jitc opt %examples/indrnn.mlir --meta-specialize=profile=%t.json 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: error: meta-specialize: the profile was recorded on another program: its @main takes (tensor<5x4x6xf32>, tensor<6x8xf32>, tensor<8x8xf32>) but this program's @main takes (tensor<?x16x64xf32>, tensor<64x64xf32>, tensor<64xf32>)
//
// RUN: diff %t.json %t.before.json
//
// The same signature is not enough: the profile's sites must be branches,
// loops and calls of this program, of the kinds recorded. An edited
// program whose loop moved is refused before it runs (nothing on stdout),
// by each of the three, and the file is left as it was.
// RUN: sed '1i // an edit that moves every site down one line' %examples/rnn.mlir > %t.edited.mlir
// RUN: not jitc run %t.edited.mlir --input 5x4x6xf32=0.1 --input 6x8xf32=0.2 --input 8x8xf32=0.3 --state rnn.h=4x8xf32=0 --profile-out %t.json > %t.stdout 2> %t.stderr
// RUN: FileCheck %s --check-prefix=MOVED --input-file %t.stderr
// RUN: count 0 < %t.stdout
// RUN: not jitc run %t.edited.mlir --input 5x4x6xf32=0.1 --input 6x8xf32=0.2 --input 8x8xf32=0.3 --state rnn.h=4x8xf32=0 --speculate %t.json 2>&1 | FileCheck %s --check-prefix=MOVED
// RUN: not jitc opt %t.edited.mlir --meta-specialize=profile=%t.json 2>&1 | FileCheck %s --check-prefix=MOVED
// MOVED: error: {{.*}}the profile was recorded on another program: its site 11:8 is a loop but this program has no branch, loop or call there
// RUN: diff %t.json %t.before.json
//
// A site of another kind: the loop recorded as an scf.if.
// RUN: %python -c "import json, sys; p = json.load(open(sys.argv[1])); p['sites']['11:8'] = {'kind': 'if', 'then': 1, 'else': 0}; json.dump(p, open(sys.argv[2], 'w'))" %t.json %t.kind.json
// RUN: not jitc run %examples/rnn.mlir --input 5x4x6xf32=0.1 --input 6x8xf32=0.2 --input 8x8xf32=0.3 --state rnn.h=4x8xf32=0 --profile-out %t.kind.json 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: jitc run: error: {{.*}}kind.json: the profile was recorded on another program: its site 11:8 is an scf.if, but this program's op there is scf.for
// KIND-NOT: result
