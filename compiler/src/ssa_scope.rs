//! A check of module text before MLIR parses it: every SSA value a use
//! names must have a definition in scope before it.
//!
//! Why: MLIR 22's parser takes a use of a name it has not seen for a
//! forward reference and resolves it to the next definition of that name,
//! even one inside a region that does not hold the use. When a custom
//! op's parser then fails after it parsed such a region (the generated
//! parsers keep regions in local storage, `scf.index_switch` among them),
//! the region is freed with the value's uses still pointing at it, and
//! the parser's clean-up writes into the freed memory. That was the heap
//! corruption the fuzz smoke found for months (`docs/fuzzing.md`); upstream
//! `mlir-opt` does the same on such text. A use that names a value not in
//! scope whose next definition is in a region that does not hold the use
//! is never valid (the definition cannot dominate it), so the text is
//! refused before MLIR sees it. A name never defined later is left to
//! MLIR ("use of undeclared SSA value name"), and so is a use whose later
//! definition is in its own region or one around it (a forward reference
//! across blocks, which dominance decides): neither frees a value with
//! uses.
//!
//! The scan is lexical and one-sided: it reports a use only where it is
//! sure the name is a use, and counts every other name as a definition,
//! so that no valid program is refused. Scopes are brace pairs (regions,
//! and attribute dictionaries, which hold no values); a definition belongs
//! to the innermost open one. Uses are the operands of a generic op
//! (`"op"(%a, %b)`) and the names after a custom op whose operands are
//! all uses (`arith.*`, `math.*`, `tensor.*`, `scf.yield`, `scf.if`,
//! `scf.index_switch`, `scf.condition`, `func.call`, `func.return`,
//! `return`) on the rest of its line, up to a region's brace.

use std::collections::{HashMap, HashSet};

/// Ops whose operands, on the line after their name, are all uses.
const USE_OPS: &[&str] = &[
    "scf.yield",
    "scf.condition",
    "scf.if",
    "scf.index_switch",
    "func.call",
    "call",
    "func.return",
    "return",
];
/// Dialects whose ops' operands are all uses.
const USE_DIALECTS: &[&str] = &["arith.", "math.", "tensor."];

/// A use of a value with no definition in scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndefinedUse {
    /// 1-based line and column (in bytes) of the `%`.
    pub line: usize,
    pub column: usize,
    /// The name with its `%`.
    pub name: String,
}

impl std::fmt::Display for UndefinedUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "'{}' is used where no definition of it is in scope (a use before its definition, or of a value defined inside another region)",
            self.name
        )
    }
}

fn is_id_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_id(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

/// The first use in `text` of a value with no definition in scope whose
/// next definition is in a region that does not hold the use, if any.
pub fn undefined_use(text: &str) -> Option<UndefinedUse> {
    let bytes = text.as_bytes();
    // Open scopes, innermost last: an id each, and the names defined there.
    let mut scopes: Vec<(usize, HashSet<&str>)> = vec![(0, HashSet::new())];
    let mut next_scope = 1usize;
    // Uses of names not in scope, by name: the first such use, and the
    // scopes open around it.
    let mut pending: HashMap<&str, (UndefinedUse, Vec<usize>)> = HashMap::new();
    let (mut line, mut line_start) = (1usize, 0usize);
    // Paren depth, and the depth at which a generic op's operand list
    // opened (its names are uses) or a block's argument list did (its
    // names are definitions, as every name not known to be a use is).
    let mut parens = 0usize;
    let mut operands: Option<usize> = None;
    // After a custom op from `USE_OPS`/`USE_DIALECTS`, until the line ends
    // or a brace opens or closes.
    let mut custom_uses = false;
    let mut at = 0usize;
    while at < bytes.len() {
        let b = bytes[at];
        match b {
            b'\n' => {
                line += 1;
                line_start = at + 1;
                custom_uses = false;
                at += 1;
            }
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
            }
            b'"' => {
                at += 1;
                while at < bytes.len() && bytes[at] != b'"' {
                    match bytes[at] {
                        b'\\' => at += 1,
                        b'\n' => {
                            line += 1;
                            line_start = at + 1;
                        }
                        _ => {}
                    }
                    at += 1;
                }
                at += 1;
                // A quoted op name followed by its operand list.
                if bytes.get(at) == Some(&b'(') && operands.is_none() {
                    operands = Some(parens);
                }
            }
            b'(' => {
                parens += 1;
                at += 1;
            }
            b')' => {
                parens = parens.saturating_sub(1);
                if operands == Some(parens) {
                    operands = None;
                }
                at += 1;
            }
            b'{' => {
                scopes.push((next_scope, HashSet::new()));
                next_scope += 1;
                custom_uses = false;
                at += 1;
            }
            b'}' => {
                if scopes.len() > 1 {
                    scopes.pop();
                }
                custom_uses = false;
                at += 1;
            }
            b'%' => {
                let start = at;
                at += 1;
                while at < bytes.len() && is_id(bytes[at]) {
                    at += 1;
                }
                let name = &text[start..at];
                if name.len() == 1 {
                    continue;
                }
                // `%a#1` is a use of one result of `%a`; `%a:2` defines two.
                let mut after = at;
                if matches!(bytes.get(after), Some(b'#' | b':'))
                    && bytes.get(after + 1).is_some_and(u8::is_ascii_digit)
                {
                    after += 1;
                    while after < bytes.len() && bytes[after].is_ascii_digit() {
                        after += 1;
                    }
                }
                let mut next = after;
                while next < bytes.len() && matches!(bytes[next], b' ' | b'\t') {
                    next += 1;
                }
                let defines = bytes.get(next) == Some(&b'=') && bytes.get(next + 1) != Some(&b'=');
                let used = operands.is_some() || (custom_uses && !defines);
                if used {
                    if !scopes.iter().any(|(_, names)| names.contains(name)) {
                        let open = scopes.iter().map(|(id, _)| *id).collect();
                        let here = UndefinedUse {
                            line,
                            column: start - line_start + 1,
                            name: name.to_owned(),
                        };
                        pending.entry(name).or_insert((here, open));
                    }
                } else if let Some((id, names)) = scopes.last_mut() {
                    // MLIR resolves the pending use to this definition.
                    if let Some((earlier, open)) = pending.remove(name)
                        && !open.contains(id)
                    {
                        return Some(earlier);
                    }
                    names.insert(name);
                }
                at = after;
            }
            _ if is_id_start(b) && (at == 0 || !is_id(bytes[at - 1]) && bytes[at - 1] != b'%') => {
                let start = at;
                while at < bytes.len() && is_id(bytes[at]) {
                    at += 1;
                }
                let word = &text[start..at];
                if operands.is_none()
                    && (USE_OPS.contains(&word) || USE_DIALECTS.iter().any(|d| word.starts_with(d)))
                {
                    custom_uses = true;
                }
            }
            _ => at += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use melior::ir::operation::OperationLike;

    fn check(text: &str) -> Option<(usize, usize, String)> {
        undefined_use(text).map(|u| (u.line, u.column, u.name))
    }

    #[test]
    fn valid_programs_pass() {
        let texts = [
            // Generic and custom uses, results, arguments, nested regions.
            "func.func @f(%arg0: tensor<4xf32>, %i: index) -> tensor<4xf32> {\n\
             %0 = \"meta.unary\"(%arg0) {kind = \"exp\"} : (tensor<4xf32>) -> tensor<4xf32>\n\
             %1:2 = scf.index_switch %i -> tensor<4xf32>, index\n\
             case 0 {\n  %c = arith.constant 1 : index\n  scf.yield %0, %c : tensor<4xf32>, index\n}\n\
             default {\n  %c = arith.constant 2 : index\n  scf.yield %0, %c : tensor<4xf32>, index\n}\n\
             %2 = tensor.extract %1#0[%1#1] : tensor<4xf32>\n\
             return %1#0 : tensor<4xf32>\n}",
            // Loops define their induction variables and carried values.
            "func.func @g(%n: index, %x: f32) -> f32 {\n\
             %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n\
             %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (f32) {\n\
               %s = arith.addf %acc, %acc : f32\n  scf.yield %s : f32\n}\n\
             %w = scf.while (%a = %r) : (f32) -> f32 {\n  %t = arith.cmpf olt, %a, %a : f32\n\
               scf.condition(%t) %a : f32\n} do {\n^bb0(%b: f32):\n  scf.yield %b : f32\n}\n\
             return %w : f32\n}",
            // Names in strings and comments are not values.
            "func.func @h(%a: f32) -> f32 {\n  // %nowhere is a comment\n\
             %b = \"meta.unary\"(%a) {kind = \"%x\"} : (f32) -> f32 loc(\"%y\")\n  return %b : f32\n}",
        ];
        for text in texts {
            assert_eq!(check(text), None, "{text}");
        }
    }

    #[test]
    fn uses_mlir_reports_itself_are_left_to_it() {
        // A use before its definition in the same region (dominance says
        // no), and a name never defined.
        let text = "func.func @f(%a: f32) -> f32 {\n  %b = \"meta.unary\"(%c) {kind = \"exp\"} : (f32) -> f32\n  %c = arith.addf %a, %a : f32\n  return %nowhere : f32\n}";
        assert_eq!(check(text), None);
    }

    #[test]
    fn a_use_defined_later_in_a_nested_region_is_found() {
        let text = "func.func @f(%c: i1) -> f32 {\n  %b = \"meta.unary\"(%x) {kind = \"exp\"} : (f32) -> f32\n  scf.if %c {\n    %x = arith.constant 1.0 : f32\n  }\n  return %b : f32\n}";
        assert_eq!(check(text), Some((2, 21, "%x".into())));
    }

    /// No valid program is refused: every example and every chunk of the
    /// lit tests that MLIR parses and verifies on its own, and MLIR's own
    /// printing of it (the form jitc's tools and staged graphs write).
    #[test]
    fn no_module_mlir_parses_and_verifies_is_refused() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        let mut folders = vec![root.join("examples"), root.join("test")];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    if path.file_name().is_none_or(|n| n != "Output") {
                        folders.push(path);
                    }
                } else if path.extension().is_some_and(|e| e == "mlir") {
                    files.push(path);
                }
            }
        }
        files.sort();
        let context = crate::new_context().unwrap();
        context.attach_diagnostic_handler(|_| true);
        let (mut checked, mut printed) = (0, 0);
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            for chunk in text.split("// -----") {
                if chunk.contains('\0') {
                    continue;
                }
                // Text it refuses is not given to MLIR, which would write
                // into freed memory; only the test of that is refused.
                if check(chunk).is_some() {
                    assert!(
                        path.ends_with("forward-reference-across-regions.mlir"),
                        "{}:\n{chunk}",
                        path.display()
                    );
                    continue;
                }
                let Some(module) = melior::ir::Module::parse(&context, chunk) else {
                    continue;
                };
                if !module.as_operation().verify() {
                    continue;
                }
                checked += 1;
                let again = module.as_operation().to_string();
                assert_eq!(
                    check(&again),
                    None,
                    "{} as MLIR prints it:\n{again}",
                    path.display()
                );
                printed += 1;
            }
        }
        // The corpus is there (not an empty walk).
        assert!(checked > 200 && printed == checked, "{checked} modules checked");
    }

    #[test]
    fn a_use_of_a_value_from_a_sibling_region_is_found() {
        // The shape of the fuzz input that corrupted the heap: a name
        // defined in one case is used in another, then defined again in a
        // later switch, whose parse then fails.
        let text = "func.func @f(%i: index) -> index {\n\
                    %0 = scf.index_switch %i -> index\n\
                    case 0 {\n  %x = arith.constant 1 : index\n  scf.yield %x : index\n}\n\
                    default {\n  scf.yield %x : index\n}\n\
                    %1 = scf.index_switch %i -> index\n\
                    case 0 {\n  %x = arith.constant 2 : index\n  scf.yield %x : index\n}\n\
                    default {\n  garbage\n}\n\
                    return %0 : index\n}";
        assert_eq!(check(text), Some((8, 13, "%x".into())));
    }
}
