"""Writes a module for the fuser's size limits (fuse-limits.mlir).

Usage: python long-chain.py chain N     # N binary ops on a 1024-float vector,
                                        # each with a scalar argument of its
                                        # own (what the Python package records
                                        # for `y = y * 1.5 + 0.5 ...`)
       python long-chain.py kernel N    # a hand-written kernel that adds N
                                        # arguments, and @main calling it
"""
import sys

mode, n = sys.argv[1], int(sys.argv[2])
vector = "tensor<1024xf32>"
if mode == "chain":
    scalars = ", ".join(f"%a{i}: tensor<f32>" for i in range(n))
    print(f"func.func @main(%x: {vector}, {scalars}) -> {vector} {{")
    previous = "%x"
    for i in range(n):
        kind = ("add", "mul", "sub")[i % 3]
        print(f'  %b{i} = "meta.reindex"(%a{i}) {{indices = affine_map<(d0) -> ()>}} : (tensor<f32>) -> {vector}')
        print(f'  %v{i} = "meta.binary"({previous}, %b{i}) {{kind = "{kind}"}} : ({vector}, {vector}) -> {vector}')
        previous = f"%v{i}"
    print(f"  return {previous} : {vector}")
    print("}")
elif mode == "kernel":
    arguments = ", ".join(f"%a{i}: {vector}" for i in range(n))
    names = ", ".join(f"%a{i}" for i in range(n))
    types = ", ".join([vector] * n)
    print(f"func.func @main({arguments}) -> {vector} {{")
    print(f"  %y = call @sum_fused_0({names}) : ({types}) -> {vector}")
    print(f"  return %y : {vector}")
    print("}")
    print(f"func.func private @sum_fused_0({arguments}) -> {vector} attributes {{meta.domain = array<i64: 1024>, meta.fused}} {{")
    previous = "%a0"
    for i in range(1, n):
        print(f'  %s{i} = "meta.binary"({previous}, %a{i}) {{kind = "add"}} : ({vector}, {vector}) -> {vector}')
        previous = f"%s{i}"
    print(f"  return {previous} : {vector}")
    print("}")
else:
    sys.exit(f"unknown mode {mode!r}: chain or kernel")
