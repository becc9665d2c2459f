//! Input buffers: splitting at `// -----`, bounding their nesting, and
//! parsing into modules.

use melior::{
    Context,
    ir::{Location, Module},
};

/// The marker `--split-input-file` splits at: a line starting with it.
pub const SPLIT_MARKER: &str = "// -----";

/// One piece of an input buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The 1-based line of the input where the chunk starts.
    pub first_line: usize,
    /// The chunk's text, preceded by one newline per earlier input line, so
    /// that line numbers in its diagnostics are lines of the whole input.
    pub text: String,
}

/// Checks that `text` nests brackets at most `limit` deep: braces
/// (regions, dictionaries), parentheses (affine expressions, operand
/// lists), square brackets (arrays) and angle brackets (types and
/// attributes; not the `>` of `->`, `>=` or the `<` of `<=`), counted
/// together, outside string literals and `//` comments. MLIR's parser and
/// walks recurse once per level, so a caller checks this against the
/// stack it runs on before parsing; the error completes a sentence whose
/// subject is the input ("nests more than ...").
pub fn check_nesting(text: &str, limit: usize) -> Result<(), String> {
    let mut depth = 0usize;
    for (line, content) in text.lines().enumerate() {
        let mut in_string = false;
        let mut escaped = false;
        let mut previous = ' ';
        let mut chars = content.chars().peekable();
        while let Some(c) = chars.next() {
            if in_string {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            let next = chars.peek().copied();
            match c {
                '"' => in_string = true,
                '/' if previous == '/' => break,
                '{' | '(' | '[' => depth += 1,
                '<' if next != Some('=') => depth += 1,
                '}' | ')' | ']' => depth = depth.saturating_sub(1),
                '>' if previous != '-' && next != Some('=') => depth = depth.saturating_sub(1),
                _ => {}
            }
            if depth > limit {
                return Err(format!(
                    "nests more than {limit} levels deep at line {}; jitc reads at most {limit} levels of brackets",
                    line + 1
                ));
            }
            previous = c;
        }
    }
    Ok(())
}

/// Splits `text` at [`SPLIT_MARKER`] lines (which belong to no chunk).
pub fn split_input(text: &str) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    let mut current = Chunk {
        first_line: 1,
        text: String::new(),
    };
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if line.trim_start().starts_with(SPLIT_MARKER) {
            let next = Chunk {
                first_line: index + 2,
                text: "\n".repeat(index + 1),
            };
            chunks.push(std::mem::replace(&mut current, next));
        } else {
            current.text.push_str(line);
        }
    }
    chunks.push(current);
    chunks
}

/// Parses `text` as a module. Errors go to the context's diagnostic
/// handlers, at lines and columns of `text`.
///
/// Unlike `Module::parse`, this does not panic on text with NUL characters:
/// the lexer reports them as unexpected characters.
pub fn parse_module<'c>(context: &'c Context, text: &str) -> Option<Module<'c>> {
    // The lexer takes a NUL for the end of the buffer and would silently
    // ignore the rest; U+FFFD makes it report the character instead.
    let text = text.replace('\0', "\u{fffd}");
    // MLIR's lexer reads one byte past the end, expecting a NUL there.
    let mut buffer = Vec::with_capacity(text.len() + 1);
    buffer.extend_from_slice(text.as_bytes());
    buffer.push(0);
    let source = mlir_sys::MlirStringRef {
        data: buffer.as_ptr().cast(),
        length: text.len(),
    };
    // Count the errors MLIR reports; the handler passes them on.
    let errors = std::rc::Rc::new(std::cell::Cell::new(0usize));
    let counter = std::rc::Rc::clone(&errors);
    let id = context.attach_diagnostic_handler(move |diagnostic| {
        if matches!(
            diagnostic.severity(),
            melior::diagnostic::DiagnosticSeverity::Error
        ) {
            counter.set(counter.get() + 1);
        }
        false
    });
    // SAFETY: `buffer` outlives the call and ends with the NUL the lexer
    // expects; the returned module is owned by the caller.
    let module =
        unsafe { Module::from_option_raw(mlir_sys::mlirModuleCreateParse(context.to_raw(), source)) };
    context.detach_diagnostic_handler(id);
    if module.is_none() && errors.get() == 0 {
        // MLIR fails silently on custom syntax for IRDL ops; say why.
        let (line, column, message) = match custom_meta_op(&text) {
            Some((line, column, op)) => (
                line,
                column,
                format!(
                    "'{op}' must be written in the generic form \"{op}\"(...); meta ops have no custom syntax"
                ),
            ),
            None => (
                1,
                1,
                "the input did not parse, and MLIR gave no reason".to_owned(),
            ),
        };
        jitc_dialect::emit_error(Location::new(context, "", line, column), &message);
    }
    module
}

/// The first `meta.` op written in custom form (without quotes), outside
/// comments: its line, column and name.
fn custom_meta_op(text: &str) -> Option<(usize, usize, String)> {
    for (index, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut search = 0;
        while let Some(found) = code[search..].find("meta.") {
            let at = search + found;
            let quoted = code[..at].ends_with('"');
            let name: String = code[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .collect();
            let is_op = jitc_dialect::ops::PURE_OPS.contains(&name.as_str())
                || name == jitc_dialect::ops::GuardOp::NAME
                || name == jitc_dialect::ops::StateWriteOp::NAME;
            if !quoted && is_op {
                return Some((index + 1, code[..at].chars().count() + 1, name));
            }
            search = at + 5;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_line_numbers() {
        let chunks = split_input("a\n// -----\nb\nc\n  // ----- tail\nd");
        assert_eq!(chunks.len(), 3);
        assert_eq!(
            chunks[0],
            Chunk {
                first_line: 1,
                text: "a\n".into()
            }
        );
        assert_eq!(
            chunks[1],
            Chunk {
                first_line: 3,
                text: "\n\nb\nc\n".into()
            }
        );
        assert_eq!(
            chunks[2],
            Chunk {
                first_line: 6,
                text: "\n\n\n\n\nd".into()
            }
        );
    }

    #[test]
    fn no_marker_is_one_chunk() {
        assert_eq!(split_input("x\ny\n").len(), 1);
    }

    #[test]
    fn nesting_counts_every_bracket_but_arrows_and_comparisons() {
        let map = "#map = affine_map<(d0) -> ((d0 + 1) floordiv 2)>";
        assert!(check_nesting(map, 3).is_ok());
        assert!(check_nesting(map, 2).is_err());
        // `->`, `>=` and `<=` close or open nothing; strings and comments
        // are not read.
        let set = "#set = affine_set<(d0) : (d0 - 1 >= 0)> // ((((";
        assert!(check_nesting(set, 2).is_ok());
        assert!(check_nesting("\"{{{{{{\" {[(<x>)]}", 4).is_ok());
        let error = check_nesting("a\n((((", 3).unwrap_err();
        assert_eq!(
            error,
            "nests more than 3 levels deep at line 2; jitc reads at most 3 levels of brackets"
        );
    }
}
