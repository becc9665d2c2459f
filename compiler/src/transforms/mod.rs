//! jitc's own passes, one per file; see [`crate::passes::PASSES`].

pub mod cse;
pub mod dce;
pub mod fuse;
pub mod verify;
