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
    // Scopes (brace pairs): each one's parent, and the open ones, innermost
    // last, with the names defined in each; how many open scopes define a
    // name (a name is in scope when it is above zero).
    let mut parent: Vec<usize> = vec![0];
    let mut open: Vec<(usize, HashSet<&str>)> = vec![(0, HashSet::new())];
    let mut visible: HashMap<&str, usize> = HashMap::new();
    // Uses of names not in scope, by name: the first such use, and the
    // innermost scope around it.
    let mut pending: HashMap<&str, (UndefinedUse, usize)> = HashMap::new();
    let (mut line, mut line_start) = (1usize, 0usize);
    // Paren depth, and the depth at which a generic op's operand list
    // opened (its names are uses).
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
                // A quoted op name is where a statement starts (after a
                // result list's `=`, a line's start, a brace or a block
                // label's `:`); not a quoted symbol (`@"f"(...)`) or a
                // name location (`loc("a"(...))`).
                let statement = bytes[..at]
                    .iter()
                    .rev()
                    .find(|c| !matches!(c, b' ' | b'\t'))
                    .is_none_or(|c| matches!(c, b'\n' | b'=' | b'{' | b'}' | b':'));
                let quote = at;
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
                if statement && isolated(text.get(quote + 1..at.saturating_sub(1)).unwrap_or("")) {
                    pending.clear();
                }
                if statement && bytes.get(at) == Some(&b'(') && operands.is_none() {
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
                let id = parent.len();
                parent.push(open.last().map_or(0, |(id, _)| *id));
                open.push((id, HashSet::new()));
                custom_uses = false;
                at += 1;
            }
            b'}' => {
                if open.len() > 1
                    && let Some((_, names)) = open.pop()
                {
                    for name in names {
                        if let Some(count) = visible.get_mut(name) {
                            *count -= 1;
                        }
                    }
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
                let after = suffix_end(bytes, at);
                let defines = result_list_ends_in_equals(bytes, after);
                let here = open.last().map_or(0, |(id, _)| *id);
                if operands.is_some() || (custom_uses && !defines) {
                    if visible.get(name).is_none_or(|&count| count == 0) && !pending.contains_key(name) {
                        let column = start - line_start + 1;
                        pending.insert(
                            name,
                            (
                                UndefinedUse {
                                    line,
                                    column,
                                    name: name.to_owned(),
                                },
                                here,
                            ),
                        );
                    }
                } else {
                    // Only a name surely defined here (`%a = `, a result
                    // list, a block's argument) resolves a pending use: a
                    // name counted as a definition for want of knowing
                    // (an operand of an op not listed) may be a use.
                    if (defines || in_block_arguments(bytes, start))
                        && let Some((earlier, scope)) = pending.remove(name)
                        && !encloses(&parent, here, scope)
                    {
                        return Some(earlier);
                    }
                    if let Some((_, names)) = open.last_mut()
                        && names.insert(name)
                    {
                        *visible.entry(name).or_insert(0) += 1;
                    }
                }
                at = after;
            }
            _ if is_id_start(b)
                && (at == 0
                    || !is_id(bytes[at - 1])
                        && !matches!(bytes[at - 1], b'%' | b'@' | b'^' | b'#' | b'!')) =>
            {
                let start = at;
                while at < bytes.len() && is_id(bytes[at]) {
                    at += 1;
                }
                let word = &text[start..at];
                if isolated(word) {
                    pending.clear();
                }
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

/// Whether `op` is a function or a module: its body is isolated from
/// above, so no use before it can be resolved to a definition in it (nor
/// after it), and the uses pending are dropped where one starts.
fn isolated(op: &str) -> bool {
    op == "module" || op == "builtin.module" || op.ends_with(".func")
}

/// Past a name's `#1` (a use of one result) or `:2` (a group of results).
fn suffix_end(bytes: &[u8], at: usize) -> usize {
    let mut after = at;
    if matches!(bytes.get(after), Some(b'#' | b':')) && bytes.get(after + 1).is_some_and(u8::is_ascii_digit) {
        after += 1;
        while after < bytes.len() && bytes[after].is_ascii_digit() {
            after += 1;
        }
    }
    after
}

/// Whether the name ending at `at` starts or continues a list of names
/// that ends in `=` (`%a = `, `%lo, %hi = `, `%r:2, %s = `).
fn result_list_ends_in_equals(bytes: &[u8], mut at: usize) -> bool {
    loop {
        while at < bytes.len() && matches!(bytes[at], b' ' | b'\t') {
            at += 1;
        }
        match bytes.get(at) {
            Some(b'=') => return bytes.get(at + 1) != Some(&b'='),
            Some(b',') => {
                at += 1;
                while at < bytes.len() && matches!(bytes[at], b' ' | b'\t') {
                    at += 1;
                }
                if bytes.get(at) != Some(&b'%') {
                    return false;
                }
                at += 1;
                while at < bytes.len() && is_id(bytes[at]) {
                    at += 1;
                }
                at = suffix_end(bytes, at);
            }
            _ => return false,
        }
    }
}

/// Whether the `%` at `at` is in a block's argument list: `^label(`,
/// first on its line (a block's label, not a branch's successor), opens
/// the parenthesis it is in.
fn in_block_arguments(bytes: &[u8], at: usize) -> bool {
    let mut depth = 0usize;
    let mut k = at;
    while k > 0 {
        k -= 1;
        match bytes[k] {
            b'\n' => return false,
            b')' => depth += 1,
            b'(' if depth > 0 => depth -= 1,
            b'(' => {
                let mut j = k;
                while j > 0 && is_id(bytes[j - 1]) {
                    j -= 1;
                }
                if !(j < k && j > 0 && bytes[j - 1] == b'^') {
                    return false;
                }
                let before = &bytes[..j - 1];
                let line = before.iter().rposition(|&c| c == b'\n').map_or(0, |n| n + 1);
                return before[line..].iter().all(|c| matches!(c, b' ' | b'\t'));
            }
            _ => {}
        }
    }
    false
}

/// Whether scope `outer` is `inner` or holds it.
fn encloses(parent: &[usize], outer: usize, mut inner: usize) -> bool {
    loop {
        if inner == outer {
            return true;
        }
        if inner == 0 {
            return false;
        }
        inner = parent[inner];
    }
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

    /// Valid texts a first version refused (a review's cases): two ops on
    /// one line, a symbol or label spelled like an op, a quoted symbol,
    /// and a forward reference across blocks with an operand of an op the
    /// scan does not know in a nested region.
    #[test]
    fn a_review_s_valid_texts_pass() {
        let texts = [
            "func.func @f(%x: i32) -> i32 {\n  %a = arith.addi %x, %x : i32 %lo, %hi = arith.mului_extended %a, %a : i32\n  return %lo : i32\n}\nfunc.func @g(%x: i32) -> i32 {\n  %lo = arith.addi %x, %x : i32\n  return %lo : i32\n}",
            "func.func @return(%a: i32) -> i32 {\n  return %a : i32\n}\nfunc.func @g(%x: i32) -> i32 {\n  %a = arith.addi %x, %x : i32\n  return %a : i32\n}",
            "func.func @f(%c: i1) {\n  cf.cond_br %c, ^return(%c : i1), ^return(%c : i1)\n^return(%a: i1):\n  return\n}\nfunc.func @g(%x: i1) {\n  %a = arith.xori %x, %x : i1\n  return\n}",
            "module {\n  func.func @\"<lambda>\"(%arg0: index) -> index {\n    return %arg0 : index\n  }\n  func.func @g() {\n    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n    %c4 = arith.constant 4 : index\n    scf.for %arg0 = %c0 to %c4 step %c1 {\n    }\n    return\n  }\n}",
            "func.func @f(%n: index) -> index {\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  cf.br ^bb2\n^bb1:\n  %y = arith.addi %x, %c1 : index\n  return %y : index\n^bb3:\n  scf.for %i = %c0 to %n step %c1 {\n    scf.for %j = %x to %n step %c1 {\n    }\n  }\n  cf.br ^bb1\n^bb2:\n  %x = arith.constant 0 : index\n  cf.br ^bb3\n}",
        ];
        for text in texts {
            assert_eq!(check(text), None, "{text}");
        }
    }

    /// A second review's valid texts: a forward reference across blocks
    /// whose definition the scan is not sure of (split over lines, or after
    /// another statement on the line), and a later function that defines
    /// the same name.
    #[test]
    fn a_later_function_does_not_resolve_a_use() {
        let g = "func.func @g(%x: i32) -> i32 {\n  %b = arith.addi %x, %x : i32\n  %x2 = arith.addi %b, %b : i32\n  %lo = arith.addi %x, %x : i32\n  return %b : i32\n}";
        let texts = [
            "func.func @f() -> i32 {\n  cf.br ^bb2\n^bb1:\n  return %x : i32\n^bb2:\n  %x\n    = arith.constant 1 : i32\n  cf.br ^bb1\n}\nfunc.func @h() -> i32 {\n  %x = arith.constant 2 : i32\n  return %x : i32\n}",
            "func.func @f(%a: i32) -> i32 {\n  cf.br ^bb2\n^bb1:\n  return %lo : i32\n^bb2:\n  %lo,\n  %hi = arith.mului_extended %a, %a : i32\n  cf.br ^bb1\n}\n",
            "func.func @f(%c: i32) -> i32 {\n  cf.br ^bb2(%c, %c : i32, i32)\n^bb1:\n  %y = arith.addi %b, %b : i32\n  return %y : i32\n^bb2(%a: i32,\n     %b: i32):\n  cf.br ^bb1\n}\n",
            "func.func @f(%a: i32) -> i32 {\n  cf.br ^bb1(%a : i32)\n^bb1(%x: i32):\n  return %x : i32 ^bb2(%b: i32):\n  return %b : i32\n}\n",
            "\"func.func\"() <{function_type = () -> (), sym_name = \"f\"}> ({\n  \"test.use\"(%b) : (i32) -> ()\n  \"func.return\"() : () -> ()\n}) : () -> ()\n",
        ];
        for text in texts {
            let text = format!("{text}{g}");
            assert_eq!(check(&text), None, "{text}");
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
