//! Software prefetch for short contiguous runs that jump (CPU only).
//!
//! Instance norm's statistics read each channel of a `(n, c, h, w)` tensor
//! as `n` runs of `h x w` contiguous elements, one batch apart: 12.5 KB
//! runs 784 KB apart for `(32, 64, 56, 56)`. The hardware prefetchers
//! follow a run once it has started but cannot guess the jump to the next,
//! so every run starts with misses to memory. Measured on the development
//! machine (one thread, 25.7 MB): a contiguous sum reads at 43 GB/s, the
//! same sum channel by channel at 24 GB/s, and at 43 GB/s again when each
//! load also prefetches the element one run ahead.
//!
//! **Which loads.** A load of a kernel argument in the innermost loop
//! (collapsed loops count as one) whose offset moves by one element per
//! iteration of that loop, and by a stride of its own per iteration of the
//! loop just outside it, when that stride is not the run's length (the
//! next run does not follow on) and the run is at most [`RUN_MAX_BYTES`]
//! (longer runs keep the prefetchers busy, and a prefetch one run ahead
//! would reach too far). Bounds-checked loads are left alone.
//!
//! **How.** Loop vectorization refuses a loop with an `llvm.prefetch` in
//! it, so the lowering marks the load instead, with a TBAA type of a root
//! of its own whose name carries the distance in bytes
//! ([`PREFETCH_TBAA`]; a type of another root than any other access's
//! changes no alias answer). After `default<O3>`, `crate::codegen` puts
//! `llvm.prefetch(address + distance)` (read, into L2) before each marked
//! load of a vector of 32 bytes or more: one per cache line for 512-bit
//! loads, one per half line for 256-bit ones. Scalar loads (remainders)
//! get none.

use super::schedule::Schedule;
use melior::{Context, ir::Attribute};

/// The start of the TBAA type name that marks a load for prefetch; the
/// distance in bytes follows it, e.g. `jitc prefetch +802816`.
pub const PREFETCH_TBAA: &str = "jitc prefetch +";

/// Runs longer than this are left to the hardware prefetchers: 64 KiB.
pub const RUN_MAX_BYTES: i64 = 64 << 10;

/// The `tbaa` attribute of a load to prefetch for, `bytes` ahead.
pub(super) fn prefetch_tag(context: &Context, bytes: i64) -> Option<Attribute<'_>> {
    let descriptor = format!(
        "#llvm.tbaa_type_desc<id = \"{PREFETCH_TBAA}{bytes}\", members = {{<#llvm.tbaa_root<id = \"jitc prefetch\">, 0>}}>"
    );
    Attribute::parse(
        context,
        &format!("[#llvm.tbaa_tag<base_type = {descriptor}, access_type = {descriptor}, offset = 0>]"),
    )
}

/// The distance in bytes to prefetch ahead for a load whose element offset
/// is `coefficients` (one per domain dimension) in a kernel over `domain`
/// scheduled as `schedule`, of elements of `width` bytes; `None` when the
/// load is not one to prefetch for (see the module doc).
pub(super) fn distance(
    schedule: &Schedule,
    domain: &[i64],
    coefficients: &[i64],
    width: usize,
) -> Option<i64> {
    let dims = domain.len();
    let collapse = schedule.collapse.max(1);
    if dims <= collapse || coefficients.len() != dims || domain.iter().any(|&d| d < 0) {
        return None;
    }
    let inner = &schedule.order[dims - collapse..];
    let outer = schedule.order[dims - collapse - 1];
    // Contiguous along the (collapsed) innermost loop, forwards.
    if coefficients[*inner.last()?] != 1 {
        return None;
    }
    let run: i64 = inner.iter().map(|&d| domain[d]).product();
    let width = i64::try_from(width).ok()?;
    let stride = coefficients[outer];
    let bytes = stride.checked_mul(width)?;
    let jumps = stride > 0 && stride != run && domain[outer] > 1;
    (jumps && run.checked_mul(width)? <= RUN_MAX_BYTES).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(order: Vec<usize>, collapse: usize) -> Schedule {
        Schedule {
            order,
            split: 0,
            parallel: true,
            registers: 0,
            checks: Vec::new(),
            peel: false,
            independent: Vec::new(),
            folded: None,
            collapse,
        }
    }

    #[test]
    fn instance_norms_channels_are_prefetched_one_batch_ahead() {
        // (c, n, h x w) loops over x of (32, 64, 56, 56): offset
        // n * 200704 + c * 3136 + hw.
        let domain = [32, 64, 56, 56];
        let plan = schedule(vec![1, 0, 2, 3], 2);
        assert_eq!(
            distance(&plan, &domain, &[200_704, 3136, 56, 1], 4),
            Some(802_816)
        );
    }

    #[test]
    fn runs_that_follow_on_broadcasts_and_long_runs_are_not() {
        // Rows of a row-major matrix follow each other.
        let plan = schedule(vec![0, 1], 1);
        assert_eq!(distance(&plan, &[4096, 1024], &[1024, 1], 4), None);
        // A broadcast along the inner loop.
        assert_eq!(distance(&plan, &[4096, 1024], &[1, 0], 4), None);
        // A transposed read: not contiguous along the inner loop.
        assert_eq!(distance(&plan, &[1024, 1024], &[1, 1024], 4), None);
        // Runs of 128 KiB, 1 MiB apart: the hardware follows them.
        assert_eq!(distance(&plan, &[64, 32_768], &[262_144, 1], 4), None);
        // Runs of 4 KiB, 16 KiB apart: prefetched.
        assert_eq!(distance(&plan, &[64, 1024], &[4096, 1], 4), Some(16_384));
        // One loop: nothing outside it.
        assert_eq!(distance(&schedule(vec![0], 1), &[100], &[1], 4), None);
    }
}
