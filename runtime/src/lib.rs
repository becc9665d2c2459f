//! The jitc runtime: devices, buffers, executables, the compiled-kernel
//! cache, the lazy graph API, speculation and the C ABI (see DESIGN.md).
//!
//! Nothing is implemented yet: the crate exists so that its boundary holds
//! from the start. It must never depend on `jitc-compiler`'s internals;
//! it takes compiled artifacts and runs them.
