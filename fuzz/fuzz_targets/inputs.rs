//! The readers of user inputs: `.npy` bytes and inline literals
//! (`2x3xf32=[1 2 3][4 5 6]`). Each gives a tensor or one sentence, never
//! a panic, and a tensor it gives round-trips through `.npy`.
#![no_main]

use jitc_interp::{Tensor, npy};
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;

fuzz_target!(|data: &[u8]| {
    if let Ok(tensor) = npy::read_from(Cursor::new(data)) {
        round_trip(&tensor);
    }
    if let Ok(tensor) = Tensor::parse_literal(&String::from_utf8_lossy(data)) {
        round_trip(&tensor);
    }
});

fn round_trip(tensor: &Tensor) {
    let mut bytes = Vec::new();
    npy::write_to(&mut bytes, tensor).expect("writing to memory");
    let back = npy::read_from(Cursor::new(bytes)).expect("a .npy file jitc wrote reads back");
    assert_eq!(back.shape(), tensor.shape());
    assert_eq!(back.element_type(), tensor.element_type());
}
