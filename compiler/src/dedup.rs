//! Kernel deduplication: fused kernels (and row chains) that are the same
//! function under another name are compiled once.
//!
//! Unrolling a loop (`meta-unroll`) clones its body once per iteration, and
//! `meta-fuse` then outlines each clone into kernels of its own: a 32-step
//! RNN becomes 96 kernels of 3 distinct bodies (the step index is an
//! argument, not part of the code). Each kernel would go through lowering
//! and LLVM on its own, which is most of a cold compile. Here kernels are
//! compared by their printed text with their own name left out; every
//! call of a copy is pointed at the first of its kind, and the copies are
//! erased.
//!
//! Locations are left out of the comparison (a frontend writes each op on
//! a line of its own, so copies never share them), except for kernels that
//! report a line when they fail: an integer `div` or `mod` (a zero divisor
//! is reported at its op), every kernel in the bounds-checked mode
//! (accesses are reported at theirs), and kernels of dynamic shape (a call
//! whose sizes disagree runs in the interpreter, which reports at the op). Those merge only with copies at the
//! same places, so every failure is reported where it happened.
//!
//! A row chain names its stages (`meta.chain`), so the compilers merge
//! kernels before chains are made, and chains of the same stages after;
//! each time, the merging repeats until nothing changes.

use crate::rewrite;
use jitc_dialect::ops::string_attribute;
use melior::ir::{
    BlockLike, Module,
    operation::{OperationLike, OperationPrintingFlags, OperationRef},
};
use std::collections::HashMap;

/// Merges the `meta.fused` functions of `module` that differ only in name
/// (and, for kernels that report no line, in locations); `check_bounds`
/// is the bounds-checked mode. Returns how many were erased.
pub fn dedup_kernels(module: &Module, check_bounds: bool) -> usize {
    let mut erased = 0;
    loop {
        let copies = copies(module, check_bounds);
        if copies.is_empty() {
            return erased;
        }
        let retargeted = retarget(module, &copies);
        let mut progress = false;
        for op in kernels(module) {
            // A copy some use of which MLIR could not rewrite stays.
            if name(op).is_some_and(|n| retargeted.iter().any(|r| r == n)) {
                rewrite::erase(op);
                erased += 1;
                progress = true;
            }
        }
        if !progress {
            return erased;
        }
    }
}

/// The module's top-level `meta.fused` functions, in order.
fn kernels<'c, 'a>(module: &'a Module<'c>) -> Vec<OperationRef<'c, 'a>> {
    top_level(module)
        .into_iter()
        .filter(|op| is_kernel(*op))
        .collect()
}

fn is_kernel(op: OperationRef) -> bool {
    op.name().as_string_ref().as_str() == Ok("func.func") && op.has_attribute("meta.fused")
}

fn name<'a>(op: OperationRef<'_, 'a>) -> Option<&'a str> {
    op.attribute("sym_name").ok().and_then(string_attribute)
}

/// Each kernel that is a copy of an earlier one, with that one's name.
fn copies(module: &Module, check_bounds: bool) -> HashMap<String, String> {
    let mut first: HashMap<String, String> = HashMap::new();
    let mut copies = HashMap::new();
    let plain = texts(module, false);
    let mut located: Option<Vec<String>> = None;
    for (index, op) in top_level(module).into_iter().enumerate() {
        if !is_kernel(op) {
            continue;
        }
        let Some(own) = name(op) else { continue };
        let text = if check_bounds || divides_integers(op) || dynamic(op) {
            let located = located.get_or_insert_with(|| texts(module, true));
            &located[index]
        } else {
            &plain[index]
        };
        // The function's own name is its first symbol: leave it out.
        let body = text.replacen(&format!("@{own}("), "@(", 1);
        match first.get(&body) {
            Some(original) => {
                copies.insert(own.to_owned(), original.clone());
            }
            None => {
                first.insert(body, own.to_owned());
            }
        }
    }
    copies
}

/// The ops of `module`'s body, in order.
fn top_level<'c, 'a>(module: &'a Module<'c>) -> Vec<OperationRef<'c, 'a>> {
    let mut out = Vec::new();
    let mut next = module.body().first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        out.push(op);
    }
    out
}

/// The text of each op of `module`'s body, in order, printed with their
/// locations when `located`.
///
/// The module is printed once and cut at its ops. Printing one op of it
/// alone would cost as much as printing the module (MLIR names values and
/// attribute aliases from the top, so that texts compare), which made this
/// quadratic in the number of kernels. A line of the body's ops starts
/// after two spaces of indentation (deeper lines are nested, `}` closes an
/// op, and `^` labels a block of its region), and the aliases the texts
/// use are the module's, so two texts are equal when their ops are. If
/// the cut does not find one text per op, each op is printed alone.
fn texts(module: &Module, located: bool) -> Vec<String> {
    let flags = || OperationPrintingFlags::new().enable_debug_info(located, false);
    let ops = top_level(module);
    let whole = module
        .as_operation()
        .to_string_with_flags(flags())
        .unwrap_or_default();
    let mut texts: Vec<String> = Vec::with_capacity(ops.len());
    let mut inside = false;
    for line in whole.lines() {
        if !inside {
            inside = line.starts_with("module");
            continue;
        }
        if !line.starts_with(' ') {
            // The module's closing brace: what follows is not its body.
            break;
        }
        // (`^bb1:`, a block's label in a body op's region, is printed at
        // the body's indentation too.)
        let starts_op = line
            .strip_prefix("  ")
            .is_some_and(|rest| rest.chars().next().is_some_and(|c| !matches!(c, ' ' | '}' | '^')));
        if starts_op {
            texts.push(String::new());
        }
        if let Some(text) = texts.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    if texts.len() == ops.len() {
        return texts;
    }
    ops.iter()
        .map(|op| {
            op.to_string_with_flags(flags())
                .unwrap_or_else(|_| op.to_string())
        })
        .collect()
}

/// Whether `kernel` has a dimension known at run time only: a call may
/// then decline and run it in the interpreter, which reports what fails
/// at the op's line.
fn dynamic(kernel: OperationRef) -> bool {
    kernel
        .attribute("function_type")
        .is_ok_and(|t| t.to_string().contains('?'))
}

/// Whether `kernel` divides integers (a zero divisor is reported at the
/// op's line).
fn divides_integers(kernel: OperationRef) -> bool {
    use melior::ir::{ValueLike, r#type::ShapedTypeLike};
    jitc_dialect::verify::collect_ops(kernel).into_iter().any(|op| {
        op.name().as_string_ref().as_str() == Ok("meta.binary")
            && op
                .attribute("kind")
                .ok()
                .and_then(string_attribute)
                .is_some_and(|kind| kind == "div" || kind == "mod")
            && op.result(0).ok().is_none_or(|result| {
                let element = melior::ir::r#type::RankedTensorType::try_from(result.r#type())
                    .map(|t| t.element())
                    .unwrap_or(result.r#type());
                jitc_dialect::kinds::ElementType::from_type(element).is_none_or(|e| !e.is_float())
            })
    })
}

/// Points every use of a copy's symbol (calls, a chain's list of stages)
/// at its original; returns the copies whose uses all were.
fn retarget(module: &Module, copies: &HashMap<String, String>) -> Vec<String> {
    copies
        .iter()
        .filter(|(copy, original)| rewrite::replace_symbol_uses(copy, original, module.as_operation()))
        .map(|(copy, _)| copy.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel applying `kind`, every location given: kernels of one kind
    /// are copies whatever their name.
    fn kernel(name: &str, kind: &str) -> String {
        format!(
            r#"func.func private @{name}(%x: tensor<8xf32> loc("k.mlir":1:2)) -> tensor<8xf32> attributes {{meta.fused}} {{
  %e = "meta.unary"(%x) {{kind = "{kind}"}} : (tensor<8xf32>) -> tensor<8xf32> loc("k.mlir":2:8)
  return %e : tensor<8xf32> loc("k.mlir":3:3)
}} loc("k.mlir":1:1)
"#
        )
    }

    /// `@main` calling each kernel in turn on the last one's result, then
    /// the kernels.
    fn module_of(kernels: &[(&str, &str)]) -> String {
        let mut text = String::from("func.func @main(%v0: tensor<8xf32>) -> tensor<8xf32> {\n");
        for (k, (name, _)) in kernels.iter().enumerate() {
            text.push_str(&format!(
                "  %v{} = func.call @{name}(%v{k}) : (tensor<8xf32>) -> tensor<8xf32>\n",
                k + 1
            ));
        }
        text.push_str(&format!("  return %v{} : tensor<8xf32>\n}}\n", kernels.len()));
        for (name, kind) in kernels {
            text.push_str(&kernel(name, kind));
        }
        text
    }

    #[test]
    fn copies_are_merged_and_their_calls_retargeted() {
        let context = crate::new_context().unwrap();
        let module = crate::parse_module(
            &context,
            &module_of(&[("k0", "exp"), ("k1", "exp"), ("k2", "tanh")]),
        )
        .unwrap();
        assert_eq!(dedup_kernels(&module, false), 1);
        let text = module.as_operation().to_string();
        assert!(!text.contains("@k1("), "{text}");
        assert_eq!(text.matches("call @k0(").count(), 2, "{text}");
        assert!(text.contains("call @k2(") && text.contains("@k2("), "{text}");
        assert!(crate::verify(&module).is_ok());
    }

    /// A kernel reading `x` through the reindex map `map`.
    fn reindexing(name: &str, map: &str) -> String {
        format!(
            r#"func.func private @{name}(%x: tensor<8xf32>) -> tensor<8xf32> attributes {{meta.fused}} {{
  %r = "meta.reindex"(%x) {{indices = affine_map<(d0) -> ({map})>}} : (tensor<8xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}}
"#
        )
    }

    #[test]
    fn kernels_that_differ_in_a_map_stay_apart() {
        // Printed in the module, maps are named by aliases (#map, #map1)
        // the module defines: one name per map, so the two kernels' texts
        // differ.
        let mut source = module_of(&[("k0", "exp"), ("k1", "exp"), ("k2", "exp")])
            .split("func.func private")
            .next()
            .unwrap()
            .to_owned();
        source.push_str(&reindexing("k0", "7 - d0"));
        source.push_str(&reindexing("k1", "d0"));
        source.push_str(&reindexing("k2", "7 - d0"));
        let context = crate::new_context().unwrap();
        let module = crate::parse_module(&context, &source).unwrap_or_else(|| panic!("{source}"));
        // One text per op, each naming its own function.
        let ops = top_level(&module);
        let cut = texts(&module, false);
        assert_eq!(cut.len(), ops.len());
        for (op, text) in ops.iter().zip(&cut) {
            let own = name(*op).unwrap();
            assert!(text.trim_start().starts_with("func.func") && text.contains(&format!("@{own}(")));
        }
        assert_eq!(dedup_kernels(&module, false), 1);
        let text = module.as_operation().to_string();
        assert!(text.contains("@k1(") && !text.contains("@k2("), "{text}");
    }

    #[test]
    fn a_function_of_several_blocks_is_cut_as_one_text() {
        // Block labels print at the body's indentation.
        let mut source = String::from(
            "func.func @main(%x: tensor<8xf32>, %c: i1) -> tensor<8xf32> {\n  cf.cond_br %c, ^bb1, ^bb2\n\
             ^bb1:\n  %y = func.call @k0(%x) : (tensor<8xf32>) -> tensor<8xf32>\n  return %y : tensor<8xf32>\n\
             ^bb2:\n  %z = func.call @k1(%x) : (tensor<8xf32>) -> tensor<8xf32>\n  return %z : tensor<8xf32>\n}\n",
        );
        source.push_str(&kernel("k0", "exp"));
        source.push_str(&kernel("k1", "exp"));
        let context = crate::new_context().unwrap();
        let module = crate::parse_module(&context, &source).unwrap_or_else(|| panic!("{source}"));
        let cut = texts(&module, false);
        assert_eq!(cut.len(), 3);
        // Cut from the module's print (indented), not printed op by op.
        assert!(
            cut[0].starts_with("  func.func @main") && cut[0].contains("^bb2:"),
            "{}",
            cut[0]
        );
        assert_eq!(dedup_kernels(&module, false), 1);
    }

    #[test]
    fn kernels_that_report_lines_merge_only_at_the_same_places() {
        let context = crate::new_context().unwrap();
        let moved = |source: String| source.replacen(r#"loc("k.mlir":2:8)"#, r#"loc("k.mlir":9:8)"#, 1);
        // A kernel that reports no line merges with its copy elsewhere...
        let module =
            crate::parse_module(&context, &moved(module_of(&[("k0", "exp"), ("k1", "exp")]))).unwrap();
        assert_eq!(dedup_kernels(&module, false), 1);
        // ...but not in the bounds-checked mode, whose accesses report
        // their lines,
        let module =
            crate::parse_module(&context, &moved(module_of(&[("k0", "exp"), ("k1", "exp")]))).unwrap();
        assert_eq!(dedup_kernels(&module, true), 0);
        let module = crate::parse_module(&context, &module_of(&[("k0", "exp"), ("k1", "exp")])).unwrap();
        assert_eq!(dedup_kernels(&module, true), 1);
        // ...nor when it divides integers (a zero divisor is reported at
        // the op).
        let divide = |source: String| {
            source.replace("tensor<8xf32>", "tensor<8xi32>").replace(
                r#""meta.unary"(%x) {kind = "exp"} : (tensor<8xi32>)"#,
                r#""meta.binary"(%x, %x) {kind = "div"} : (tensor<8xi32>, tensor<8xi32>)"#,
            )
        };
        let source = divide(moved(module_of(&[("k0", "exp"), ("k1", "exp")])));
        let module = crate::parse_module(&context, &source).unwrap_or_else(|| panic!("{source}"));
        assert_eq!(dedup_kernels(&module, false), 0);
        let module =
            crate::parse_module(&context, &divide(module_of(&[("k0", "exp"), ("k1", "exp")]))).unwrap();
        assert_eq!(dedup_kernels(&module, false), 1);
    }
}
