//! `--verify-diagnostics`: checks produced diagnostics against
//! `expected-*` comments in the input, as MLIR's verifier handler does.
//!
//! An expectation is written in the input as
//!
//! ```text
//! // expected-error {{substring of the message}}
//! // expected-warning@+1 {{...}}     the next line
//! // expected-remark@-2 {{...}}      two lines up
//! // expected-note@above {{...}}     the previous line
//! // expected-error@below {{...}}    the next line
//! ```
//!
//! Algorithm:
//! 1. collect the expectations of the buffer with their target lines;
//! 2. match each diagnostic, and each of its notes, to the first unmatched
//!    expectation of the same severity and line whose text it contains;
//! 3. report every diagnostic left over as unexpected, and every expectation
//!    left over as not produced.

use crate::diagnostics::{Diagnostic, Position, Severity};
use regex::Regex;
use std::sync::LazyLock;

static EXPECTATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"expected-(error|warning|remark|note)(@[^\s{]*)?\s*(\{\{.*\}\})?")
        .expect("the expectation pattern is valid")
});

/// One `expected-*` comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// The severity it expects.
    pub severity: Severity,
    /// The line the diagnostic must be on.
    pub line: usize,
    /// Where the comment is, for reporting it.
    pub at: Position,
    /// A substring the message must contain.
    pub text: String,
}

/// Parses the expectations of `source`. Malformed ones come back as errors.
pub fn parse_expectations(source: &str) -> Result<Vec<Expectation>, Vec<Diagnostic>> {
    let mut expectations = Vec::new();
    let mut errors = Vec::new();
    for (index, line_text) in source.lines().enumerate() {
        let line = index + 1;
        for found in EXPECTATION.captures_iter(line_text) {
            let whole = found.get(0).expect("capture 0 is the match");
            let at = Position {
                line,
                column: line_text[..whole.start()].chars().count() + 1,
            };
            let severity = match &found[1] {
                "error" => Severity::Error,
                "warning" => Severity::Warning,
                "remark" => Severity::Remark,
                _ => Severity::Note,
            };
            let target = match found.get(2).map(|m| &m.as_str()[1..]) {
                None => Some(line),
                Some("above") => line.checked_sub(1),
                Some("below") => Some(line + 1),
                Some(offset) => parse_offset(offset).and_then(|delta| line.checked_add_signed(delta)),
            };
            let Some(target) = target.filter(|&t| t >= 1) else {
                errors.push(Diagnostic::error(
                    Some(at),
                    "expected '@above', '@below', '@+N' or '@-N' naming a line of the input",
                ));
                continue;
            };
            let Some(text) = found.get(3).map(|m| m.as_str()) else {
                errors.push(Diagnostic::error(
                    Some(at),
                    "expected '{{' and '}}' around the expected message",
                ));
                continue;
            };
            expectations.push(Expectation {
                severity,
                line: target,
                at,
                text: text[2..text.len() - 2].to_owned(),
            });
        }
    }
    if errors.is_empty() {
        Ok(expectations)
    } else {
        Err(errors)
    }
}

fn parse_offset(offset: &str) -> Option<isize> {
    let (sign, digits) = offset.split_at_checked(1)?;
    let magnitude: isize = digits.parse().ok()?;
    match sign {
        "+" => Some(magnitude),
        "-" => Some(-magnitude),
        _ => None,
    }
}

/// Matches `diagnostics` against `expectations`; returns one error for every
/// unexpected diagnostic and every expectation not produced.
pub fn check(expectations: &[Expectation], diagnostics: &[Diagnostic]) -> Vec<Diagnostic> {
    let mut matched = vec![false; expectations.len()];
    let mut problems = Vec::new();
    let mut pending: Vec<&Diagnostic> = diagnostics.iter().collect();
    while let Some(diagnostic) = pending.pop() {
        pending.extend(diagnostic.notes.iter());
        let found = expectations.iter().enumerate().position(|(i, e)| {
            !matched[i]
                && e.severity == diagnostic.severity
                && diagnostic.position.is_some_and(|p| p.line == e.line)
                && diagnostic.message.contains(&e.text)
        });
        match found {
            Some(i) => matched[i] = true,
            None => problems.push(Diagnostic::error(
                diagnostic.position,
                format!("unexpected {}: {}", diagnostic.severity, diagnostic.message),
            )),
        }
    }
    problems.reverse();
    for (expectation, _) in expectations.iter().zip(&matched).filter(|(_, m)| !**m) {
        problems.push(Diagnostic::error(
            Some(expectation.at),
            format!(
                "expected {} \"{}\" was not produced",
                expectation.severity, expectation.text
            ),
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: usize) -> Option<Position> {
        Some(Position { line, column: 1 })
    }

    #[test]
    fn parses_offsets() {
        let source = "a // expected-error {{same}}\n// expected-warning@+1 {{next}}\nb\n// expected-note@above {{prev}}\n// expected-remark@-3 {{up}}\n// expected-error@below {{down}}\n";
        let found = parse_expectations(source).unwrap();
        let summary: Vec<_> = found
            .iter()
            .map(|e| (e.severity, e.line, e.text.as_str()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (Severity::Error, 1, "same"),
                (Severity::Warning, 3, "next"),
                (Severity::Note, 3, "prev"),
                (Severity::Remark, 2, "up"),
                (Severity::Error, 7, "down"),
            ]
        );
    }

    #[test]
    fn rejects_bad_offsets_and_missing_text() {
        let errors = parse_expectations(
            "// expected-error@-5 {{x}}\n// expected-error@sideways {{x}}\n// expected-error\n",
        )
        .unwrap_err();
        assert_eq!(errors.len(), 3);
    }

    #[test]
    fn matches_and_reports_both_ways() {
        let expectations =
            parse_expectations("x\n// expected-error@-1 {{bad}}\n// expected-error {{missing}}\n").unwrap();
        let diagnostics = vec![
            Diagnostic::error(at(1), "a bad thing"),
            Diagnostic::error(at(1), "another thing"),
        ];
        let problems = check(&expectations, &diagnostics);
        let messages: Vec<_> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "unexpected error: another thing",
                "expected error \"missing\" was not produced"
            ]
        );
    }
}
