//! The lazy graph (`jitc_runtime::graph`): every op against a reference
//! written here element by element (as NumPy would compute it), on random
//! shapes; bad arguments as errors; fusion across a user's loop; cache
//! hits; memory freed with the last handle; dumps that reproduce a fetch.

use jitc_compiler::{CodegenOptions, DiagnosticCollector, MathMode, new_context, parse_module};
use jitc_dialect::kinds::ElementType;
use jitc_interp::{Interpreter, Scalar, StateStore, Tensor, Value};
use jitc_runtime::graph::{self, StateBinding, Var};
use jitc_test_support::Rng;
use std::sync::Arc;

/// A random f32 tensor of `shape`, small numbers.
fn random(rng: &mut Rng, shape: &[usize]) -> Tensor {
    let count: usize = shape.iter().product();
    let mut tensor = Tensor::splat(shape.to_vec(), Scalar::F32(0.0));
    let buffer = tensor.buffer_mut();
    for k in 0..count {
        buffer.set(k, Scalar::F32((rng.below(201) as f32 - 100.0) / 16.0));
    }
    tensor
}

fn f32s(tensor: &Tensor) -> Vec<f32> {
    (0..tensor.len())
        .map(|k| match tensor.get(k) {
            Scalar::F32(v) => v,
            other => panic!("not f32: {other:?}"),
        })
        .collect()
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// Every index of `shape`, in row-major order.
fn indices(shape: &[usize]) -> Vec<Vec<i64>> {
    let count: usize = shape.iter().product();
    let strides = strides(shape);
    (0..count)
        .map(|k| {
            shape
                .iter()
                .zip(&strides)
                .map(|(&n, &s)| ((k / s) % n.max(1)) as i64)
                .collect()
        })
        .collect()
}

/// The reference reindex: `out[i] = x[f(i)]`, or `overflow` where `f(i)`
/// is out of bounds or `excluded(i)`.
fn reindex_reference(
    x: &Tensor,
    shape: &[usize],
    f: &dyn Fn(&[i64]) -> Vec<i64>,
    overflow: f32,
    excluded: &dyn Fn(&[i64]) -> bool,
) -> Vec<f32> {
    let values = f32s(x);
    let in_strides = strides(x.shape());
    indices(shape)
        .iter()
        .map(|i| {
            let source = f(i);
            let inside = source
                .iter()
                .zip(x.shape())
                .all(|(&s, &n)| s >= 0 && (s as usize) < n);
            if excluded(i) || !inside {
                overflow
            } else {
                let offset: usize = source
                    .iter()
                    .zip(&in_strides)
                    .map(|(&s, &st)| s as usize * st)
                    .sum();
                values[offset]
            }
        })
        .collect()
}

/// The reference reduction of `x` to `shape` through `f`, combining with
/// `combine` from `identity`, in row-major order of `x`.
fn reduce_reference(
    x: &Tensor,
    shape: &[usize],
    f: &dyn Fn(&[i64]) -> Vec<i64>,
    identity: f32,
    combine: &dyn Fn(f32, f32) -> f32,
) -> Vec<f32> {
    let values = f32s(x);
    let out_strides = strides(shape);
    let mut out = vec![identity; shape.iter().product()];
    for (k, i) in indices(x.shape()).iter().enumerate() {
        let target = f(i);
        let inside = target
            .iter()
            .zip(shape)
            .all(|(&t, &n)| t >= 0 && (t as usize) < n);
        if inside {
            let offset: usize = target
                .iter()
                .zip(&out_strides)
                .map(|(&t, &s)| t as usize * s)
                .sum();
            out[offset] = combine(out[offset], values[k]);
        }
    }
    out
}

fn same(got: &Tensor, want: &[f32], what: &str) {
    let got = f32s(got);
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (k, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            "{what}: element {k} is {a}, want {b}"
        );
    }
}

/// An index map of the reference: output index to input index.
type IndexMap = Box<dyn Fn(&[i64]) -> Vec<i64>>;

/// A reindex: its shape, index expressions, overflow value and conditions,
/// and the same as the reference's map and exclusion.
type ReindexCase<'s> = (
    Vec<usize>,
    Vec<&'s str>,
    f32,
    Vec<&'s str>,
    IndexMap,
    Box<dyn Fn(&[i64]) -> bool>,
);

/// A reduction: its shape, index expressions, and the reference's map.
type ReduceCase<'s> = (Vec<usize>, Vec<&'s str>, IndexMap);

#[test]
fn reindexes_match_the_reference_on_random_shapes() {
    let mut rng = Rng(0x9a11);
    for _ in 0..8 {
        let (a, b) = (1 + rng.below(6), 1 + rng.below(7));
        let x = random(&mut rng, &[a, b]);
        let var = Var::new(x.clone());
        let flip = format!("{} - i0", a - 1);
        // Broadcast a row to (3, a, b), transpose, pad by one, flip,
        // stride by two, and conditions that blank parts.
        let cases: Vec<ReindexCase> = vec![
            (
                vec![3, a, b],
                vec!["i1", "i2"],
                0.0,
                vec![],
                Box::new(|i| vec![i[1], i[2]]),
                Box::new(|_| false),
            ),
            (
                vec![b, a],
                vec!["i1", "i0"],
                0.0,
                vec![],
                Box::new(|i| vec![i[1], i[0]]),
                Box::new(|_| false),
            ),
            (
                vec![a + 2, b + 2],
                vec!["i0 - 1", "i1 - 1"],
                -2.5,
                vec![],
                Box::new(|i| vec![i[0] - 1, i[1] - 1]),
                Box::new(|_| false),
            ),
            (
                vec![a, b],
                vec![flip.as_str(), "i1"],
                0.0,
                vec![],
                Box::new(move |i| vec![a as i64 - 1 - i[0], i[1]]),
                Box::new(|_| false),
            ),
            (
                vec![a, b.div_ceil(2)],
                vec!["i0", "i1 * 2"],
                7.0,
                vec![],
                Box::new(|i| vec![i[0], i[1] * 2]),
                Box::new(|_| false),
            ),
            (
                vec![a, b],
                vec!["i0", "i1"],
                9.0,
                vec!["i0 < 1"],
                Box::new(|i| vec![i[0], i[1]]),
                Box::new(|i| i[0] < 1),
            ),
            (
                vec![a, b],
                vec!["i0", "i1"],
                9.0,
                vec!["i1 >= 2", "i0 == i1"],
                Box::new(|i| vec![i[0], i[1]]),
                Box::new(|i| i[1] >= 2 || i[0] == i[1]),
            ),
        ];
        for (shape, exprs, overflow, conditions, f, excluded) in cases {
            let y = var
                .reindex(&shape, &exprs, Some(overflow as f64), &conditions)
                .unwrap();
            let want = reindex_reference(&x, &shape, &f, overflow, &excluded);
            same(
                &y.fetch().unwrap(),
                &want,
                &format!("reindex {exprs:?} {conditions:?} of {a}x{b}"),
            );
        }
    }
}

/// How the reference folds each float reduce kind: its name, identity and
/// step.
type Combine = fn(f32, f32) -> f32;
const REDUCE_KINDS: [(&str, f32, Combine); 4] = [
    ("add", 0.0, |p, q| p + q),
    ("mul", 1.0, |p, q| p * q),
    ("max", f32::NEG_INFINITY, f32::max),
    ("min", f32::INFINITY, f32::min),
];

#[test]
fn every_reduction_matches_the_reference() {
    // Folded in row-major order, as the reference folds (fast math may
    // reassociate float sums and products).
    graph::set_options(CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    })
    .unwrap();
    let mut rng = Rng(0x7ed);
    for _ in 0..6 {
        let (a, b, c) = (1 + rng.below(5), 1 + rng.below(6), 1 + rng.below(4));
        let x = random(&mut rng, &[a, b, c]);
        let var = Var::new(x.clone());
        for (kind, identity, combine) in REDUCE_KINDS {
            let cases: Vec<ReduceCase> = vec![
                (vec![a], vec!["i0"], Box::new(|i| vec![i[0]])),
                (vec![c, b], vec!["i2", "i1"], Box::new(|i| vec![i[2], i[1]])),
                (vec![], vec![], Box::new(|_| vec![])),
                (
                    vec![a.div_ceil(2), c],
                    vec!["i0 floordiv 2", "i2"],
                    Box::new(|i| vec![i[0].div_euclid(2), i[2]]),
                ),
            ];
            for (shape, exprs, f) in cases {
                let y = var.reindex_reduce(kind, &shape, &exprs).unwrap();
                let want = reduce_reference(&x, &shape, &f, identity, &combine);
                same(
                    &y.fetch().unwrap(),
                    &want,
                    &format!("{kind} {exprs:?} of {a}x{b}x{c}"),
                );
            }
        }
    }
}

#[test]
fn reductions_to_constant_indices_over_collapsed_planes_match_the_reference() {
    // Instance norm's statistics and their kin: outputs indexed by plain
    // dimensions and constants ((0, c, 0, 0)), so they accumulate in
    // registers, and inner planes contiguous in the input, so those loops
    // run as one (schedule rules 3 and 5); bit for bit in exact math, with
    // planes longer and shorter than a vector.
    graph::set_options(CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    })
    .unwrap();
    let mut rng = Rng(0xc011);
    for round in 0..8 {
        let (n, c) = (1 + rng.below(3), 1 + rng.below(5));
        let (h, w) = if round % 2 == 0 {
            (1 + rng.below(4), 1 + rng.below(5))
        } else {
            (5 + rng.below(12), 9 + rng.below(30))
        };
        let x = random(&mut rng, &[n, c, h, w]);
        let var = Var::new(x.clone());
        for (kind, identity, combine) in REDUCE_KINDS {
            let cases: Vec<ReduceCase> = vec![
                (
                    vec![1, c, 1, 1],
                    vec!["0", "i1", "0", "0"],
                    Box::new(|i| vec![0, i[1], 0, 0]),
                ),
                (
                    vec![n, 1, 1],
                    vec!["i0", "0", "0"],
                    Box::new(|i| vec![i[0], 0, 0]),
                ),
                (
                    vec![1, h, 1],
                    vec!["0", "i2", "0"],
                    Box::new(|i| vec![0, i[2], 0]),
                ),
                (vec![c, 1], vec!["i1", "0"], Box::new(|i| vec![i[1], 0])),
                // A constant into an extent of 2: the elements no point
                // names keep the identity.
                (vec![c, 2], vec!["i1", "0"], Box::new(|i| vec![i[1], 0])),
                (
                    vec![2, n, 1],
                    vec!["1", "i0", "0"],
                    Box::new(|i| vec![1, i[0], 0]),
                ),
            ];
            for (shape, exprs, f) in cases {
                let y = var.reindex_reduce(kind, &shape, &exprs).unwrap();
                let want = reduce_reference(&x, &shape, &f, identity, &combine);
                same(
                    &y.fetch().unwrap(),
                    &want,
                    &format!("{kind} {exprs:?} of {n}x{c}x{h}x{w}"),
                );
            }
        }
    }
}

#[test]
fn element_wise_ops_select_and_casts_match_the_reference() {
    let mut rng = Rng(0xe1e);
    let x = random(&mut rng, &[5, 3]);
    let y = random(&mut rng, &[5, 3]);
    let (xv, yv) = (Var::new(x.clone()), Var::new(y.clone()));
    let (xs, ys) = (f32s(&x), f32s(&y));
    let map =
        |f: &dyn Fn(f32, f32) -> f32| -> Vec<f32> { xs.iter().zip(&ys).map(|(&p, &q)| f(p, q)).collect() };
    same(
        &xv.binary("add", &yv).unwrap().fetch().unwrap(),
        &map(&|p, q| p + q),
        "add",
    );
    same(
        &xv.binary("mul", &yv).unwrap().fetch().unwrap(),
        &map(&|p, q| p * q),
        "mul",
    );
    same(
        &xv.binary("max", &yv).unwrap().fetch().unwrap(),
        &map(&|p, q| p.max(q)),
        "max",
    );
    same(
        &xv.unary("neg").unwrap().fetch().unwrap(),
        &map(&|p, _| -p),
        "neg",
    );
    same(
        &xv.unary("abs").unwrap().fetch().unwrap(),
        &map(&|p, _| p.abs()),
        "abs",
    );
    let less = xv.binary("lt", &yv).unwrap();
    assert_eq!(less.element(), ElementType::I1);
    let chosen = less.select(&xv, &yv).unwrap();
    same(
        &chosen.fetch().unwrap(),
        &map(&|p, q| if p < q { p } else { q }),
        "select",
    );
    let cast = xv.cast(ElementType::I32).unwrap().fetch().unwrap();
    for (k, p) in xs.iter().enumerate() {
        assert_eq!(cast.get(k), Scalar::I32(*p as i32), "cast of {p}");
    }
}

#[test]
fn bad_arguments_are_errors_that_say_why() {
    let x = Var::new(Tensor::splat(vec![2, 3], Scalar::F32(1.0)));
    let y = Var::new(Tensor::splat(vec![3, 2], Scalar::F32(1.0)));
    let i = Var::new(Tensor::splat(vec![2, 3], Scalar::I32(1)));
    let error = |r: Result<Var, jitc_runtime::Error>| r.unwrap_err().to_string();
    assert_eq!(
        error(x.binary("add", &y)),
        "binary 'add' of tensor<2x3xf32> and tensor<3x2xf32>: operands must have one shape and element type"
    );
    assert_eq!(
        error(x.binary("add", &i)),
        "binary 'add' of tensor<2x3xf32> and tensor<2x3xi32>: operands must have one shape and element type"
    );
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0"], None, &[])),
        "reindex of a rank-2 value needs 2 index expressions, one per dimension, got 1"
    );
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0", "i2"], None, &[])),
        "index expression 'i2': i2 is not an index of this op (it has 2: i0 to i1)"
    );
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0", "j"], None, &[])),
        "index expression 'j': 'j' is not an index (i0, i1, ...) or an operator"
    );
    let product = error(x.reindex(&[2, 3], &["i0", "i1 * i0"], None, &[]));
    assert!(
        product.starts_with(r#"reindex indices ["i0", "i1 * i0"]: "#),
        "{product}"
    );
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0", "i1"], None, &["i0 != 1"])),
        "overflow condition 'i0 != 1': != is not affine"
    );
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0", "i1 % 2"], None, &[])),
        "index expression 'i1 % 2': write '%' as 'mod' (which is never negative, where C++'s % is \
         negative for a negative left side)"
    );
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0 / 2", "i1"], None, &[])),
        "index expression 'i0 / 2': write '/' as 'floordiv' (which rounds toward negative infinity, \
         where C++'s / truncates toward zero)"
    );
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0", "i1"], None, &["i0 > 0 or i1 < 1"])),
        "overflow condition 'i0 > 0 or i1 < 1': 'or' does not join comparisons; the conditions are a \
         list, one comparison each, and any that holds drops the element"
    );
    // MLIR folds constants modulo 2^64 as it parses: an overflow must be
    // caught before it (the folded map would read column 0 everywhere).
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0", "(i1 * 4611686018427387904) * 4"], None, &[])),
        "index expression '(i1 * 4611686018427387904) * 4': its arithmetic leaves 64 bits over the op's \
         indices (domain [2, 3])"
    );
    assert!(
        error(x.reindex(&[2, 3], &["i0", "i1 * 4611686018427387904"], None, &[])).contains("leaves 64 bits")
    );
    assert!(
        error(x.reindex(&[2, 3], &["i0", "i1"], None, &["i1 * 9223372036854775807 > 1"]))
            .contains("leaves 64 bits")
    );
    assert!(
        error(x.reindex_reduce("add", &[2], &["i0 - 9223372036854775807 - i1 - 2"]))
            .contains("leaves 64 bits")
    );
    // At the edge of 64 bits, and out of bounds: the overflow value.
    let edge = x
        .reindex(&[2, 3], &["i0", "i1 * 4611686018427387903"], Some(5.0), &[])
        .unwrap();
    assert_eq!(edge.fetch().unwrap().get(1), Scalar::F32(5.0));
    // What the verifier would refuse at the fetch is refused when recorded
    // (a failing op would fail every fetch that shares its work).
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0", "i1 mod 0"], None, &[])),
        "index expression 'i1 mod 0' divides by 0: a divisor must be a positive constant"
    );
    assert!(error(x.reindex(&[2, 3], &["i0", "i1 floordiv -2"], None, &[])).contains("divides by -2"));
    assert!(error(x.reindex(&[2, 3], &["i0", "i1 ceildiv (1 - 1)"], None, &[])).contains("divides by 0"));
    assert_eq!(
        error(x.reindex(&[2, 3], &["i0, i1", "i1"], None, &[])),
        "index expression 'i0, i1': ',' is not part of one (integers, i0, i1, ..., +, -, *, floordiv, \
         ceildiv, mod and parentheses)"
    );
    // Parsers recurse per parenthesis and sign: bounded.
    let deep = format!("{}i0{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(error(x.reindex(&[2, 3], &[&deep, "i1"], None, &[])).contains("is longer than the 4096"));
    let deep = format!("{}i0{}", "(".repeat(100), ")".repeat(100));
    assert!(error(x.reindex(&[2, 3], &[&deep, "i1"], None, &[])).contains("nests more than 64"));
    let signs = format!("{}i0", "-".repeat(1000));
    assert!(error(x.reindex(&[2, 3], &[&signs, "i1"], None, &[])).contains("nests more than 64"));
    assert!(
        error(x.reindex(&[2, 3], &["i0\u{a0}", "i1"], None, &[])).contains("'\u{a0}' is not part of one"),
        "non-ASCII whitespace is no part of the grammar"
    );
    // A divisor that is an index of extent 1 is no constant: MLIR's words.
    let wide = Var::new(Tensor::splat(vec![2, 1], Scalar::F32(1.0)));
    assert!(!error(wide.reindex(&[2, 1], &["i0 floordiv i1", "i1"], None, &[])).contains("divides by 0"));
    // `mod` of a value already below the modulus keeps its range.
    assert!(
        x.reindex(
            &[2, 3],
            &["i0", "(i1 mod 4611686018427387904) * 3"],
            Some(0.0),
            &[]
        )
        .is_ok()
    );
    let terms = format!("i0{}", "+0".repeat(2000));
    assert!(x.reindex(&[2, 3], &[&terms, "i1"], None, &[]).is_ok());
    // Constants: exact integers, and values the type cannot hold refused
    // when recorded.
    let big = (1i64 << 53) + 1;
    let exact = graph::full(&[2], ElementType::I64, big).unwrap();
    assert_eq!(exact.fetch().unwrap().get(1), Scalar::I64(big));
    let padded = Var::new(Tensor::splat(vec![2], Scalar::I64(7)))
        .reindex_with(&[3], &["i0 - 1"], Some(graph::Scalar::Int(big)), &[])
        .unwrap();
    assert_eq!(padded.fetch().unwrap().get(0), Scalar::I64(big));
    assert_eq!(
        error(graph::full(&[2], ElementType::I32, 1i64 << 40)),
        "1099511627776 is out of range for i32"
    );
    assert_eq!(
        error(graph::full(&[2], ElementType::I64, f64::NAN)),
        "cannot make NaN an integer (i64)"
    );
    assert_eq!(
        error(graph::full(&[2], ElementType::I64, 1e19)),
        "1e19 is out of range for i64"
    );
    assert_eq!(
        error(graph::full(&[2], ElementType::I32, 1e300)),
        "1e300 is out of range for i32"
    );
    assert_eq!(
        error(graph::full(&[2], ElementType::I32, 3e9)),
        "3000000000.0 is out of range for i32"
    );
    assert_eq!(
        error(i.reindex_with(&[2, 3], &["i0", "i1"], Some(graph::Scalar::Int(1 << 31)), &[])),
        "2147483648 is out of range for i32"
    );
    assert_eq!(
        graph::full(&[1], ElementType::I32, -2.7)
            .unwrap()
            .fetch()
            .unwrap()
            .get(0),
        Scalar::I32(-2)
    );
    assert_eq!(
        error(x.reindex_reduce("add", &[2], &["i0", "i1"])),
        "reindex_reduce to a rank-1 value needs 1 index expressions, one per dimension, got 2"
    );
    assert!(error(x.reindex_reduce("sum", &[2], &["i0"])).starts_with("unknown reduction 'sum'"));
    assert!(error(x.unary("exq")).starts_with("unknown unary kind 'exq'"));
    assert!(error(i.unary("exp")).starts_with("unary 'exp' takes"));
    assert_eq!(error(x.select(&x, &x)), "select's condition must be i1, not f32");
    assert_eq!(
        error(x.reindex(&[1 << 40, 1 << 40], &["i0", "i1"], None, &[])),
        "a value of shape [1099511627776, 1099511627776] is larger than a 64-bit index can address"
    );
    // Larger than the element limit is fine while it is fused away.
    // (Not held: a held value is a result, and results are allocated.)
    let small = x
        .reindex(&[1 << 13, 1 << 13, 2, 3], &["i2", "i3"], None, &[])
        .unwrap()
        .reindex_reduce("max", &[2, 3], &["i2", "i3"])
        .unwrap();
    assert_eq!(small.fetch().unwrap().get(0), Scalar::F32(1.0));
}

#[test]
fn two_iterations_of_a_loop_fuse_into_fewer_kernels_than_two_fetches() {
    // One step: a row sum, broadcast back and subtracted, then `tanh`.
    let step = |h: &Var| -> Var {
        let sums = h.reindex_reduce("add", &[4], &["i0"]).unwrap();
        let back = sums.reindex(&[4, 8], &["i0"], None, &[]).unwrap();
        h.binary("sub", &back).unwrap().unary("tanh").unwrap()
    };
    let start = Tensor::splat(vec![4, 8], Scalar::F32(0.25));
    // Fetched after each iteration.
    let before = graph::stats();
    let mut h = Var::new(start.clone());
    for _ in 0..2 {
        h = step(&h);
        h.fetch().unwrap();
    }
    let separate = graph::stats().kernels - before.kernels;
    let separate_value = h.fetch().unwrap();
    // Fetched once, after both.
    let before = graph::stats();
    let mut h = Var::new(start);
    for _ in 0..2 {
        h = step(&h);
    }
    let together_value = h.fetch().unwrap();
    let together = graph::stats().kernels - before.kernels;
    assert_eq!(f32s(&separate_value), f32s(&together_value));
    assert!(
        together < separate,
        "{together} kernels fetched once against {separate} fetched per iteration"
    );
}

#[test]
fn a_repeated_loop_body_hits_the_cache() {
    let mut rng = Rng(5);
    let w = Var::new(random(&mut rng, &[16]));
    let mut x = Var::new(random(&mut rng, &[16]));
    // The first iteration compiles; the others, on new data of the same
    // shapes, take the compilation from the cache.
    x = x.binary("mul", &w).unwrap().unary("tanh").unwrap();
    x.fetch().unwrap();
    let before = graph::stats();
    for _ in 0..5 {
        x = x.binary("mul", &w).unwrap().unary("tanh").unwrap();
        x.fetch().unwrap();
    }
    let after = graph::stats();
    assert_eq!(after.compiles, before.compiles, "a loop body recompiled");
    assert_eq!(after.cache_hits - before.cache_hits, 5);
    assert_eq!(after.fetches - before.fetches, 5);
}

#[test]
fn pending_values_that_share_work_are_computed_by_one_fetch() {
    let x = Var::new(Tensor::splat(vec![8], Scalar::F32(2.0)));
    let shared = x.unary("exp").unwrap();
    let a = shared.unary("neg").unwrap();
    let b = shared.unary("abs").unwrap();
    let unrelated = x.unary("sqrt").unwrap();
    let before = graph::stats();
    a.fetch().unwrap();
    assert!(
        b.is_computed(),
        "a value sharing work with the fetch was left pending"
    );
    assert!(shared.is_computed(), "a held intermediate was not kept");
    assert!(!unrelated.is_computed(), "a value sharing nothing was computed");
    b.fetch().unwrap();
    assert_eq!(graph::stats().fetches - before.fetches, 1);
    graph::sync().unwrap();
    assert!(unrelated.is_computed());
}

#[test]
fn memory_is_freed_with_the_last_handle() {
    let data = Arc::new(Tensor::splat(vec![1024], Scalar::F32(1.0)));
    let x = Var::from_arc(Arc::clone(&data));
    let y = x.unary("exp").unwrap().unary("neg").unwrap();
    drop(x);
    // The pending `y` reads the data.
    assert!(Arc::strong_count(&data) > 1);
    let value = y.fetch().unwrap();
    // Computed, `y` holds its value only: what it was computed from is
    // freed.
    assert_eq!(Arc::strong_count(&data), 1);
    drop(y);
    assert_eq!(Arc::strong_count(&value), 1);
}

#[test]
fn a_dump_reproduces_the_fetch() {
    let mut rng = Rng(17);
    let x = Var::new(random(&mut rng, &[3, 5]));
    let w = Var::new(random(&mut rng, &[5]));
    let wb = w.reindex(&[3, 5], &["i1"], None, &[]).unwrap();
    let y = x
        .binary("mul", &wb)
        .unwrap()
        .reindex_reduce("max", &[3], &["i0"])
        .unwrap();
    let dir = std::env::temp_dir().join(format!("jitc-graph-dump-{}", std::process::id()));
    let path = graph::dump(&[&y], &dir).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        "// jitc run fetch.mlir --input @input0.npy --input @input1.npy"
    );
    let want = y.fetch().unwrap();
    // What `jitc run` does with the dump: parse it, read the inputs, run.
    let context = new_context().unwrap();
    let collector = DiagnosticCollector::attach(&context);
    let module = parse_module(&context, &text).unwrap_or_else(|| panic!("{:?}", collector.take()));
    let inputs: Vec<Value> = (0..2)
        .map(|k| Value::tensor(jitc_interp::npy::read(&dir.join(format!("input{k}.npy"))).unwrap()))
        .collect();
    let got = Interpreter::new(&module)
        .run("main", inputs, &mut StateStore::new())
        .unwrap();
    // The results are every held value the fetch computes (`wb` too), in
    // the order they were recorded: `y` last.
    assert_eq!(got.len(), 2);
    let Value::Tensor(got) = &got[1] else {
        panic!("a tensor")
    };
    same(got, &f32s(&want), "the dump's run");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_value_that_joins_a_fetch_brings_everything_it_needs() {
    // `p0` shares `b` with `p1`, and `p1` shares `a` with the fetched `w`:
    // `p1` joins, bringing `b`, and then `p0` joins through `b`.
    let x = Var::new(Tensor::splat(vec![4], Scalar::F32(4.0)));
    let b = x.unary("neg").unwrap();
    let p0 = b.unary("abs").unwrap();
    let a = x.unary("sqrt").unwrap();
    let w = a.unary("neg").unwrap();
    let p1 = a.binary("add", &b).unwrap();
    drop((b, a));
    assert_eq!(w.fetch().unwrap().get(0), Scalar::F32(-2.0));
    assert!(p1.is_computed() && p0.is_computed());
    assert_eq!(p1.fetch().unwrap().get(3), Scalar::F32(-2.0));
    assert_eq!(p0.fetch().unwrap().get(3), Scalar::F32(4.0));
}

#[test]
fn state_writes_are_deferred_and_committed_by_the_fetch_that_computes_them() {
    graph::set_state("w", Tensor::splat(vec![4], Scalar::F32(1.0))).unwrap();
    let gradient = Var::new(Tensor::splat(vec![4], Scalar::F32(0.5)));
    let rate = Var::new(Tensor::splat(vec![4], Scalar::F32(0.25)));
    // Two steps of gradient descent, recorded, nothing run.
    let before = graph::stats();
    for _ in 0..2 {
        let w = graph::read_state("w").unwrap();
        let step = gradient.binary("mul", &rate).unwrap();
        graph::write_state("w", &w.binary("sub", &step).unwrap()).unwrap();
    }
    assert_eq!(
        graph::get_state("w").unwrap().get(0),
        Scalar::F32(1.0),
        "committed before a fetch"
    );
    assert_eq!(graph::stats().fetches, before.fetches);
    // Reading sees the last write; fetching it commits both steps.
    let w = graph::read_state("w").unwrap();
    assert_eq!(w.fetch().unwrap().get(0), Scalar::F32(0.75));
    assert_eq!(graph::get_state("w").unwrap().get(3), Scalar::F32(0.75));
    assert_eq!(
        graph::stats().fetches - before.fetches,
        1,
        "the two steps ran as one fetch"
    );
    // A write of the wrong type is refused; an unknown name too.
    let wrong = Var::new(Tensor::splat(vec![3], Scalar::F32(0.0)));
    assert_eq!(
        graph::write_state("w", &wrong).unwrap_err().to_string(),
        "state 'w' is tensor<4xf32>, so it cannot take a tensor<3xf32>"
    );
    assert_eq!(
        graph::read_state("nope").unwrap_err().to_string(),
        "there is no state 'nope' (set it first with set_state)"
    );
}

#[test]
fn a_failed_fetch_commits_no_state() {
    graph::set_state("n", Tensor::splat(vec![2], Scalar::I32(7))).unwrap();
    let zero = Var::new(Tensor::splat(vec![2], Scalar::I32(0)));
    let n = graph::read_state("n").unwrap();
    // An integer division by zero fails the fetch that computes the write.
    graph::write_state("n", &n.binary("div", &zero).unwrap()).unwrap();
    assert!(
        graph::sync()
            .unwrap_err()
            .to_string()
            .contains("division by zero")
    );
    assert_eq!(graph::get_state("n").unwrap().get(0), Scalar::I32(7));
    // The failed write is dropped, not kept to fail every later fetch: the
    // program sees the committed value, and the next sync succeeds.
    drop(n);
    drop(zero);
    graph::sync().unwrap();
    let now = graph::read_state("n").unwrap();
    assert_eq!(now.fetch().unwrap().get(1), Scalar::I32(7));
    // A write the failed fetch did not compute is kept.
    graph::set_state("m", Tensor::splat(vec![2], Scalar::I32(1))).unwrap();
    let m = graph::read_state("m").unwrap();
    let bad = Var::new(Tensor::splat(vec![2], Scalar::I32(1)))
        .binary("div", &Var::new(Tensor::splat(vec![2], Scalar::I32(0))))
        .unwrap();
    graph::write_state("m", &m.binary("add", &m).unwrap()).unwrap();
    assert!(bad.fetch().is_err());
    drop(bad);
    graph::sync().unwrap();
    assert_eq!(graph::get_state("m").unwrap().get(0), Scalar::I32(2));
}

#[test]
fn the_interpreter_backend_is_the_oracle_for_a_fetch() {
    let mut rng = Rng(23);
    let data = random(&mut rng, &[5, 7]);
    let run = || {
        let x = Var::new(data.clone());
        let m = x.reindex_reduce("max", &[5], &["i0"]).unwrap();
        let shifted = x
            .binary("sub", &m.reindex(&[5, 7], &["i0"], None, &[]).unwrap())
            .unwrap();
        shifted.unary("exp").unwrap().fetch().unwrap()
    };
    graph::set_options(CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    })
    .unwrap();
    let compiled = run();
    graph::set_backend(graph::Backend::Interpreter).unwrap();
    let before = graph::stats();
    let interpreted = run();
    assert_eq!(
        graph::stats().kernels,
        before.kernels,
        "the interpreter ran kernels"
    );
    graph::set_backend(graph::Backend::Cpu).unwrap();
    same(&compiled, &f32s(&interpreted), "compiled against interpreted");
}

#[test]
fn a_failed_guard_fails_its_fetch_and_commits_nothing() {
    graph::set_state("guarded", Tensor::parse_literal("2xf32=1 2").unwrap()).unwrap();
    let x = Var::new(Tensor::parse_literal("f32=3").unwrap());
    let limit = Var::new(Tensor::parse_literal("f32=5").unwrap());
    let state = graph::read_state("guarded").unwrap();
    let doubled = state.binary("add", &state).unwrap();
    graph::write_state("guarded", &doubled).unwrap();
    let below = x.binary("lt", &limit).unwrap();
    let holds = graph::guard(&below, "x below 5").unwrap();
    assert_eq!(holds.fetch().unwrap().get(0), Scalar::I1(true));
    let above = x.binary("gt", &limit).unwrap();
    // The failing guard shares no node with the write, so fetch both.
    let fails = graph::guard(&above, "x above 5").unwrap();
    let read = graph::read_state("guarded").unwrap();
    let tripled = read.binary("add", &state).unwrap();
    graph::write_state("guarded", &tripled).unwrap();
    let error = graph::fetch(&[&fails, &tripled]).unwrap_err();
    assert!(
        matches!(&error, jitc_runtime::Error::Run(jitc_interp::Error::GuardFailed { reason, .. }) if reason == "x above 5"),
        "{error}"
    );
    // Neither write was committed: the first was never computed on its
    // own (it shares nothing with `holds`), the second's fetch failed.
    assert_eq!(f32s(&graph::get_state("guarded").unwrap()), [1.0, 2.0]);
    let e = graph::guard(&x, "not a condition").unwrap_err().to_string();
    assert!(e.contains("a guard's condition must be a rank-0 i1"), "{e}");
}

#[test]
fn a_staged_function_runs_on_new_inputs_without_recording() {
    let x = Var::new(Tensor::parse_literal("3xf32=1 2 3").unwrap());
    let w = Var::new(Tensor::parse_literal("3xf32=2 2 2").unwrap());
    // `half` is made inside the function: captured with its value.
    let half = Var::new(Tensor::parse_literal("3xf32=0.5 0.5 0.5").unwrap());
    let y = x.binary("mul", &w).unwrap().binary("add", &half).unwrap();
    let total = y.reindex_reduce("add", &[], &[]).unwrap();
    let zero = Var::new(Tensor::parse_literal("f32=0").unwrap());
    let positive = graph::guard(&total.binary("gt", &zero).unwrap(), "total is positive").unwrap();
    let staged = graph::stage(&[&x, &w], &[&y, &total, &positive], &StateBinding::default()).unwrap();
    assert!(staged.kernels() >= 1);
    let before = graph::stats();
    let a = Var::new(Tensor::parse_literal("3xf32=4 5 6").unwrap());
    let b = Var::new(Tensor::parse_literal("3xf32=1 1 1").unwrap());
    let out = staged.call(&[&a, &b]).unwrap();
    assert_eq!(f32s(&out[0].fetch().unwrap()), [4.5, 5.5, 6.5]);
    assert_eq!(f32s(&out[1].fetch().unwrap()), [16.5]);
    assert_eq!(
        graph::stats().compiles,
        before.compiles,
        "a call compiles nothing"
    );
    // The guard fails on inputs that make the total negative.
    let negative = Var::new(Tensor::parse_literal("3xf32=-4 -5 -6").unwrap());
    let error = staged.call(&[&negative, &b]).unwrap_err().to_string();
    assert!(error.contains("total is positive"), "{error}");
    // Inputs of another type, or recorded ones, are refused.
    let short = Var::new(Tensor::parse_literal("2xf32=1 2").unwrap());
    let e = staged.call(&[&short, &b]).unwrap_err().to_string();
    assert!(
        e.contains("input 0 of the staged function is tensor<2xf32>, not tensor<3xf32>"),
        "{e}"
    );
    let pending = a.unary("neg").unwrap();
    let e = graph::stage(&[&pending], &[&pending], &StateBinding::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("is a recorded op, not data"), "{e}");
}

/// One trace of `path(x)`: if sum(x) > 0 then exp(x) else neg(x) - 1, then
/// times a captured 2, with each op at the site of its "line".
fn record_path(x: &Var, taken: bool) -> (Var, Var) {
    let at = |line: &str| graph::set_site(Some(line)).unwrap();
    at("model.py:1");
    let zero = graph::full(&[], ElementType::F32, 0.0).unwrap();
    let sum = x.reindex_reduce("add", &[], &[]).unwrap();
    let positive = sum.binary("gt", &zero).unwrap();
    let decision = graph::decision(&positive, taken, "branch at model.py:1").unwrap();
    let y = if taken {
        at("model.py:2");
        x.unary("exp").unwrap()
    } else {
        at("model.py:3");
        let one = graph::full(&[3], ElementType::F32, 1.0).unwrap();
        x.unary("neg").unwrap().binary("sub", &one).unwrap()
    };
    at("model.py:4");
    let two = Var::new(Tensor::parse_literal("3xf32=2 2 2").unwrap());
    let out = y.binary("mul", &two).unwrap();
    graph::set_site(None).unwrap();
    (out, decision)
}

#[test]
fn traces_merged_into_one_graph_take_each_path() {
    let x = Var::new(Tensor::parse_literal("3xf32=1 2 3").unwrap());
    let (up, up_decision) = record_path(&x, true);
    let (down, down_decision) = record_path(&x, false);
    let merged = graph::stage_merged(
        &[&x],
        &[
            (vec![&up], vec![&up_decision]),
            (vec![&down], vec![&down_decision]),
        ],
        &StateBinding::default(),
    )
    .unwrap();
    for (literal, want) in [
        (
            "3xf32=1 2 3",
            [1f32.exp() * 2.0, 2f32.exp() * 2.0, 3f32.exp() * 2.0],
        ),
        ("3xf32=-1 -2 -3", [0.0, 2.0, 4.0]),
    ] {
        let input = Var::new(Tensor::parse_literal(literal).unwrap());
        let got = f32s(&merged.call(&[&input]).unwrap()[0].fetch().unwrap());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "{literal}: {got:?} against {want:?}"
            );
        }
    }
    // One trace alone is its path: the other way fails its decision.
    let (only, only_decision) = record_path(&x, true);
    let single = graph::stage_merged(
        &[&x],
        &[(vec![&only], vec![&only_decision])],
        &StateBinding::default(),
    )
    .unwrap();
    let negative = Var::new(Tensor::parse_literal("3xf32=-1 -2 -3").unwrap());
    let error = single.call(&[&negative]).unwrap_err().to_string();
    assert!(error.contains("branch at model.py:1"), "{error}");
    // Traces with nothing in common before they differ do not merge.
    graph::set_site(Some("other.py:1")).unwrap();
    let other = x.unary("tanh").unwrap();
    graph::set_site(None).unwrap();
    let (up, up_decision) = record_path(&x, true);
    let error = graph::stage_merged(
        &[&x],
        &[(vec![&up], vec![&up_decision]), (vec![&other], vec![])],
        &StateBinding::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("the traces do not merge"), "{error}");
}

/// A staged function reads its bound inputs with `meta.state_read` and
/// writes its bound outputs with `meta.state_write` (an object's
/// attributes, as JANUS stages them); a call still takes and gives them in
/// their places, and a failed guard gives nothing.
#[test]
fn staged_state_is_read_and_written_by_name() {
    let x = Var::new(Tensor::parse_literal("3xf32=1 2 3").unwrap());
    let h = Var::new(Tensor::parse_literal("3xf32=10 20 30").unwrap());
    let next = h.binary("add", &x).unwrap();
    let total = next.reindex_reduce("add", &[], &[]).unwrap();
    let zero = Var::new(Tensor::parse_literal("f32=0").unwrap());
    let positive = graph::guard(&total.binary("gt", &zero).unwrap(), "total is positive").unwrap();
    let state = StateBinding {
        reads: vec![(1, "self.h".to_owned())],
        writes: vec![(0, "self.h".to_owned())],
    };
    let staged = graph::stage(&[&x, &h], &[&next, &total, &positive], &state).unwrap();
    let text = staged.text();
    assert!(
        text.contains(r#""meta.state_read"() {name = "self.h"} : () -> tensor<3xf32>"#),
        "{text}"
    );
    assert!(text.contains(r#""meta.state_write"("#), "{text}");
    // The captured zero is the only other argument.
    assert!(
        text.contains("func.func @main(%a0: tensor<3xf32>, %a2: tensor<f32>) -> (tensor<f32>, tensor<i1>)"),
        "{text}"
    );
    let a = Var::new(Tensor::parse_literal("3xf32=4 5 6").unwrap());
    let out = staged.call(&[&a, &h]).unwrap();
    assert_eq!(out.len(), 3);
    assert_eq!(f32s(&out[0].fetch().unwrap()), [14.0, 25.0, 36.0]);
    assert_eq!(f32s(&out[1].fetch().unwrap()), [75.0]);
    let negative = Var::new(Tensor::parse_literal("3xf32=-40 -50 -60").unwrap());
    let error = staged.call(&[&negative, &h]).unwrap_err().to_string();
    assert!(error.contains("total is positive"), "{error}");
    // A name with a quote is spelled with `'` in the module, and the call
    // reads and writes the state by that spelling.
    let odd = StateBinding {
        reads: vec![(1, "self.a\"b".to_owned())],
        writes: vec![(0, "self.a\"b".to_owned())],
    };
    let staged = graph::stage(&[&x, &h], &[&next, &total], &odd).unwrap();
    assert!(
        staged.text().contains(r#"{name = "self.a'b"}"#),
        "{}",
        staged.text()
    );
    assert_eq!(staged.state().reads, [(1, "self.a'b".to_owned())]);
    let out = staged.call(&[&a, &h]).unwrap();
    assert_eq!(f32s(&out[0].fetch().unwrap()), [14.0, 25.0, 36.0]);
    // State nothing reads is not read: its input stays an argument.
    let unread = StateBinding {
        reads: vec![(0, "self.x".to_owned()), (1, "self.h".to_owned())],
        writes: vec![],
    };
    let doubled = x.binary("add", &x).unwrap();
    let staged = graph::stage(&[&x, &h], &[&doubled], &unread).unwrap();
    assert_eq!(staged.state().reads, [(0, "self.x".to_owned())]);
    assert!(!staged.text().contains("self.h"), "{}", staged.text());
    assert_eq!(
        f32s(&staged.call(&[&a, &h]).unwrap()[0].fetch().unwrap()),
        [8.0, 10.0, 12.0]
    );
    // A name read as one type and written as another stays a result.
    let wide = graph::full(&[6], ElementType::F32, 1.0).unwrap();
    let regrown = wide
        .binary("add", &graph::full(&[6], ElementType::F32, 2.0).unwrap())
        .unwrap();
    let staged = graph::stage(&[&x, &h], &[&regrown, &total], &state).unwrap();
    assert!(!staged.text().contains("meta.state_write"), "{}", staged.text());
    assert_eq!(
        f32s(&staged.call(&[&x, &h]).unwrap()[0].fetch().unwrap()),
        [3.0; 6]
    );
    // A binding out of range, or of one name twice, is refused.
    for (bad, want) in [
        (
            StateBinding {
                reads: vec![(2, "s".to_owned())],
                writes: vec![],
            },
            "state 's' is bound to input 2, but there are 2 inputs",
        ),
        (
            StateBinding {
                reads: vec![(0, "s".to_owned()), (1, "s".to_owned())],
                writes: vec![],
            },
            "input 1 or state 's' is bound twice among the inputs",
        ),
        (
            StateBinding {
                reads: vec![],
                writes: vec![(0, String::new())],
            },
            "the state bound to output 0 has no name",
        ),
        // Two names the module would spell alike.
        (
            StateBinding {
                reads: vec![(0, "a\"b".to_owned()), (1, "a'b".to_owned())],
                writes: vec![],
            },
            "input 1 or state 'a'b' is bound twice among the inputs",
        ),
    ] {
        let error = graph::stage(&[&x, &h], &[&next], &bad).unwrap_err().to_string();
        assert!(error.contains(want), "{error}");
    }
}

#[test]
fn the_cache_of_compiled_fetches_keeps_the_most_recently_used() {
    // Each length is another shape of graph, so another compilation (the
    // interpreter's backend: compiling is parsing).
    graph::set_backend(graph::Backend::Interpreter).unwrap();
    let sum = |n: usize| {
        let x = graph::full(&[n], ElementType::F32, 1.0).unwrap();
        let y = x.binary("add", &x).unwrap();
        graph::fetch(&[&y]).unwrap();
    };
    let lengths = graph::CACHED_FETCHES + 8;
    for n in 1..=lengths {
        sum(n);
    }
    assert_eq!(graph::cached_fetches(), graph::CACHED_FETCHES);
    // The latest length is kept; the first was dropped, and compiles again.
    let before = graph::stats();
    sum(lengths);
    assert_eq!(graph::stats().cache_hits, before.cache_hits + 1);
    sum(1);
    assert_eq!(graph::stats().compiles, before.compiles + 1);
    assert_eq!(graph::cached_fetches(), graph::CACHED_FETCHES);
    graph::set_backend(graph::Backend::Cpu).unwrap();
}

#[test]
fn a_held_value_that_fails_fails_only_its_own_fetch() {
    let a = Var::new(Tensor::splat(vec![3], Scalar::I32(5)));
    let zero = Var::new(Tensor::splat(vec![3], Scalar::I32(0)));
    let x = a.binary("add", &a).unwrap();
    // `bad` shares `x` with `good`, so a fetch of `good` computes it too.
    let bad = x.binary("div", &zero).unwrap();
    let good = x.binary("mul", &x).unwrap();
    let before = graph::stats();
    assert_eq!(good.fetch().unwrap().get(2), Scalar::I32(100));
    // The shared fetch failed, and `good` was computed alone.
    assert_eq!(graph::stats().fetches, before.fetches + 1);
    assert_eq!(graph::stats().compiles, before.compiles + 2);
    let error = bad.fetch().unwrap_err().to_string();
    assert!(error.contains("division by zero"), "{error}");
    // A value that fails itself still fails.
    let worse = a.binary("div", &zero).unwrap();
    assert!(
        worse
            .fetch()
            .unwrap_err()
            .to_string()
            .contains("division by zero")
    );
}

#[test]
fn a_fetch_sharing_work_with_a_failing_state_write_fails_and_drops_it() {
    // As an optimizer's update would: the loss and the write share `x`.
    graph::set_state("shared.w", Tensor::splat(vec![2], Scalar::I32(3))).unwrap();
    let zero = Var::new(Tensor::splat(vec![2], Scalar::I32(0)));
    let w = graph::read_state("shared.w").unwrap();
    let x = w.binary("add", &w).unwrap();
    graph::write_state("shared.w", &x.binary("div", &zero).unwrap()).unwrap();
    let loss = x.binary("mul", &x).unwrap();
    let error = loss.fetch().unwrap_err().to_string();
    assert!(error.contains("division by zero"), "{error}");
    // The write was dropped, all or nothing: the next step reads the
    // committed value and succeeds.
    drop((w, x, loss));
    let w = graph::read_state("shared.w").unwrap();
    assert_eq!(w.fetch().unwrap().get(0), Scalar::I32(3));
    graph::write_state("shared.w", &w.binary("add", &w).unwrap()).unwrap();
    graph::sync().unwrap();
    assert_eq!(graph::get_state("shared.w").unwrap().get(1), Scalar::I32(6));
}

#[test]
fn a_failing_held_value_leaves_the_state_writes_that_joined_to_commit() {
    graph::set_state("joined.w", Tensor::splat(vec![2], Scalar::I32(3))).unwrap();
    let zero = Var::new(Tensor::splat(vec![2], Scalar::I32(0)));
    let w = graph::read_state("joined.w").unwrap();
    let x = w.binary("add", &w).unwrap();
    let bad = x.binary("div", &zero).unwrap();
    graph::write_state("joined.w", &x).unwrap();
    let loss = x.binary("mul", &x).unwrap();
    assert_eq!(loss.fetch().unwrap().get(0), Scalar::I32(36));
    // The write that joined was computed with the loss and committed.
    assert_eq!(graph::get_state("joined.w").unwrap().get(0), Scalar::I32(6));
    assert!(bad.fetch().unwrap_err().to_string().contains("division by zero"));
}

#[test]
fn a_long_chain_of_recorded_ops_drops_without_recursion() {
    // A thread with a small stack: dropping by recursion took a frame per
    // node, and 100,000 nodes overflowed it.
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let one = Var::new(Tensor::splat(vec![4], Scalar::F32(1.0)));
            let mut y = one.clone();
            for _ in 0..100_000 {
                y = y.binary("add", &one).unwrap();
            }
            drop(y);
            // And the graph still works.
            let z = one.binary("add", &one).unwrap();
            assert_eq!(z.fetch().unwrap().get(0), Scalar::F32(2.0));
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn sync_commits_the_state_writes_when_another_held_value_fails() {
    graph::set_state("sync.w", Tensor::splat(vec![2], Scalar::F32(0.0))).unwrap();
    // A value that fails, held where the user may not reach it (a staged
    // function's profile, say).
    let bad = Var::new(Tensor::splat(vec![1], Scalar::I32(5)))
        .binary("div", &Var::new(Tensor::splat(vec![1], Scalar::I32(0))))
        .unwrap();
    let w = graph::read_state("sync.w").unwrap();
    graph::write_state(
        "sync.w",
        &w.binary("add", &Var::new(Tensor::splat(vec![2], Scalar::F32(1.0))))
            .unwrap(),
    )
    .unwrap();
    let error = graph::sync().unwrap_err().to_string();
    assert!(error.contains("division by zero"), "{error}");
    assert_eq!(graph::get_state("sync.w").unwrap().get(0), Scalar::F32(1.0));
    drop(bad);
    graph::sync().unwrap();
}
