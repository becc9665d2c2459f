// The fuser's size limits: a kernel holds at most `max-ops` ops (256) and
// takes at most `max-buffers` arguments and results (128). A chain of 300
// binary ops, each with a scalar argument of its own, is what the Python
// package records for a long loop of `y = y * 1.5 + 0.5`. As one kernel,
// its compile time grew faster than linearly with its length, and it took
// more parameters than a GPU kernel may have.
// RUN: %python %S/Inputs/long-chain.py chain 300 > %t.chain.mlir
// RUN: jitc opt %t.chain.mlir --meta-fuse | FileCheck %s --check-prefix=DEFAULT
// RUN: jitc opt %t.chain.mlir --meta-fuse=max-ops=100 | FileCheck %s --check-prefix=OPS
// RUN: jitc opt %t.chain.mlir --meta-fuse=max-buffers=50 | FileCheck %s --check-prefix=BUFFERS
// RUN: jitc explain %t.chain.mlir | FileCheck %s --check-prefix=EXPLAIN
// RUN: not jitc opt %t.chain.mlir --meta-fuse=max-ops=many 2>&1 | FileCheck %s --check-prefix=BAD

// 300 reindexes and 300 binary ops: 126 scalars, the vector and the result
// fill the first kernel's 128 buffers, after 252 ops.
// DEFAULT: call @main_fused_0({{.*}}%arg126) :
// DEFAULT-NEXT: call @main_fused_1(%arg127, %0,
// DEFAULT-NEXT: call @main_fused_2(%arg253, %1,
// DEFAULT-NEXT: return %2

// 100 ops: 50 scalars each.
// OPS: call @main_fused_0({{.*}}%arg50) :
// OPS-NEXT: call @main_fused_1(%arg51, %0,
// OPS-COUNT-4: call @main_fused_
// OPS-NEXT: return

// 48 scalars, the vector and the result.
// BUFFERS: call @main_fused_0({{.*}}%arg48) :
// BUFFERS-NEXT: call @main_fused_1(%arg49, %0,

// EXPLAIN: #251 meta.binary "sub" : tensor<1024xf32> -> #253 meta.binary "add" : tensor<1024xf32> (4096 bytes): size limit: the kernel would take more buffers than meta-fuse's max-buffers

// BAD: jitc opt: error: invalid pass pipeline: pass 'meta-fuse': option max-ops must be a whole number, got 'many'

// The limits keep a GPU kernel's parameters in CUDA's 4 KiB: a chain of
// 2,000 ops assembles (as one kernel, ptxas refused it: "uses too much
// parameter space").
// RUN: %python %S/Inputs/long-chain.py chain 2000 > %t.long.mlir
// RUN: jitc compile %t.long.mlir --target nvptx --gpu-arch sm_80 --emit ptx -o %t.sm_80.ptx
// RUN: %ptxas -arch=sm_80 %t.sm_80.ptx -o %t.sm_80.cubin
// RUN: jitc compile %t.long.mlir --target nvptx --gpu-arch sm_90 --emit ptx -o %t.sm_90.ptx
// RUN: %ptxas -arch=sm_90 %t.sm_90.ptx -o %t.sm_90.cubin

// A kernel written by hand with too many buffers for the GPU is left to
// the interpreter, with a note; 509 arguments, a result, the status record
// and the scratch memory's pointer still fit.
// RUN: %python %S/Inputs/long-chain.py kernel 600 > %t.wide.mlir
// RUN: jitc compile %t.wide.mlir --target nvptx --emit ptx -o %t.wide.ptx 2>&1 | FileCheck %s --check-prefix=WIDE
// WIDE: jitc compile: note: kernel @sum_fused_0 is not compiled: the kernel takes 601 buffers, 4824 bytes of parameters with its status record and scratch memory: a GPU kernel's fit in 4096 bytes
// RUN: %python %S/Inputs/long-chain.py kernel 510 | jitc compile - --target nvptx --emit ptx -o /dev/null 2>&1 | FileCheck %s --check-prefix=OVER
// OVER: the kernel takes 511 buffers, 4104 bytes
// RUN: %python %S/Inputs/long-chain.py kernel 509 > %t.fits.mlir
// RUN: jitc compile %t.fits.mlir --target nvptx --emit ptx -o %t.fits.ptx 2>&1 | count 0
// RUN: %ptxas -arch=sm_80 %t.fits.ptx -o %t.fits.cubin
