//! What can be lowered: the ops a kernel may hold and, on the GPU, the
//! math it can do without libm. A kernel that fails a check is skipped with
//! the reason, which `jitc compile` prints as a note and the runtime
//! answers by interpreting the kernel; it is never an error.
//!
//! Invariants:
//! - [`check`] accepts exactly what [`super::point`] emits:
//!   `meta.reindex`, `meta.reindex_reduce`, `meta.unary`, `meta.binary`,
//!   `meta.ternary`, splat `arith.constant`s and `func.return` (of static
//!   or dynamic shape: [`super::shapes`] says whether the sizes of a
//!   dynamic kernel can be known before the call);
//! - [`check_gpu`] accepts a subset of it: a static domain (arguments of
//!   dynamic shape read through a `meta.reindex` only; see `gpu`); and
//!   unless NVIDIA's libdevice is linked (`codegen::libdevice`), no `sin`,
//!   `cos`, `erf` or `pow`, and `exp`, `log`, `tanh` and `sigmoid` only
//!   where they are polynomials ([`super::poly`]: f32 under `--math fast`).
//!
//! Example: without libdevice, a kernel holding `meta.unary` `sin` of
//! `f32` is skipped on the GPU with
//!
//! ```text
//! 'sin' on f32 needs libdevice, NVIDIA's math library, which was not found (set JITC_LIBDEVICE to libdevice.10.bc)
//! ```

use super::MathMode;
use jitc_dialect::{
    kinds::{BinaryKind, ElementType, UnaryKind},
    ops::{BinaryOp, UnaryOp, tensor_type},
    verify::op_name,
};
use melior::ir::{BlockLike, OperationRef, RegionLike, operation::OperationLike, r#type::ShapedTypeLike};

/// Whether every op of the kernel can be lowered; `Err` says why not.
pub(super) fn check(kernel: OperationRef) -> Result<(), String> {
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or("the kernel has no body")?;
    let domain = kernel
        .attribute("meta.domain")
        .ok()
        .and_then(jitc_dialect::ops::i64_array_attribute);
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        let name = op_name(op);
        // What the op iterates: the kernel's domain, which the lowering's
        // loops run over, whatever the op's types say.
        let iterated = match name.as_str() {
            "meta.reindex" | "meta.unary" | "meta.binary" | "meta.ternary" => {
                op.result(0).ok().map(Into::into)
            }
            "meta.reindex_reduce" => op.operand(0).ok(),
            "func.return" => None,
            "arith.constant" if crate::fusion::kind_of(op) == crate::fusion::NodeKind::Constant => None,
            other => return Err(format!("'{other}' in a kernel is not lowered yet")),
        };
        if let (Some(domain), Some(tensor)) = (&domain, iterated.and_then(tensor_type))
            && !iterates(tensor, domain)
        {
            return Err(format!(
                "'{name}' iterates {}, not the kernel's meta.domain {domain:?}",
                melior::ir::Type::from(tensor)
            ));
        }
    }
    Ok(())
}

/// Whether `tensor`'s shape is `domain`, where both are known (`-1` is a
/// dynamic extent of the domain).
fn iterates(tensor: melior::ir::r#type::RankedTensorType, domain: &[i64]) -> bool {
    tensor.rank() == domain.len()
        && domain.iter().enumerate().all(|(d, &extent)| {
            extent < 0
                || match tensor.dim_size(d) {
                    Ok(melior::ir::r#type::DimSize::Static(n)) => n as i64 == extent,
                    _ => true,
                }
        })
}

/// Whether some op of the kernel has a result of dynamic shape.
fn dynamic_results(kernel: OperationRef) -> Result<bool, String> {
    let body = body_of(kernel)?;
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        for result in op.results() {
            if let Some(tensor) = tensor_type(result.into())
                && (0..tensor.rank()).any(|d| {
                    tensor
                        .dim_size(d)
                        .is_ok_and(|s| s == melior::ir::r#type::DimSize::Dynamic)
                })
            {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn body_of<'c, 'a>(kernel: OperationRef<'c, 'a>) -> Result<melior::ir::BlockRef<'c, 'a>, String> {
    kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or_else(|| "the kernel has no body".to_owned())
}

/// Whether the kernel can be lowered flat (one loop over the elements of
/// its dynamic domain): only element-wise ops and splat constants, every
/// argument and result of the domain's shape. `Err` says why not (the
/// kernel is then lowered as a loop nest over sizes read at run time;
/// see [`super::shapes`]).
pub(super) fn flat(kernel: OperationRef) -> Result<(), String> {
    let body = body_of(kernel)?;
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        match op_name(op).as_str() {
            "meta.unary" | "meta.binary" | "meta.ternary" | "func.return" => {}
            "arith.constant" if crate::fusion::kind_of(op) == crate::fusion::NodeKind::Constant => {}
            _ => return Err("the kernel is not element-wise".into()),
        }
    }
    Ok(())
}

/// The most bytes of parameters a GPU kernel may take: 4 KiB, CUDA's limit
/// before 12.1 (`ptxas` for PTX ISA 7.0 and 7.8, which jitc targets,
/// refuses past 4,352 bytes, "uses too much parameter space (..., 0x1100
/// max)"; NVIDIA documents 4,096, which a driver's JIT may hold to; 32 KiB
/// needs PTX ISA 8.1 and a CUDA 12.1 driver).
pub(super) const GPU_PARAMETER_BYTES: usize = 4096;

/// Whether a GPU kernel of `buffers` arguments and results, and
/// `dynamic_sizes` sizes of dynamic dimensions, fits its parameters in
/// [`GPU_PARAMETER_BYTES`]: 8 bytes for each of those, the status record
/// and the scratch memory's pointer. The fuser keeps its kernels far below
/// (`meta-fuse`'s `max-buffers`); a kernel written by hand, or a row chain
/// of several, may not be.
pub(super) fn check_gpu_parameters(buffers: usize, dynamic_sizes: usize) -> Result<(), String> {
    let bytes = 8 * (buffers + dynamic_sizes + 2);
    if bytes > GPU_PARAMETER_BYTES {
        return Err(format!(
            "the kernel takes {buffers} buffers, {bytes} bytes of parameters with its status record \
             and scratch memory: a GPU kernel's fit in {GPU_PARAMETER_BYTES} bytes"
        ));
    }
    Ok(())
}

/// Whether every op of the kernel can run on an NVIDIA GPU; `Err` says why
/// not. No libm exists there (and libdevice is not linked), so only the
/// math that lowers to plain instructions or to jitc's own polynomials is
/// accepted.
pub(super) fn check_gpu(kernel: OperationRef, math: MathMode, libdevice: bool) -> Result<(), String> {
    check(kernel)?;
    // Arguments of dynamic shape are read with their sizes passed at run
    // time (`gpu`); a domain of dynamic shape (or a value of dynamic shape
    // inside the kernel) the GPU's launches cannot size yet.
    let dynamic_domain = kernel
        .attribute("meta.domain")
        .ok()
        .and_then(jitc_dialect::ops::i64_array_attribute)
        .is_none_or(|domain| domain.iter().any(|&d| d < 0));
    if dynamic_domain || dynamic_results(kernel)? {
        return Err("a domain of dynamic shape is not lowered for the GPU yet".into());
    }
    let body = kernel
        .region(0)
        .ok()
        .and_then(|r| r.first_block())
        .ok_or("the kernel has no body")?;
    let mut next = body.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if let Some(unary) = UnaryOp::cast(op) {
            let kind = unary.kind().ok_or("an unknown unary kind")?;
            let element = unary
                .input()
                .and_then(super::element_of)
                .ok_or("a unary op of an unsupported type")?;
            let polynomial = math == MathMode::Fast && element == ElementType::F32;
            let needs_libm = match kind {
                UnaryKind::Sin | UnaryKind::Cos | UnaryKind::Erf => true,
                UnaryKind::Exp | UnaryKind::Log | UnaryKind::Tanh | UnaryKind::Sigmoid => !polynomial,
                _ => false,
            };
            if needs_libm && !libdevice {
                return Err(format!(
                    "'{}' on {element} needs libdevice, NVIDIA's math library, which was not found \
                     (set JITC_LIBDEVICE to libdevice.10.bc){}",
                    kind.name(),
                    if polynomial || element != ElementType::F32 {
                        ""
                    } else {
                        " (f32 exp, log, tanh and sigmoid compile with --math fast)"
                    }
                ));
            }
        }
        if let Some(binary) = BinaryOp::cast(op)
            && binary.kind() == Some(BinaryKind::Pow)
            && !libdevice
        {
            return Err(
                "'pow' needs libdevice, NVIDIA's math library, which was not found (set JITC_LIBDEVICE to \
                 libdevice.10.bc)"
                    .into(),
            );
        }
    }
    Ok(())
}
