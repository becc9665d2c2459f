//! Helpers shared by the runtime's differential tests (`differential.rs`,
//! `cuda.rs`): a seeded xorshift generator, random f32 inputs and the
//! examples' sources.

// Each test binary uses a subset of these.
#![allow(dead_code)]

use jitc_interp::Tensor;

/// A xorshift64 generator: the same seed gives the same programs and
/// inputs on every machine.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `items`.
    pub fn pick<'t>(&mut self, items: &[&'t str]) -> &'t str {
        items[self.below(items.len())]
    }
}

/// The source of `examples/NAME`.
pub fn example(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// An f32 tensor of `shape` with values in [-2.7, 2.7], from `seed`.
pub fn random(shape: &[usize], seed: u64) -> Tensor {
    let mut rng = Rng(seed);
    let n: usize = shape.iter().product();
    let values: Vec<String> = (0..n)
        .map(|_| format!("{}", (rng.below(201) as f32 - 100.0) / 37.0))
        .collect();
    let prefix: String = shape.iter().map(|d| format!("{d}x")).collect();
    Tensor::parse_literal(&format!("{prefix}f32={}", values.join(" "))).expect("a valid literal")
}
