// A `--speculate` run whose guard fails writes the relaxed profile back, so
// the next process does not specialize on the broken fact again.
// RUN: rm -f %t.json
// RUN: jitc run %examples/indrnn.mlir --input 4x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --profile-out %t.json --print-max-elements 0
// RUN: jitc run %examples/indrnn.mlir --input 3x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --speculate %t.json --print-max-elements 0 2>&1 | FileCheck %s --check-prefix=FIRST
// FIRST: guard 1 failed (shape(%arg0)[0] == 4, site @main(%arg0))
// FIRST: jitc run: note: a guard failed; the relaxed profile is written back to {{.*}}.json
//
// RUN: FileCheck %s --check-prefix=PROFILE < %t.json
// PROFILE: "shape": [
// PROFILE-NEXT: null,
// PROFILE-NEXT: 16,
// PROFILE-NEXT: 64
//
// The next process specializes on the relaxed profile: no guard fails.
// RUN: jitc run %examples/indrnn.mlir --input 3x16x64xf32=0.1 --input 64x64xf32=0.01 --input 64xf32=0.5 --state rnn.h=16x64xf32=0 --speculate %t.json --print-max-elements 0 2>&1 | FileCheck %s --check-prefix=NEXT
// NEXT: compiled a specialized executable
// NEXT-NOT: failed
// NEXT-NOT: written back
