//! The polynomial f32 `exp`, `log`, `tanh` and `sigmoid` of compiled code against
//! the interpreter (libm), value by value, over a sweep of the whole useful
//! range plus the special values: the largest error in ulps is bounded, and
//! infinities, NaN, overflow and underflow come out as libm's.

use jitc_compiler::{CodegenOptions, CpuTarget, DiagnosticCollector, new_context, parse_module};
use jitc_interp::{Buffer, Interpreter, StateStore, Tensor, Value};
use jitc_runtime::CpuModule;
use jitc_test_support::sweep::{inputs, log_inputs, ulps, unary_module};

/// `kind` of each of `values`, by libm (the interpreter) and compiled for
/// each of [`targets`], one after the other (the interpreter's repeated to
/// match).
fn both(kind: &str, values: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let n = values.len();
    let source = unary_module(kind, "f32", n);
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let module = parse_module(&context, &source).unwrap_or_else(|| panic!("{:?}", collector.take()));
    let input = Tensor::new(vec![n], Buffer::F32(values.iter().copied().collect())).unwrap();
    let expected = Interpreter::new(&module)
        .run("main", vec![Value::tensor(input.clone())], &mut StateStore::new())
        .unwrap();
    let Value::Tensor(expected) = &expected[0] else {
        panic!("not a tensor")
    };
    let get = |t: &Tensor| (0..n).map(|i| t.get(i).as_f64() as f32).collect::<Vec<_>>();
    let mut actual = Vec::new();
    for target in targets() {
        let mut module = parse_module(&context, &source).unwrap();
        let options = CodegenOptions {
            target,
            ..CodegenOptions::default()
        };
        let compiled = CpuModule::compile_with(&context, &mut module, &options).unwrap();
        assert!(compiled.interpreted_kernels().is_empty());
        let result = compiled
            .run(
                &module,
                "main",
                vec![Value::tensor(input.clone())],
                &mut StateStore::new(),
            )
            .unwrap();
        let Value::Tensor(result) = &result[0] else {
            panic!("not a tensor")
        };
        actual.extend(get(result));
    }
    let expected = get(expected);
    let copies = actual.len() / n;
    (expected.repeat(copies), actual)
}

/// The host, and on x86 `x86-64-v3` (AVX2 and FMA, no AVX-512), whose
/// `exp` applies `2^n` in two exponent-field multiplies where AVX-512's
/// uses `vscalefps` (`lower::poly`): the results of both are checked.
fn targets() -> Vec<CpuTarget> {
    let mut targets = vec![CpuTarget::default()];
    if cfg!(target_arch = "x86_64") {
        targets.push(CpuTarget {
            cpu: Some("x86-64-v3".into()),
            features: None,
        });
    }
    targets
}

fn worst(kind: &str, values: Vec<f32>) -> (u64, f32, f32, f32) {
    let (expected, actual) = both(kind, &values);
    let mut worst = (0, 0.0, 0.0, 0.0);
    for (x, (&e, &a)) in values.iter().cycle().zip(expected.iter().zip(&actual)) {
        let d = ulps(e, a);
        if d > worst.0 {
            worst = (d, *x, e, a);
        }
    }
    worst
}

#[test]
fn exp_is_within_two_ulps() {
    let (ulps, x, expected, actual) = worst("exp", inputs());
    eprintln!("exp: at most {ulps} ulps (at {x})");
    assert!(ulps <= 2, "exp({x}) = {actual}, libm {expected}: {ulps} ulps");
}

#[test]
fn tanh_is_within_four_ulps() {
    let (ulps, x, expected, actual) = worst("tanh", inputs());
    eprintln!("tanh: at most {ulps} ulps (at {x})");
    assert!(ulps <= 4, "tanh({x}) = {actual}, libm {expected}: {ulps} ulps");
}

#[test]
fn sigmoid_is_within_four_ulps() {
    let (ulps, x, expected, actual) = worst("sigmoid", inputs());
    eprintln!("sigmoid: at most {ulps} ulps (at {x})");
    assert!(ulps <= 4, "sigmoid({x}) = {actual}, libm {expected}: {ulps} ulps");
}

#[test]
fn log_is_within_two_ulps() {
    let (ulps, x, expected, actual) = worst("log", log_inputs());
    eprintln!("log: at most {ulps} ulps (at {x:e})");
    assert!(ulps <= 2, "log({x:e}) = {actual}, libm {expected}: {ulps} ulps");
}

#[test]
fn special_values_come_out_as_libms_bit_for_bit() {
    // Zeros of both signs, infinities, NaN, subnormals, the normal limits
    // and the overflow and underflow edges: where libm gives a zero, an
    // infinity or NaN, the polynomial gives the same bits (the sign of a
    // zero included, which `==` cannot see).
    let specials = [
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        // A negative quiet NaN and a signalling one: `exp` lets NaN through
        // its clamps, and their garbage exponents differ in sign.
        f32::from_bits(0xffc0_0000),
        f32::from_bits(0x7f80_0001),
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        88.8,
        -104.0,
        1e-30,
        -1e-30,
    ];
    for kind in ["exp", "log", "tanh", "sigmoid"] {
        let (expected, actual) = both(kind, &specials);
        for ((x, e), a) in specials.iter().cycle().zip(&expected).zip(&actual) {
            let exact = e.is_nan() || *e == 0.0 || e.is_infinite();
            if e.is_nan() {
                assert!(a.is_nan(), "{kind}({x:e}) = {a:e}, libm NaN");
            } else if exact {
                assert_eq!(a.to_bits(), e.to_bits(), "{kind}({x:e}) = {a:e}, libm {e:e}");
            } else {
                assert!(ulps(*e, *a) <= 4, "{kind}({x:e}) = {a:e}, libm {e:e}");
            }
        }
    }
}
