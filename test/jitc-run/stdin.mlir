// A module on standard input (`-`) is read once: `jitc bench` compiles it
// again to time the caches, and `jitc run --speculate` hands its text to
// the session, and each once read standard input a second time, found it
// empty and failed ("no function @main: the module is empty").
// RUN: jitc bench - --input 4xf32=1 --repetitions 1 --warmup 0 < %s | FileCheck %s --check-prefix=BENCH
// BENCH: function: @main (cpu backend)
// BENCH: compile: {{.*}} cold; from the cache
// RUN: rm -f %t.json
// RUN: jitc run - --input 4xf32=1 --profile-out %t.json < %s | FileCheck %s --check-prefix=OUT
// RUN: jitc run - --input 4xf32=1 --speculate %t.json < %s 2>&1 | FileCheck %s --check-prefix=OUT
// RUN: not jitc run - --input 4xf32=1 < /dev/null 2>&1 | FileCheck %s --check-prefix=EMPTY
// OUT-NOT: error
// OUT: result[0]: 4xf32=2 2 2 2
// EMPTY: jitc run: error: no function @main: the module is empty
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "meta.binary"(%x, %x) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
