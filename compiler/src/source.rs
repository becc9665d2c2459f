//! Input buffers: splitting at `// -----`, bounding their nesting, and
//! parsing into modules.

use melior::{
    Context,
    ir::{Location, Module},
};

/// The marker `--split-input-file` splits at.
pub const SPLIT_MARKER: &str = "// -----";

/// One piece of an input buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Where the chunk starts in the whole input (1-based line and column);
    /// the first chunk starts at line 1, column 1.
    pub start: crate::Position,
    /// The chunk's text, preceded by one newline per earlier input line and
    /// one space per earlier column of its first line, so that lines and
    /// columns in its diagnostics are those of the whole input.
    pub text: String,
}

impl Chunk {
    /// The whole of `text` as one chunk.
    pub fn whole(text: &str) -> Self {
        Chunk {
            start: crate::Position { line: 1, column: 1 },
            text: text.to_owned(),
        }
    }
}

/// Checks a split marker given by the user: mlir-opt cuts at all but its
/// last two characters and checks those after each cut, so it needs at
/// least three, and its last two must be one byte each.
pub fn check_split_marker(marker: &str) -> Result<(), String> {
    let tail = marker.get(marker.len().saturating_sub(2)..).unwrap_or("");
    if marker.len() < 3 || tail.len() != 2 || !tail.is_ascii() {
        return Err(format!(
            "the split marker '{marker}' is too short or ends in a character that is not ASCII; it needs at least three characters, the last two ASCII (the default is '{SPLIT_MARKER}')"
        ));
    }
    Ok(())
}

/// An input split at its markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitInput {
    /// The chunks, in order.
    pub chunks: Vec<Chunk>,
    /// Where a `// ---` is followed by something other than the marker's
    /// last two dashes (mlir-opt's "near miss with file split marker"
    /// warning): just after the `// ---`. Such text stays in its chunk.
    pub near_misses: Vec<crate::Position>,
}

/// Splits `text` at [`SPLIT_MARKER`] as mlir-opt 22 does: anywhere in a
/// line, not only at its start (the rest of the line after the marker
/// begins the next chunk). A `// ---` that is not followed by `--` and one
/// more character other than `0` before the next `// ---` is a near miss,
/// reported and left in its chunk.
///
/// One difference from mlir-opt: a file that starts with the marker has an
/// empty first chunk here, where mlir-opt parses the marker's last two
/// dashes as the start of its first chunk and reports an error.
///
/// `marker` is [`SPLIT_MARKER`] unless the user gave another (mlir-opt's
/// `--split-input-file=<marker>`); see [`check_split_marker`].
pub fn split_input(text: &str, marker: &str) -> SplitInput {
    // mlir-opt cuts at the marker without its last two characters, then
    // checks that each piece after a cut starts with them.
    let (cut, tail) = match marker
        .len()
        .checked_sub(2)
        .filter(|&at| at > 0 && marker.is_char_boundary(at))
    {
        Some(at) => marker.split_at(at),
        None => (marker, ""),
    };
    let cuts: Vec<usize> = text.match_indices(cut).map(|(at, _)| at).collect();
    let position = |offset: usize| {
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |at| at + 1);
        crate::Position {
            line,
            column: offset - line_start + 1,
        }
    };
    let mut chunks = Vec::new();
    let mut near_misses = Vec::new();
    let mut chunk_start = 0;
    for (k, &at) in cuts.iter().enumerate() {
        let piece_start = at + cut.len();
        let piece_end = cuts.get(k + 1).copied().unwrap_or(text.len());
        let piece = &text.as_bytes()[piece_start..piece_end];
        let t = tail.len();
        if piece.len() > t && piece.starts_with(tail.as_bytes()) && piece[t] != b'0' {
            chunks.push(chunk(text, chunk_start, at, position(chunk_start)));
            chunk_start = piece_start + t;
        } else {
            near_misses.push(position(piece_start));
        }
    }
    chunks.push(chunk(text, chunk_start, text.len(), position(chunk_start)));
    SplitInput { chunks, near_misses }
}

fn chunk(text: &str, start: usize, end: usize, position: crate::Position) -> Chunk {
    let mut padded = "\n".repeat(position.line - 1);
    padded.push_str(&" ".repeat(position.column - 1));
    padded.push_str(&text[start..end]);
    Chunk {
        start: position,
        text: padded,
    }
}

/// Names the source of the locations the parser gave `module` (its
/// buffer is unnamed, `-`) as mlir-opt names them: `name` is the input
/// file, or `<stdin>`. The module's own location becomes `name:0:0` for a
/// whole input or its first chunk, else where the chunk starts, as
/// mlir-opt's. Locations written in the input (`loc(...)`) are kept.
pub fn name_locations(context: &Context, module: &mut Module, name: &str, chunk: &Chunk) {
    use melior::ir::{BlockLike, RegionLike, ValueLike, operation::OperationLike};
    let renamed = |location: Location| -> Option<Location> {
        let parsed = location.is_file_line_col_range()
            && location.file_line_col_range_filename().as_string_ref().as_str() == Ok("-");
        parsed.then(|| {
            Location::new(
                context,
                name,
                location.file_line_col_range_start_line(),
                location.file_line_col_range_start_column(),
            )
        })
    };
    let (line, column) = if chunk.start.line == 1 && chunk.start.column == 1 {
        (0, 0)
    } else {
        (chunk.start.line, chunk.start.column)
    };
    let top = module.as_operation();
    // The module the parser made itself is at 0:0; one written in the
    // input (`module {`) is where it is written, and only renamed.
    let made = top.location().is_file_line_col_range()
        && top.location().file_line_col_range_start_line() == 0
        && top.location().file_line_col_range_start_column() == 0;
    if made && renamed(top.location()).is_some() {
        let location = Location::new(context, name, line, column);
        // SAFETY: the module and the location live in `context`.
        unsafe { mlir_sys::mlirOperationSetLocation(top.to_raw(), location.to_raw()) };
    }
    top.walk(melior::ir::operation::WalkOrder::PreOrder, |op| {
        if (op.to_raw().ptr != top.to_raw().ptr || !made)
            && let Some(location) = renamed(op.location())
        {
            // SAFETY: as above; setting a location changes no structure.
            unsafe { mlir_sys::mlirOperationSetLocation(op.to_raw(), location.to_raw()) };
        }
        for region in op.regions() {
            let mut block = region.first_block();
            while let Some(current) = block {
                for index in 0..current.argument_count() {
                    if let Ok(argument) = current.argument(index)
                        && let Some(location) = renamed(argument.location())
                    {
                        // SAFETY: as above.
                        unsafe {
                            mlir_sys::mlirBlockArgumentSetLocation(argument.to_raw(), location.to_raw())
                        };
                    }
                }
                block = current.next_in_region();
            }
        }
        melior::ir::operation::WalkResult::Advance
    });
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

/// Parses `text` as a module. Errors go to the context's diagnostic
/// handlers, at lines and columns of `text`.
///
/// Unlike `Module::parse`, this does not panic on text with NUL characters:
/// the lexer reports them as unexpected characters.
pub fn parse_module<'c>(context: &'c Context, text: &str) -> Option<Module<'c>> {
    // The lexer takes a NUL for the end of the buffer and would silently
    // ignore the rest; U+FFFD makes it report the character instead.
    let text = text.replace('\0', "\u{fffd}");
    // MLIR frees a value with uses still pointing at it when such a use
    // meets a failing parse later (`ssa_scope`): refuse the text first.
    if let Some(undefined) = crate::ssa_scope::undefined_use(&text) {
        jitc_dialect::emit_error(
            Location::new(context, "", undefined.line, undefined.column),
            &undefined.to_string(),
        );
        return None;
    }
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

    fn at(line: usize, column: usize) -> crate::Position {
        crate::Position { line, column }
    }

    #[test]
    fn split_keeps_lines_and_columns() {
        let split = split_input("a\n// -----\nb\nc\n  // ----- tail\nd", SPLIT_MARKER);
        assert!(split.near_misses.is_empty());
        let chunks = split.chunks;
        assert_eq!(chunks.len(), 3);
        assert_eq!(
            chunks[0],
            Chunk {
                start: at(1, 1),
                text: "a\n".into()
            }
        );
        assert_eq!(
            chunks[1],
            Chunk {
                start: at(2, 9),
                text: "\n        \nb\nc\n  ".into()
            }
        );
        // The rest of the marker's line begins the next chunk, at its column.
        assert_eq!(
            chunks[2],
            Chunk {
                start: at(5, 11),
                text: "\n\n\n\n           tail\nd".into()
            }
        );
    }

    #[test]
    fn near_misses_stay_in_their_chunk() {
        // `// ---` then no `--`; the marker at the very end with nothing
        // after its dashes; `-----0`.
        let split = split_input("a\n// --- x\nb\n// -----0\nc\n// -----", SPLIT_MARKER);
        assert_eq!(split.chunks.len(), 1);
        assert_eq!(split.near_misses, vec![at(2, 7), at(4, 7), at(6, 7)]);
        // More dashes than the marker's: the marker splits, the rest is text.
        let split = split_input("a\n// -------\nb", SPLIT_MARKER);
        assert_eq!(split.chunks.len(), 2);
        assert_eq!(split.chunks[1].text, "\n        --\nb");
    }

    #[test]
    fn no_marker_is_one_chunk() {
        let split = split_input("x\ny\n", SPLIT_MARKER);
        assert_eq!(split.chunks, vec![Chunk::whole("x\ny\n")]);
    }

    #[test]
    fn another_marker_splits_the_same_way() {
        let split = split_input("a\n#-----b\n#---x\nc", "#-----");
        let texts: Vec<&str> = split.chunks.iter().map(|c| c.text.trim()).collect();
        assert_eq!(texts, ["a", "b\n#---x\nc"]);
        assert_eq!(split.near_misses, vec![at(3, 5)]);
        // The default marker is not one then.
        assert_eq!(split_input("a\n// -----\nb", "#-----").chunks.len(), 1);
        assert!(check_split_marker("#-----").is_ok());
        for short in ["", "ab", "a\u{e9}", "abc\u{e9}"] {
            assert!(check_split_marker(short).is_err(), "{short:?}");
        }
        // An unchecked short marker splits at the whole marker rather than
        // panicking.
        assert_eq!(split_input("a\u{e9}b", "\u{e9}").chunks.len(), 2);
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
