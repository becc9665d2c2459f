//! Deferred checks: a host plan's kernel calls queued on the GPU without
//! waiting for each ([`super::CudaModule::set_deferred_checks`]).
//!
//! Without them, each kernel call of a host plan over
//! [`super::OnDevice`] is a one-launch device plan: queued, waited for,
//! its status record read. With them, a call only queues its kernel: its
//! outputs are allocated on the compute stream and returned at once, and
//! its status record is one of [`Records`], numbered in the order the
//! calls were queued. The host plan settles (`crate::host`,
//! `Kernels::settle`) before host code reads a value a kernel made (a
//! condition, a loop bound, a state write, a result), after every
//! `SETTLE_AFTER` calls, at the end of a loop iteration that queued none,
//! and when the run ends, either way:
//! one synchronization of the compute stream, then the records in queue
//! order, so the first call that failed is the one reported, at its own
//! call site, with the words the synchronous path uses.
//!
//! Kernels queued after one that failed run on its unspecified outputs.
//! That is harmless: a kernel reads tensor data as values, never as
//! addresses (its indices are affine in its domain and in `index`
//! arguments, which come from the host), nothing they write reaches the
//! caller (the run fails), and state is committed only after a run that
//! settled with no failure. Buffers freed while kernels that read them
//! are queued are freed in stream order (cudarc's asynchronous free after
//! the buffer's last read).
//!
//! A record is zeroed when it is handed out (the compute stream has been
//! waited for since its last kernel, by the settle that read it), so a
//! record a failed run left set is never read again. The plan settles
//! after every `SETTLE_AFTER` calls, so one chunk of records serves every
//! run.
//!
//! A CUDA error (a failed synchronization, or one cudarc recorded while
//! the calls were queued) is not any one kernel's: it is reported at the
//! first call queued since the last settle, with the driver's words,
//! where waiting for each call would report it at the call that met it.

use super::{CudaDevice, execute::failed};
use crate::Error;
use cudarc::driver::PinnedHostSlice;
use jitc_compiler::KernelStatus;

/// Records per chunk (16 KiB): as many as the plan queues before it
/// settles, so one chunk serves every run.
const CHUNK_RECORDS: usize = crate::host::SETTLE_AFTER;

/// The `i64` words of one record.
const RECORD_WORDS: usize = std::mem::size_of::<KernelStatus>() / std::mem::size_of::<i64>();

/// The status records of queued kernel calls: chunks of mapped page-locked
/// memory, made as more calls are queued than the chunks hold, and kept
/// for the module's later runs. Chunks are never moved or freed while a
/// call is queued, so the addresses handed out stay valid.
#[derive(Default)]
pub(super) struct Records {
    chunks: Vec<(PinnedHostSlice<i64>, u64)>,
}

impl Records {
    /// The device address of record `number`, zeroed (whatever a run that
    /// stopped on a CUDA error left in it), making its chunk first if
    /// needed.
    pub(super) fn address(&mut self, device: &CudaDevice, number: usize) -> Result<u64, Error> {
        let chunk = number / CHUNK_RECORDS;
        while self.chunks.len() <= chunk {
            self.chunks
                .push(device.mapped_words(CHUNK_RECORDS * RECORD_WORDS)?);
        }
        let start = number % CHUNK_RECORDS * RECORD_WORDS;
        let (host, address) = &mut self.chunks[chunk];
        // Kernels queued earlier may be writing their own records in this
        // chunk: no reference to the chunk is made, only these words are
        // written.
        let words = host.as_mut_ptr().map_err(failed("page-locked copy"))?;
        for word in start..start + RECORD_WORDS {
            // SAFETY: `word` is inside the chunk (`start` is a record of
            // it), which lives as long as `self`; no kernel has this
            // record's address (it is being handed out, and the compute
            // stream has been waited for since it was last used).
            unsafe { words.add(word).write_volatile(0) };
        }
        Ok(*address + (start * std::mem::size_of::<i64>()) as u64)
    }

    /// Record `number`, once the compute stream has been waited for.
    pub(super) fn status(&self, number: usize) -> Result<KernelStatus, Error> {
        let (host, _) = self
            .chunks
            .get(number / CHUNK_RECORDS)
            .ok_or_else(|| Error::Cuda(format!("status record {number} was never handed out")))?;
        let start = number % CHUNK_RECORDS * RECORD_WORDS;
        let words = host.as_slice().map_err(failed("page-locked copy"))?;
        KernelStatus::try_from(&words[start..start + RECORD_WORDS])
            .map_err(|_| Error::Cuda("a status record has the wrong size".into()))
    }
}
