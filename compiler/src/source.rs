//! Input buffers: splitting at `// -----` and parsing into modules.

use melior::{Context, ir::Module};

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
    // SAFETY: `buffer` outlives the call and ends with the NUL the lexer
    // expects; the returned module is owned by the caller.
    unsafe { Module::from_option_raw(mlir_sys::mlirModuleCreateParse(context.to_raw(), source)) }
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
}
