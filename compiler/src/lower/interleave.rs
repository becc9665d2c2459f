//! Interleaved vector loops for kernels of long-latency math (CPU).
//!
//! LLVM's loop vectorizer turns a kernel's innermost loop into one vector
//! of the target's width per iteration, and for a loop body as long as a
//! polynomial `tanh` or `exp` its cost model keeps it that way: each
//! iteration is then one chain of dependent instructions about a hundred
//! deep, and the out-of-order window holds only two or three of them, so
//! the core waits on latencies. Asking for two vectors per iteration
//! (`llvm.loop.interleave.count = 2`) gives it two independent chains to
//! overlap: layer norm + tanh-GELU's GELU kernel over (8192, 1024) went
//! from 16.2 to 12.7 ms on one thread (`docs/benchmarks.md`). Forcing it
//! for every loop (LLVM's `-force-vector-interleave=2`) slowed the
//! register-tiled contractions, whose tiles already fill the registers, so
//! only kernels that [`wants`] get it: fast math (where `exp`, `log`,
//! `tanh` and `sigmoid` on f32 are jitc's own polynomials, which LLVM
//! vectorizes; exactly they are libm calls), at least one of those, and
//! no reduction (whose loops LLVM already interleaves by its own cost
//! model; softmax's `exp` and sum measured no better forced to two).
//!
//! [`annotate`] runs on the kernels in the LLVM dialect, after `scf` became
//! branches: in each such kernel's function, every innermost loop's
//! back-edge (a `llvm.br` to a block no later than its own, with no other
//! loop's header between them) gets the attribute
//! `loop_annotation = #llvm.loop_annotation<interleave =
//! #llvm.loop_interleave<count = 2 : i32>>`, which MLIR translates into
//! the loop's `llvm.loop` metadata. A loop LLVM cannot interleave (an
//! exact reduction) is left as it was.

use super::MathMode;
use crate::Error;
use jitc_dialect::{
    kinds::{ElementType, UnaryKind},
    ops::{ReindexReduceOp, UnaryOp},
};
use melior::{
    Context,
    ir::{Attribute, BlockLike, BlockRef, Module, OperationRef, RegionLike, operation::OperationLike},
};
use std::collections::HashSet;

/// Vectors per iteration asked of the loop vectorizer.
const COUNT: u32 = 2;

/// Whether the kernel whose body is `body` gets interleaved loops under
/// `math`: fast math, some f32 `exp`, `log`, `tanh` or `sigmoid`, and no
/// reduction.
pub(super) fn wants(body: BlockRef, math: MathMode) -> bool {
    if math != MathMode::Fast {
        return false;
    }
    let mut next = body.first_operation();
    let mut found = false;
    while let Some(op) = next {
        next = op.next_in_block();
        // A reduction's loop LLVM interleaves by its own choice (often
        // more than two, to break the chain of additions); asking for two
        // could only lower it. Softmax's `exp` with its sum measured no
        // better.
        if ReindexReduceOp::cast(op).is_some() {
            return false;
        }
        if let Some(unary) = UnaryOp::cast(op)
            && matches!(
                unary.kind(),
                Some(UnaryKind::Exp | UnaryKind::Log | UnaryKind::Tanh | UnaryKind::Sigmoid)
            )
            && unary.input().and_then(super::element_of) == Some(ElementType::F32)
        {
            found = true;
        }
    }
    found
}

/// Marks the innermost loops of the functions `names` of `module` (in the
/// LLVM dialect) to be interleaved; returns how many loops it marked.
pub(crate) fn annotate(context: &Context, module: &Module, names: &[String]) -> Result<usize, Error> {
    if names.is_empty() {
        return Ok(0);
    }
    let names: HashSet<&str> = names.iter().map(String::as_str).collect();
    let annotation = Attribute::parse(
        context,
        &format!("#llvm.loop_annotation<interleave = #llvm.loop_interleave<count = {COUNT} : i32>>"),
    )
    .ok_or_else(|| Error::Codegen("the loop annotation does not parse".into()))?;
    let mut marked = 0;
    let mut next = module.body().first_operation();
    while let Some(function) = next {
        next = function.next_in_block();
        let named = function
            .attribute("sym_name")
            .ok()
            .and_then(jitc_dialect::ops::string_attribute);
        if function.name().as_string_ref().as_str() != Ok("llvm.func")
            || !named.is_some_and(|n| names.contains(n))
        {
            continue;
        }
        for latch in innermost_back_edges(function)? {
            jitc_dialect::ops::set_attribute(latch, "loop_annotation", annotation);
            marked += 1;
        }
    }
    Ok(marked)
}

/// The branches that close the innermost loops of `function`: in its
/// blocks' order, a `llvm.br` whose successor is its own block or an
/// earlier one (the loop's header), with no other loop's header after
/// that header and up to the branch.
fn innermost_back_edges<'c, 'a>(function: OperationRef<'c, 'a>) -> Result<Vec<OperationRef<'c, 'a>>, Error> {
    let region = function
        .region(0)
        .map_err(|_| Error::Codegen("a function without a body".into()))?;
    let mut blocks = Vec::new();
    let mut block = region.first_block();
    while let Some(b) = block {
        block = b.next_in_region();
        blocks.push(b);
    }
    let position = |b: BlockRef| blocks.iter().position(|x| x.to_raw().ptr == b.to_raw().ptr);
    // (header, latch, branch) of each back-edge.
    let mut edges = Vec::new();
    for (latch, b) in blocks.iter().enumerate() {
        let Some(branch) = b.terminator() else { continue };
        if branch.name().as_string_ref().as_str() != Ok("llvm.br") {
            continue;
        }
        let target = branch
            .successor(0)
            .map_err(|_| Error::Codegen("a branch without a successor".into()))?;
        if let Some(header) = position(target).filter(|&h| h <= latch) {
            edges.push((header, latch, branch));
        }
    }
    Ok(edges
        .iter()
        .filter(|&&(header, latch, _)| {
            !edges
                .iter()
                .any(|&(other, _, _)| other > header && other <= latch)
        })
        .map(|&(_, _, branch)| branch)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function `@name` of one loop, whose back-edge carries `{mark}`.
    fn one_loop(name: &str, mark: &str) -> String {
        format!(
            r#"llvm.func @{name}(%n: i64) {{
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  llvm.br ^h(%c0 : i64)
^h(%i: i64):
  %more = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more, ^b, ^e
^b:
  %i1 = llvm.add %i, %c1 : i64
  llvm.br ^h(%i1 : i64) {{{mark}}}
^e:
  llvm.return
}}
"#
        )
    }

    /// `@nest`: an outer loop around an inner one; `@flat`: one loop;
    /// `@other`: one loop, not named to `annotate`.
    fn module_text() -> String {
        let nest = r#"
llvm.func @nest(%n: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  llvm.br ^outer(%c0 : i64)
^outer(%i: i64):
  %more = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more, ^inner_entry, ^done
^inner_entry:
  llvm.br ^inner(%c0 : i64)
^inner(%j: i64):
  %more_j = llvm.icmp "slt" %j, %n : i64
  llvm.cond_br %more_j, ^inner_body, ^outer_latch
^inner_body:
  %j1 = llvm.add %j, %c1 : i64
  llvm.br ^inner(%j1 : i64) {inner}
^outer_latch:
  %i1 = llvm.add %i, %c1 : i64
  llvm.br ^outer(%i1 : i64) {outer}
^done:
  llvm.return
}
"#;
        format!("{nest}{}{}", one_loop("flat", "flat"), one_loop("other", "other"))
    }

    #[test]
    fn only_the_innermost_loops_of_the_named_functions_are_marked() {
        let context = crate::new_context().unwrap();
        let module = Module::parse(&context, &module_text()).unwrap();
        let marked = annotate(&context, &module, &["nest".to_owned(), "flat".to_owned()]).unwrap();
        assert_eq!(marked, 2);
        let text = module.as_operation().to_string();
        let annotated = |mark: &str| {
            text.lines()
                .find(|line| line.contains(mark) && line.contains("llvm.br"))
                .unwrap_or_else(|| panic!("no branch marked {mark} in\n{text}"))
                .contains("loop_annotation = #loop_annotation")
        };
        // The printer names the attribute once, at the top.
        assert!(
            text.contains("#loop_interleave = #llvm.loop_interleave<count = 2 : i32>"),
            "{text}"
        );
        assert!(
            text.contains("#loop_annotation = #llvm.loop_annotation<interleave = #loop_interleave>"),
            "{text}"
        );
        assert!(annotated("{inner"), "{text}");
        assert!(!annotated("{outer"), "{text}");
        assert!(annotated("{flat"), "{text}");
        assert!(!annotated("{other"), "{text}");
    }

    #[test]
    fn element_wise_kernels_of_polynomial_math_want_it_reductions_do_not() {
        let context = crate::new_context().unwrap();
        let text = r#"
func.func private @gelu(%x: tensor<8xf32>) -> tensor<8xf32> attributes {meta.fused} {
  %t = "meta.unary"(%x) {kind = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
  %y = "meta.binary"(%t, %x) {kind = "mul"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func private @exp_sum(%x: tensor<8xf32>) -> tensor<f32> attributes {meta.fused} {
  %e = "meta.unary"(%x) {kind = "exp"} : (tensor<8xf32>) -> tensor<8xf32>
  %s = "meta.reindex_reduce"(%e) {kind = "add", indices = affine_map<(i) -> ()>} : (tensor<8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func private @plain(%x: tensor<8xf32>) -> tensor<8xf32> attributes {meta.fused} {
  %y = "meta.binary"(%x, %x) {kind = "mul"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func private @double(%x: tensor<8xf64>) -> tensor<8xf64> attributes {meta.fused} {
  %y = "meta.unary"(%x) {kind = "exp"} : (tensor<8xf64>) -> tensor<8xf64>
  return %y : tensor<8xf64>
}
"#;
        let module = crate::parse_module(&context, text).unwrap();
        let functions = jitc_dialect::ops::functions(module.body());
        let wants_it = |name: &str, math| {
            let body = functions[name].region(0).unwrap().first_block().unwrap();
            wants(body, math)
        };
        assert!(wants_it("gelu", MathMode::Fast));
        assert!(!wants_it("gelu", MathMode::Exact));
        assert!(!wants_it("exp_sum", MathMode::Fast));
        assert!(!wants_it("plain", MathMode::Fast));
        assert!(!wants_it("double", MathMode::Fast));
    }

    #[test]
    fn nothing_named_marks_nothing() {
        let context = crate::new_context().unwrap();
        let module = Module::parse(&context, &module_text()).unwrap();
        assert_eq!(annotate(&context, &module, &[]).unwrap(), 0);
        assert!(!module.as_operation().to_string().contains("loop_annotation"));
    }
}
