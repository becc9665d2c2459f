//! Collecting MLIR diagnostics and rendering them the way `mlir-opt` does.
//!
//! A [`DiagnosticCollector`] takes over a context's diagnostics: nothing is
//! printed behind the caller's back, and a tool decides whether to render
//! them ([`render`]) or check them against expectations
//! ([`crate::verify_diagnostics`]).

use melior::{
    Context,
    diagnostic::{DiagnosticHandlerId, DiagnosticSeverity},
    ir::Location,
};
use std::{cell::RefCell, fmt, rc::Rc};

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// Makes the run fail.
    Error,
    /// Does not.
    Warning,
    /// Information, e.g. an optimization decision.
    Remark,
    /// Attached to another diagnostic.
    Note,
}

impl Severity {
    /// The word MLIR prints, also used in `expected-<word>`.
    pub fn word(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Remark => "remark",
            Self::Note => "note",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// A position in the input: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// One diagnostic, detached from the context that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Its severity.
    pub severity: Severity,
    /// Where in the input, when the location leads to a file position.
    pub position: Option<Position>,
    /// The message, without location or severity.
    pub message: String,
    /// Notes attached to it.
    pub notes: Vec<Diagnostic>,
    /// How many characters from the position the caret line underlines
    /// (`^~~~`), as LLVM prints a source range; 0 or 1 is the caret alone.
    pub span: usize,
    /// The file of the location when it names one other than the input's
    /// (a `loc("other.mlir":3:4)` written in the input); `None` for the
    /// input itself.
    pub file: Option<String>,
}

impl Diagnostic {
    /// Whether the diagnostic is at a place in the input (or at none).
    pub fn in_input(&self) -> bool {
        self.file.is_none()
    }
}

impl Diagnostic {
    /// An error at a position.
    pub fn error(position: Option<Position>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            position,
            message: message.into(),
            notes: Vec::new(),
            span: 0,
            file: None,
        }
    }

    /// A warning at a position.
    pub fn warning(position: Option<Position>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(position, message)
        }
    }

    fn from_mlir(diagnostic: &melior::diagnostic::Diagnostic, input: &str) -> Self {
        let severity = match diagnostic.severity() {
            DiagnosticSeverity::Error => Severity::Error,
            DiagnosticSeverity::Warning => Severity::Warning,
            DiagnosticSeverity::Remark => Severity::Remark,
            DiagnosticSeverity::Note => Severity::Note,
        };
        let notes = (0..diagnostic.note_count())
            .filter_map(|i| diagnostic.note(i).ok())
            .map(|note| Self::from_mlir(&note, input))
            .collect();
        // MLIR's message may hold bytes that are not UTF-8 (an op name
        // written with `\AD` in quotes); melior's `Display` then fails, and
        // `to_string` would panic inside MLIR's handler. Keep what printed.
        let mut message = String::new();
        if std::fmt::Write::write_fmt(&mut message, format_args!("{diagnostic}")).is_err() {
            message.push_str("... (the rest of this message is not valid UTF-8)");
        }
        Self {
            severity,
            position: position_of(diagnostic.location()),
            span: 0,
            file: file_position(diagnostic.location())
                .map(|(file, _)| file)
                .filter(|f| !is_input_buffer(f, input)),
            message,
            notes,
        }
    }
}

/// Whether `file` names the input: the parser's unnamed buffer (`-`, or
/// empty for locations jitc makes) until `name_locations` renames them,
/// and `input` after.
fn is_input_buffer(file: &str, input: &str) -> bool {
    file.is_empty() || file == "-" || file == input
}

/// The file position a location leads to: a file location itself, or the
/// first one inside a name, call-site or fused location.
pub fn position_of(location: Location) -> Option<Position> {
    file_position(location).map(|(_, position)| position)
}

/// [`position_of`], with the file the position is in.
fn file_position(location: Location) -> Option<(String, Position)> {
    if location.is_file_line_col_range() {
        let file = location.file_line_col_range_filename();
        let position = Position {
            line: location.file_line_col_range_start_line(),
            column: location.file_line_col_range_start_column(),
        };
        Some((file.as_string_ref().as_str().unwrap_or("").to_owned(), position))
    } else if location.is_name() {
        file_position(location.name_child_location())
    } else if location.is_call_site() {
        file_position(location.call_site_callee())
    } else if location.is_fused() {
        (0..location.fused_num_locations()).find_map(|i| file_position(location.fused_location(i)))
    } else {
        None
    }
}

/// Captures every diagnostic of a context until dropped.
pub struct DiagnosticCollector<'c> {
    context: &'c Context,
    id: Option<DiagnosticHandlerId>,
    diagnostics: Rc<RefCell<Vec<Diagnostic>>>,
}

impl<'c> DiagnosticCollector<'c> {
    /// Starts capturing `context`'s diagnostics.
    pub fn attach(context: &'c Context) -> Self {
        Self::for_input(context, "")
    }

    /// Starts capturing `context`'s diagnostics for the input named
    /// `input` (a path, or `<stdin>`): locations in other files keep
    /// their file ([`Diagnostic::file`]).
    pub fn for_input(context: &'c Context, input: &str) -> Self {
        let diagnostics = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::clone(&diagnostics);
        let input = input.to_owned();
        let id = context.attach_diagnostic_handler(move |diagnostic| {
            // Runs inside MLIR: nothing here may panic.
            if let Ok(mut sink) = sink.try_borrow_mut() {
                sink.push(Diagnostic::from_mlir(&diagnostic, &input));
            }
            true
        });
        Self {
            context,
            id: Some(id),
            diagnostics,
        }
    }

    /// Takes the diagnostics captured so far.
    pub fn take(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.diagnostics.borrow_mut())
    }

    /// Whether an error was captured and not yet taken.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .borrow()
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

impl Drop for DiagnosticCollector<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.context.detach_diagnostic_handler(id);
        }
    }
}

/// Renders a diagnostic as `mlir-opt` does: `name:line:col: severity:
/// message`, the source line, a caret under the column, then the notes.
pub fn render(diagnostic: &Diagnostic, source_name: &str, source: &str) -> String {
    let mut out = String::new();
    render_into(&mut out, diagnostic, source_name, source);
    out
}

fn render_into(out: &mut String, diagnostic: &Diagnostic, source_name: &str, source: &str) {
    use std::fmt::Write;
    // In another file: its name and position, and no line of the input.
    let name = diagnostic.file.as_deref().unwrap_or(source_name);
    match diagnostic.position {
        Some(Position { line, column }) => {
            let _ = writeln!(
                out,
                "{name}:{line}:{column}: {}: {}",
                diagnostic.severity, diagnostic.message
            );
            // Show the line only when it is printable text of sane length.
            let source = if diagnostic.in_input() { source } else { "" };
            let text = source.lines().nth(line.saturating_sub(1)).filter(|text| {
                text.chars().count() <= 400
                    && !text
                        .chars()
                        .any(|c| c.is_control() && c != '\t' || c == '\u{fffd}')
            });
            if let Some(text) = text {
                let _ = writeln!(out, "{text}");
                // Keep tabs so the caret lines up under the column.
                let pad: String = text
                    .chars()
                    .take(column.saturating_sub(1))
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                // A range is clipped to the end of its line.
                let width = diagnostic
                    .span
                    .min((text.chars().count() + 1).saturating_sub(column))
                    .max(1);
                let _ = writeln!(out, "{pad}^{}", "~".repeat(width - 1));
            }
        }
        None => {
            let _ = writeln!(out, "{name}: {}: {}", diagnostic.severity, diagnostic.message);
        }
    }
    for note in &diagnostic.notes {
        render_into(out, note, source_name, source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_line_and_caret() {
        let diagnostic = Diagnostic::error(Some(Position { line: 2, column: 3 }), "bad thing");
        let text = render(&diagnostic, "in.mlir", "first\n  second\n");
        assert_eq!(text, "in.mlir:2:3: error: bad thing\n  second\n  ^\n");
    }

    #[test]
    fn renders_without_position() {
        let diagnostic = Diagnostic::error(None, "no place");
        assert_eq!(render(&diagnostic, "in.mlir", ""), "in.mlir: error: no place\n");
    }
}
