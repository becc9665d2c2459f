//! A structural identity of a module inside its context, computed without
//! printing it.
//!
//! MLIR uniques operation names, types, attributes and locations in the
//! context, so inside one context two of them are equal exactly when their
//! storage is the same object. A module's fingerprint hashes, for every
//! operation in pre-order: its name, location, operands (numbered by where
//! they are defined, so the numbering does not depend on addresses), result
//! types, attributes, successors and regions, and every block's argument
//! types and locations. Two modules of one context with equal fingerprints
//! print the same text with their locations. Fingerprints of different contexts
//! mean nothing to each other, and neither do those taken before and after
//! a context was destroyed: the same address may hold another attribute.
//! Keep them only as long as the context (the runtime's `CompileCache`
//! borrows it).

use melior::ir::{
    BlockLike, Module, OperationRef, RegionLike, TypeLike, ValueLike, attribute::AttributeLike,
    operation::OperationLike,
};
use std::{
    collections::HashMap,
    hash::{BuildHasherDefault, Hasher},
};

/// A module's structural identity inside its context (see the module doc):
/// the words themselves, not a hash of them, so equal fingerprints are
/// equal modules, never a collision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint(Vec<u64>);

/// A hasher for addresses, which are already well spread: one multiply.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_usize(&mut self, value: usize) {
        self.0 = (value as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(26);
    }
}

type Addresses = HashMap<usize, u64, BuildHasherDefault<AddressHasher>>;

/// Numbers values and blocks as it meets them, in pre-order, and writes
/// the words of each operation.
#[derive(Default)]
struct Walk {
    values: Addresses,
    blocks: Addresses,
    words: Vec<u64>,
    /// Cleared when the words cannot stand for the module: an op of a
    /// dialect outside [`DIALECTS`], or a use met before its definition.
    exact: bool,
}

/// The dialects whose ops keep everything in their operands, types,
/// attributes, regions and successors. Ops of other dialects may keep
/// properties that are not attributes (LLVM's overflow flags, for one),
/// which the C API does not show, so a module with one gets no
/// fingerprint.
const DIALECTS: [&str; 6] = ["builtin", "func", "scf", "arith", "tensor", "meta"];

/// Markers between the parts of an operation, so that different shapes
/// never write the same words.
const OP: u64 = 0x6f70;
const REGION: u64 = 0x7267;
const BLOCK: u64 = 0x626b;
const END: u64 = 0x656e;
/// A value or block used before the walk met its definition (a graph
/// region, or a block that is not in dominance order): the module gets no
/// fingerprint, since an address would not stay unique once the module is
/// freed.
const UNNUMBERED: u64 = 1 << 63;

fn address<T>(pointer: *const T) -> u64 {
    pointer as usize as u64
}

impl Walk {
    fn define(&mut self, pointer: usize) {
        let next = self.values.len() as u64;
        self.values.insert(pointer, next);
    }

    fn number_of(map: &Addresses, pointer: usize, exact: &mut bool) -> u64 {
        map.get(&pointer).copied().unwrap_or_else(|| {
            *exact = false;
            UNNUMBERED
        })
    }

    /// Writes `op` and everything inside it.
    fn write(&mut self, op: OperationRef) {
        let name = op.name();
        let dialect = name
            .as_string_ref()
            .as_str()
            .ok()
            .and_then(|n| n.split('.').next());
        if !dialect.is_some_and(|d| DIALECTS.contains(&d)) {
            self.exact = false;
        }
        self.words.extend([
            OP,
            address(name.to_raw().ptr),
            address(op.location().to_raw().ptr),
            op.operand_count() as u64,
        ]);
        for operand in op.operands() {
            let word = Self::number_of(&self.values, operand.to_raw().ptr as usize, &mut self.exact);
            self.words.push(word);
        }
        self.words.push(op.result_count() as u64);
        for result in op.results() {
            self.words.push(address(result.r#type().to_raw().ptr));
            self.define(result.to_raw().ptr as usize);
        }
        // One count: for an op with properties, MLIR builds its attribute
        // dictionary on every call of the C API.
        let attributes = op.attribute_count();
        self.words.push(attributes as u64);
        for index in 0..attributes {
            if let Ok((name, attribute)) = op.attribute_at(index) {
                self.words
                    .extend([address(name.to_raw().ptr), address(attribute.to_raw().ptr)]);
            }
        }
        self.words.push(op.successor_count() as u64);
        for successor in op.successors() {
            let word = Self::number_of(&self.blocks, successor.to_raw().ptr as usize, &mut self.exact);
            self.words.push(word);
        }
        self.words.push(op.region_count() as u64);
        for region in op.regions() {
            self.words.push(REGION);
            // Blocks are numbered before any is written: branches name
            // later blocks.
            let mut block = region.first_block();
            while let Some(current) = block {
                let next = self.blocks.len() as u64;
                self.blocks.insert(current.to_raw().ptr as usize, next);
                block = current.next_in_region();
            }
            let mut block = region.first_block();
            while let Some(current) = block {
                self.words.extend([BLOCK, current.argument_count() as u64]);
                for index in 0..current.argument_count() {
                    if let Ok(argument) = current.argument(index) {
                        self.words.extend([
                            address(argument.r#type().to_raw().ptr),
                            crate::rewrite::value_location_address(argument.into()),
                        ]);
                        self.define(argument.to_raw().ptr as usize);
                    }
                }
                let mut inner = current.first_operation();
                while let Some(nested) = inner {
                    self.write(nested);
                    inner = nested.next_in_block();
                }
                block = current.next_in_region();
            }
        }
        self.words.push(END);
    }
}

/// The fingerprint of `module` (see the module doc): equal fingerprints of
/// modules of one live context mean equal modules. `None` when the words
/// could not stand for the module: it has an op of a dialect outside
/// `builtin`, `func`, `scf`, `arith`, `tensor` and `meta` (whose ops may
/// keep properties the C API does not show), or a use before its
/// definition.
pub fn fingerprint(module: &Module) -> Option<Fingerprint> {
    let mut walk = Walk {
        words: Vec::with_capacity(256),
        exact: true,
        ..Walk::default()
    };
    walk.write(module.as_operation());
    walk.exact.then_some(Fingerprint(walk.words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_module;

    const SOURCE: &str = r#"
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %s = "meta.binary"(%x, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = "meta.unary"(%s) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}
"#;

    #[test]
    fn equal_text_gives_an_equal_fingerprint_and_any_change_another() {
        let context = crate::new_context().unwrap();
        let print = |m: &Module| m.as_operation().to_string();
        let one = parse_module(&context, SOURCE).unwrap();
        let two = parse_module(&context, SOURCE).unwrap();
        assert_eq!(fingerprint(&one), fingerprint(&two));
        assert_eq!(print(&one), print(&two));
        let changes = [
            SOURCE.replace("\"exp\"", "\"log\""),
            SOURCE.replace("(%x, %y)", "(%y, %x)"),
            SOURCE.replace("4xf32", "5xf32"),
            SOURCE.replace("%e = \"meta.unary\"(%s)", "%e = \"meta.unary\"(%x)"),
            SOURCE.replace("@main", "@other"),
        ];
        let base = fingerprint(&one);
        assert!(base.is_some(), "a contract module has a fingerprint");
        let mut seen = vec![base];
        for changed in &changes {
            let module = parse_module(&context, changed).unwrap();
            let print_differs = print(&module) != print(&one);
            assert!(print_differs, "the change shows in the text: {changed}");
            let fingerprint = fingerprint(&module);
            assert!(
                !seen.contains(&fingerprint),
                "a change keeps a fingerprint: {changed}"
            );
            seen.push(fingerprint);
        }
    }

    #[test]
    fn block_argument_locations_are_part_of_the_fingerprint() {
        let context = crate::new_context().unwrap();
        let with = |location: &str| {
            let text = SOURCE.replace(
                "%y: tensor<4xf32>)",
                &format!("%y: tensor<4xf32> loc(\"{location}\":1:1))"),
            );
            fingerprint(&parse_module(&context, &text).unwrap())
        };
        assert!(with("a.py").is_some());
        assert_ne!(with("a.py"), with("b.py"));
        assert_eq!(with("a.py"), with("a.py"));
    }

    #[test]
    fn locations_are_part_of_the_fingerprint() {
        let context = crate::new_context().unwrap();
        let one = parse_module(&context, SOURCE).unwrap();
        let moved = parse_module(&context, &format!("\n\n{SOURCE}")).unwrap();
        assert_ne!(fingerprint(&one), fingerprint(&moved));
    }
}
