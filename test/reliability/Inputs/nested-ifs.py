"""Prints a function of N nested `scf.if`s (N from argv), the innermost
negating its argument: `jitc run` returns -x when the condition holds."""
import sys

depth = int(sys.argv[1])
lines = ["func.func @main(%c: i1, %x: tensor<4xf32>) -> tensor<4xf32> {"]
for level in range(depth):
    lines.append(f"%r{level} = scf.if %c -> (tensor<4xf32>) {{")
lines.append('%y = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4xf32>')
lines.append("scf.yield %y : tensor<4xf32>")
for level in reversed(range(depth)):
    lines += ["} else {", "scf.yield %x : tensor<4xf32>", "}"]
    if level > 0:
        lines.append(f"scf.yield %r{level} : tensor<4xf32>")
lines += ["return %r0 : tensor<4xf32>", "}"]
print("\n".join(lines))
