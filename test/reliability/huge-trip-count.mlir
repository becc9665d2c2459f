// A profile that saw a loop run 10^9 times: meta-specialize does not mark
// it for unrolling (meta-unroll would refuse a loop that large, so the
// trip count would be an assumption nothing guards), and `jitc run
// --speculate` reports no such assumption.
// RUN: rm -f %t.json
// RUN: jitc run %s --backend interp --input 4xf32=1 --input index=3 --profile-out %t.json
// RUN: %python -c "import json, sys; p = json.load(open(sys.argv[1])); [s.update(trips=1000000000) for s in p['sites'].values()]; json.dump(p, open(sys.argv[1], 'w'))" %t.json
// RUN: jitc opt %s --meta-specialize=profile=%t.json | FileCheck %s
// CHECK-NOT: meta.unroll
// CHECK: scf.for
// RUN: jitc run %s --speculate %t.json --input 4xf32=1 --input index=3 2>&1 | FileCheck %s --check-prefix=SPEC
// SPEC-NOT: trip count
// SPEC: {{^}}result[0]: 4xf32=
func.func @main(%x: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> tensor<4xf32> {
    %t = "meta.unary"(%a) {kind = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %t : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
