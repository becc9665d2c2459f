//! Why a compiled kernel call failed: shared by the compiler, which reads
//! a kernel's status record, and the interpreter and the runtime, which
//! report it.

/// Why a kernel call failed, as the runtime reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFailure {
    /// The op of the kernel's body that failed and its line, when the
    /// failure names one (an integer division by zero): the runtime then
    /// reports it at that op, as the interpreter does; otherwise at the
    /// kernel's call.
    pub op: Option<(String, Option<usize>)>,
    /// What went wrong.
    pub message: String,
}

impl From<String> for KernelFailure {
    fn from(message: String) -> Self {
        KernelFailure { op: None, message }
    }
}

impl From<&str> for KernelFailure {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

impl std::fmt::Display for KernelFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
