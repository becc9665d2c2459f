//! The error bound `docs/semantics.md` states for `--math fast` reductions,
//! tested where it matters: row sums of values in U(-2, 2), whose terms
//! cancel, so the error relative to the result itself is unbounded (about
//! 2e-5 here, more than the 1e-5 the examples are held to), while the error relative to the sum of magnitudes stays
//! within the stated `2·γ(n-1)·Σ|x|`, γ(k) = k·u / (1 - k·u), u = 2^-24.
//! That is the bound BLAS libraries state for sums and dot products: the
//! interpreter's sequential sum and the reassociated one are each within
//! γ(n-1)·Σ|x| of the exact sum.

use jitc_compiler::{
    CodegenOptions, MathMode, OptimizeOptions, Pipeline, new_context, optimize, parse_module,
};
use jitc_interp::{Buffer, Interpreter, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::Rng;

const ROWS: usize = 64;
const N: usize = 4096;

#[test]
fn fast_row_sums_are_within_the_stated_bound() {
    let source = format!(
        r#"func.func @main(%x: tensor<{ROWS}x{N}xf32>) -> tensor<{ROWS}xf32> {{
  %s = "meta.reindex_reduce"(%x) {{kind = "add", indices = affine_map<(i, j) -> (i)>}} : (tensor<{ROWS}x{N}xf32>) -> tensor<{ROWS}xf32>
  return %s : tensor<{ROWS}xf32>
}}"#
    );
    let mut rng = Rng(0x5eed_f00d);
    let values: Vec<f32> = (0..ROWS * N)
        .map(|_| (rng.next() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0)
        .collect();
    let input = Tensor::new(vec![ROWS, N], Buffer::F32(values.clone().into())).unwrap();

    let context = new_context().unwrap();
    let mut module = parse_module(&context, &source).unwrap();
    optimize(
        &context,
        &mut module,
        &Pipeline::default(),
        &OptimizeOptions::default(),
    )
    .unwrap();
    let run_interpreted = Interpreter::new(&module)
        .run("main", vec![Value::tensor(input.clone())], &mut StateStore::new())
        .unwrap();
    let options = CodegenOptions {
        math: MathMode::Fast,
        ..CodegenOptions::default()
    };
    let compiled = CpuModule::compile_with(&context, &mut module, &options).unwrap();
    let run_fast = compiled
        .run(
            &module,
            "main",
            vec![Value::tensor(input)],
            &mut StateStore::new(),
        )
        .unwrap();
    let [Value::Tensor(exact), Value::Tensor(fast)] = [&run_interpreted[0], &run_fast[0]] else {
        panic!("expected tensors");
    };

    let u = f64::from(f32::EPSILON) / 2.0;
    let k = (N - 1) as f64;
    let gamma = k * u / (1.0 - k * u);
    let (mut differing, mut worst_of_bound, mut worst_relative) = (0, 0.0f64, 0.0f64);
    for row in 0..ROWS {
        let (a, b) = (exact.get(row).as_f64(), fast.get(row).as_f64());
        let magnitudes: f64 = values[row * N..(row + 1) * N]
            .iter()
            .map(|x| f64::from(x.abs()))
            .sum();
        let bound = 2.0 * gamma * magnitudes;
        assert!(
            (a - b).abs() <= bound,
            "row {row}: interpreter {a}, fast {b}: |difference| {} exceeds 2·γ(n-1)·Σ|x| = {bound}",
            (a - b).abs()
        );
        differing += usize::from(a != b);
        worst_of_bound = worst_of_bound.max((a - b).abs() / bound);
        worst_relative = worst_relative.max((a - b).abs() / a.abs());
    }
    // The fast kernel really sums in another order (vector partial sums);
    // were it sequential, this test would check nothing.
    assert!(
        differing > 0,
        "no row differs: the fast kernel was not reassociated"
    );
    eprintln!(
        "{differing}/{ROWS} rows differ; worst difference {worst_of_bound:.1e} of the bound, {worst_relative:.1e} of the result"
    );
}
