//! jitc's own passes, one per file; see [`crate::passes::PASSES`].

pub mod batch;
pub mod cse;
pub mod dce;
pub mod fast_math;
pub mod fuse;
pub mod grad;
pub mod inline;
pub mod merge;
pub mod refine;
pub mod specialize;
pub mod unroll;
pub mod verify;
