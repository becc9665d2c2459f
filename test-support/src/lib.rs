//! Helpers shared by jitc's tests and benchmarks, written once: a seeded
//! xorshift generator ([`Rng`]), random f32 inputs ([`random`]) and the
//! bundled examples' sources ([`example`]).
//!
//! Every crate's tests take these from here (a dev-dependency), so a
//! failing seed reproduces the same program and inputs everywhere.

use jitc_interp::Tensor;
use std::path::{Path, PathBuf};

/// A xorshift64 generator: the same seed gives the same programs and
/// inputs on every machine. Seed it with a nonzero state (xorshift stays at
/// zero), e.g. `Rng(seed.max(1))`.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (which must not be 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'t>(&mut self, items: &[&'t str]) -> &'t str {
        items[self.below(items.len())]
    }
}

/// The workspace's `examples/` directory.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// The source of `examples/NAME`; panics (this is for tests) when it is
/// missing.
pub fn example(name: &str) -> String {
    let path = examples_dir().join(name);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_xorshift64() {
        let mut rng = Rng(1);
        assert_eq!(rng.next(), 1082269761);
        let t = random(&[2, 3], 7);
        assert_eq!(t.shape(), &[2, 3]);
    }
}
