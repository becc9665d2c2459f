//! Relocatable object code linked into this process by LLVM's ORC LLJIT.
//!
//! CPU kernels are compiled to an ELF object (the bytes the disk cache
//! stores), and the object is what runs: a fresh compile and a cache hit
//! load the same kind of code the same way. LLJIT links the object with
//! JITLink and resolves what it calls outside itself (libm, `memset`)
//! among the symbols of the process.

use crate::Error;
use inkwell::llvm_sys::{
    core::LLVMCreateMemoryBufferWithMemoryRangeCopy,
    error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage},
    orc2::{
        LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess, LLVMOrcDefinitionGeneratorRef,
        LLVMOrcExecutorAddress, LLVMOrcJITDylibAddGenerator,
        lljit::{
            LLVMOrcCreateLLJIT, LLVMOrcCreateLLJITBuilder, LLVMOrcDisposeLLJIT, LLVMOrcLLJITAddObjectFile,
            LLVMOrcLLJITGetGlobalPrefix, LLVMOrcLLJITGetMainJITDylib, LLVMOrcLLJITLookup, LLVMOrcLLJITRef,
        },
    },
};
use std::ffi::{CStr, CString};

/// An object file linked into the process; its code lives until this is
/// dropped.
pub struct LoadedObject {
    jit: LLVMOrcLLJITRef,
}

// SAFETY: ORC's execution session is thread-safe: `address` may link the
// object on its first lookup, from any thread. The code is pure over the
// buffers each call passes, and the JIT is disposed once, when the value
// drops.
unsafe impl Send for LoadedObject {}
// SAFETY: as above.
unsafe impl Sync for LoadedObject {}

impl LoadedObject {
    /// Links `objects` (ELF relocatable objects for this machine, which
    /// may call each other) into the process.
    pub fn load(objects: &[Vec<u8>]) -> Result<Self, Error> {
        let fail = |what: &str, error: String| {
            Error::Codegen(format!("cannot load the kernels' object code: {what}: {error}"))
        };
        // LLJIT finds this machine's target among those registered.
        inkwell::targets::Target::initialize_native(&inkwell::targets::InitializationConfig::default())
            .map_err(|e| fail("registering the native target", e))?;
        let mut jit = std::ptr::null_mut();
        // SAFETY: the builder is consumed by `LLVMOrcCreateLLJIT`, which
        // writes the JIT into `jit` on success.
        check(unsafe { LLVMOrcCreateLLJIT(&mut jit, LLVMOrcCreateLLJITBuilder()) })
            .map_err(|e| fail("creating the JIT", e))?;
        let loaded = LoadedObject { jit };
        // SAFETY: `jit` is a live LLJIT; the generator is handed to its
        // main library, which owns it from then on.
        unsafe {
            let mut generator: LLVMOrcDefinitionGeneratorRef = std::ptr::null_mut();
            check(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                &mut generator,
                LLVMOrcLLJITGetGlobalPrefix(jit),
                None,
                std::ptr::null_mut(),
            ))
            .map_err(|e| fail("resolving symbols in the process", e))?;
            LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), generator);
        }
        let name = c"jitc-kernels.o";
        for object in objects {
            // SAFETY: the buffer copies `object`; the JIT takes it over.
            unsafe {
                let buffer = LLVMCreateMemoryBufferWithMemoryRangeCopy(
                    object.as_ptr().cast(),
                    object.len(),
                    name.as_ptr(),
                );
                check(LLVMOrcLLJITAddObjectFile(
                    jit,
                    LLVMOrcLLJITGetMainJITDylib(jit),
                    buffer,
                ))
                .map_err(|e| fail("adding the object", e))?;
            }
        }
        Ok(loaded)
    }

    /// The address of function `name`, linked on first lookup.
    pub fn address(&self, name: &str) -> Result<usize, Error> {
        let symbol = CString::new(name).map_err(|_| Error::Codegen(format!("bad symbol name {name:?}")))?;
        let mut address: LLVMOrcExecutorAddress = 0;
        // SAFETY: `self.jit` is live; the name is a valid C string.
        check(unsafe { LLVMOrcLLJITLookup(self.jit, &mut address, symbol.as_ptr()) })
            .map_err(|e| Error::Codegen(format!("kernel @{name} is missing from the object code: {e}")))?;
        usize::try_from(address).map_err(|_| Error::Codegen(format!("kernel @{name} lies out of reach")))
    }
}

impl Drop for LoadedObject {
    fn drop(&mut self) {
        // SAFETY: disposed once; nothing uses the code after this value.
        let _ = check(unsafe { LLVMOrcDisposeLLJIT(self.jit) });
    }
}

/// `Err` with LLVM's message when `error` is a failure (which is consumed).
fn check(error: LLVMErrorRef) -> Result<(), String> {
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: `error` is a failure; getting its message consumes it, and
    // the message is disposed after it is copied.
    unsafe {
        let message = LLVMGetErrorMessage(error);
        let text = CStr::from_ptr(message).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(message);
        Err(text)
    }
}

/// The BLAKE3 hash (LLVM's) of `parts` fed one after another, in hex.
pub fn blake3_hex(parts: &[&[u8]]) -> String {
    use inkwell::llvm_sys::blake3::{
        LLVM_BLAKE3_OUT_LEN, llvm_blake3_hasher, llvm_blake3_hasher_finalize, llvm_blake3_hasher_init,
        llvm_blake3_hasher_update,
    };
    let mut hasher = std::mem::MaybeUninit::<llvm_blake3_hasher>::uninit();
    let mut out = [0u8; LLVM_BLAKE3_OUT_LEN];
    // SAFETY: `init` fills the hasher before it is used; every pointer
    // passed is valid for the length given.
    unsafe {
        llvm_blake3_hasher_init(hasher.as_mut_ptr());
        for part in parts {
            llvm_blake3_hasher_update(hasher.as_mut_ptr(), part.as_ptr().cast(), part.len());
        }
        llvm_blake3_hasher_finalize(hasher.as_mut_ptr(), out.as_mut_ptr(), out.len());
    }
    out.iter().map(|b| format!("{b:02x}")).collect()
}

/// The LLVM this process links, as `major.minor.patch`.
pub fn llvm_version() -> String {
    let (major, minor, patch) = inkwell::support::get_llvm_version();
    format!("{major}.{minor}.{patch}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn blake3_is_the_reference_hash() {
        // BLAKE3 of the empty input and of "abc", from the reference
        // implementation's test vectors.
        assert_eq!(
            super::blake3_hex(&[]),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        assert_eq!(
            super::blake3_hex(&[b"a", b"bc"]),
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
        );
    }
}
