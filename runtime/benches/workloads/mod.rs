//! The benchmark workloads: memory-bound element-wise and normalization
//! programs, and the compute-bound conv and matmul examples scaled up.
//! `scripts/bench_torch.py` runs the same workloads in PyTorch.

use std::time::Duration;

/// The median of `samples`.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A benchmark workload: a program and the shapes of its f32 inputs.
pub struct Workload {
    /// What the table calls it.
    pub name: &'static str,
    /// Its source; `@main` is timed.
    pub source: String,
    /// The shapes of `@main`'s arguments.
    pub inputs: Vec<Vec<usize>>,
    /// Floating-point operations per call of a compute-bound workload (a
    /// multiply-add counts two); 0 for the memory-bound ones.
    pub flops: u64,
}

/// The workloads of the CPU issue, shared by the CPU and CUDA benches.
pub fn workloads() -> Vec<Workload> {
    let sigmoid = |n: usize| {
        format!(
            r#"func.func @main(%x: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %one = arith.constant dense<1.0> : tensor<f32>
  %ones = "meta.reindex"(%one) {{indices = affine_map<(d0) -> ()>}} : (tensor<f32>) -> tensor<{n}xf32>
  %e = "meta.unary"(%x) {{kind = "exp"}} : (tensor<{n}xf32>) -> tensor<{n}xf32>
  %d = "meta.binary"(%e, %ones) {{kind = "add"}} : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  %y = "meta.binary"(%e, %d) {{kind = "div"}} : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  return %y : tensor<{n}xf32>
}}"#
        )
    };
    let softmax = |r: usize, c: usize| {
        let t = format!("tensor<{r}x{c}xf32>");
        let v = format!("tensor<{r}xf32>");
        format!(
            r#"func.func @main(%x: {t}) -> {t} {{
  %max = "meta.reindex_reduce"(%x) {{kind = "max", indices = affine_map<(i, j) -> (i)>}} : ({t}) -> {v}
  %max_b = "meta.reindex"(%max) {{indices = affine_map<(i, j) -> (i)>}} : ({v}) -> {t}
  %s = "meta.binary"(%x, %max_b) {{kind = "sub"}} : ({t}, {t}) -> {t}
  %e = "meta.unary"(%s) {{kind = "exp"}} : ({t}) -> {t}
  %sum = "meta.reindex_reduce"(%e) {{kind = "add", indices = affine_map<(i, j) -> (i)>}} : ({t}) -> {v}
  %sum_b = "meta.reindex"(%sum) {{indices = affine_map<(i, j) -> (i)>}} : ({v}) -> {t}
  %y = "meta.binary"(%e, %sum_b) {{kind = "div"}} : ({t}, {t}) -> {t}
  return %y : {t}
}}"#
        )
    };
    let add = |n: usize| {
        format!(
            r#"func.func @main(%x: tensor<{n}xf32>, %y: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %s = "meta.binary"(%x, %y) {{kind = "add"}} : (tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<{n}xf32>
  return %s : tensor<{n}xf32>
}}"#
        )
    };
    let layer_norm_gelu = |r: usize, c: usize| {
        let t = format!("tensor<{r}x{c}xf32>");
        let v = format!("tensor<{r}xf32>");
        let splat = |name: &str, value: f64| {
            format!(
                "  %{name}_s = arith.constant dense<{value:.10e}> : tensor<f32>\n  %{name} = \"meta.reindex\"(%{name}_s) {{indices = affine_map<(i, j) -> ()>}} : (tensor<f32>) -> {t}\n"
            )
        };
        let mut body = String::new();
        for (name, value) in [
            ("n", c as f64),
            ("eps", 1e-5),
            ("half", 0.5),
            ("one", 1.0),
            ("k", 0.7978845608028654),
            ("a", 0.044715),
        ] {
            body += &splat(name, value);
        }
        let bin = |out: &str, kind: &str, l: &str, r: &str| {
            format!("  %{out} = \"meta.binary\"(%{l}, %{r}) {{kind = \"{kind}\"}} : ({t}, {t}) -> {t}\n")
        };
        let reduce_broadcast = |out: &str, input: &str| {
            format!(
                "  %{out}_r = \"meta.reindex_reduce\"(%{input}) {{kind = \"add\", indices = affine_map<(i, j) -> (i)>}} : ({t}) -> {v}\n  %{out} = \"meta.reindex\"(%{out}_r) {{indices = affine_map<(i, j) -> (i)>}} : ({v}) -> {t}\n"
            )
        };
        body += &reduce_broadcast("sum", "x");
        body += &bin("mean", "div", "sum", "n");
        body += &bin("d", "sub", "x", "mean");
        body += &bin("d2", "mul", "d", "d");
        body += &reduce_broadcast("ssum", "d2");
        body += &bin("var", "div", "ssum", "n");
        body += &bin("ve", "add", "var", "eps");
        body += &format!("  %std = \"meta.unary\"(%ve) {{kind = \"sqrt\"}} : ({t}) -> {t}\n");
        body += &bin("y", "div", "d", "std");
        body += &bin("y2", "mul", "y", "y");
        body += &bin("y3", "mul", "y2", "y");
        body += &bin("ay3", "mul", "a", "y3");
        body += &bin("inner", "add", "y", "ay3");
        body += &bin("scaled", "mul", "k", "inner");
        body += &format!("  %th = \"meta.unary\"(%scaled) {{kind = \"tanh\"}} : ({t}) -> {t}\n");
        body += &bin("p1", "add", "one", "th");
        body += &bin("hy", "mul", "half", "y");
        body += &bin("gelu", "mul", "hy", "p1");
        format!("func.func @main(%x: {t}) -> {t} {{\n{body}  return %gelu : {t}\n}}\n")
    };
    let examples = jitc_test_support::example;
    // The examples, scaled to the issue's workload shapes.
    let conv = examples("conv.mlir")
        .replace("2x3x5x5x", "8x64x56x56x")
        .replace("4x3x3x3x", "64x64x3x3x")
        .replace("2x4x5x5x3x3x3x", "8x64x56x56x64x3x3x")
        .replace("2x4x5x5x", "8x64x56x56x");
    let matmul = examples("matmul.mlir")
        .replace("4x3x", "1024x1024x")
        .replace("3x5x", "1024x1024x")
        .replace("4x5x3x", "1024x1024x1024x")
        .replace("4x5x", "1024x1024x");
    let instance_norm = examples("instance_norm.mlir")
        .replace("2x3x4x4x", "32x64x56x56x")
        .replace("1x3x1x1x", "1x64x1x1x")
        .replace("dense<32.0>", "dense<100352.0>");
    vec![
        Workload {
            name: "add, 16M f32",
            source: add(1 << 24),
            inputs: vec![vec![1 << 24], vec![1 << 24]],
            flops: 0,
        },
        Workload {
            name: "sigmoid, 16M f32",
            source: sigmoid(1 << 24),
            inputs: vec![vec![1 << 24]],
            flops: 0,
        },
        Workload {
            name: "softmax, 4096x1024",
            source: softmax(4096, 1024),
            inputs: vec![vec![4096, 1024]],
            flops: 0,
        },
        Workload {
            name: "instance norm",
            source: instance_norm,
            inputs: vec![vec![32, 64, 56, 56]],
            flops: 0,
        },
        Workload {
            name: "layer norm + GELU",
            source: layer_norm_gelu(8192, 1024),
            inputs: vec![vec![8192, 1024]],
            flops: 0,
        },
        Workload {
            name: "conv 8x64x56x56",
            source: conv,
            inputs: vec![vec![8, 64, 56, 56], vec![64, 64, 3, 3]],
            flops: 2 * 8 * 64 * 56 * 56 * 64 * 9,
        },
        Workload {
            name: "matmul 1024^3",
            source: matmul,
            inputs: vec![vec![1024, 1024], vec![1024, 1024]],
            flops: 2 << 30,
        },
    ]
}
