//! `--verify-diagnostics`: checks produced diagnostics against
//! `expected-*` comments in the input, as MLIR's verifier handler does.
//!
//! An expectation is written in the input as
//!
//! ```text
//! // expected-error {{substring of the message}}
//! // expected-warning@+1 {{...}}     the next line (spaces before `@` are allowed)
//! // expected-remark@-2 {{...}}      two lines up
//! // expected-note@above {{...}}     the nearest line above that is not an expectation
//! // expected-error@below {{...}}    the nearest line below that is not an expectation
//! // expected-error@unknown {{...}}  a diagnostic with no file location
//! // expected-error-re {{op {{[0-9]+}} failed}}   `{{...}}` inside are regexes
//! ```
//!
//! The comment ends its line (`}}` last). Algorithm, as MLIR's:
//! 1. collect the expectations of the buffer with their target lines;
//! 2. take each diagnostic, then its notes, in the order they were
//!    emitted, and match it to the first expectation on its line whose
//!    text it contains (or whose regex it matches): of its severity, it is
//!    matched (an expectation absorbs every diagnostic it matches); of
//!    another, the diagnostic is reported as emitted when the other was
//!    expected; with none, as unexpected;
//! 3. report every expectation left unmatched as not produced.
//!
//! A line is an expectation only when its `{{...}}` ends it, as in MLIR;
//! other mentions of `expected-error` are text. Unlike MLIR, which skips
//! them silently, an expectation with an unknown `@` designator or an
//! invalid `-re` regex is an error.

use crate::diagnostics::{Diagnostic, Position, Severity};
use regex::Regex;
use std::sync::LazyLock;

static EXPECTATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"expected-(error|warning|remark|note)(-re)?( *@[^\s{]*)? *(\{\{.*\}\})$")
        .expect("the expectation pattern is valid")
});

/// One `expected-*` comment.
#[derive(Debug, Clone)]
pub struct Expectation {
    /// The severity it expects.
    pub severity: Severity,
    /// The line the diagnostic must be on; `None` for `@unknown`, a
    /// diagnostic without a file location.
    pub line: Option<usize>,
    /// Where the comment is (its `expected-`), for reporting it.
    pub at: Position,
    /// A substring the message must contain (for `-re`, the pattern as
    /// written).
    pub text: String,
    /// For `-re`: the regex the message must match.
    pub regex: Option<Regex>,
}

impl Expectation {
    fn matches(&self, message: &str) -> bool {
        match &self.regex {
            Some(regex) => regex.is_match(message),
            None => message.contains(&self.text),
        }
    }
}

/// Parses the expectations of `source`; malformed ones come back as
/// errors beside the others, which are still checked (as MLIR does).
pub fn parse_expectations(source: &str) -> (Vec<Expectation>, Vec<Diagnostic>) {
    let mut expectations: Vec<Expectation> = Vec::new();
    let mut errors = Vec::new();
    let lines: Vec<&str> = source.split('\n').collect();
    // The last line that holds no expectation, and the expectations waiting
    // for the next one (`@below`).
    let mut last_plain = 1;
    let mut below = Vec::new();
    for (index, line_text) in lines.iter().enumerate() {
        let line = index + 1;
        let line_text = line_text.trim_end();
        // As in MLIR, a line is an expectation only if its `{{...}}` ends
        // it; other mentions of `expected-error` are text (the pattern is
        // anchored at the end, so an earlier mention does not hide it).
        let Some(found) = EXPECTATION.captures(line_text) else {
            for k in below.drain(..) {
                let expectation: &mut Expectation = &mut expectations[k];
                expectation.line = Some(line);
            }
            last_plain = line;
            continue;
        };
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
        let braced = found.get(4).expect("the pattern requires the message");
        let text = braced.as_str()[2..braced.len() - 2].to_owned();
        let regex = if found.get(2).is_some() {
            match regex_of(&text) {
                Ok(regex) => Some(regex),
                Err(message) => {
                    errors.push(Diagnostic {
                        span: text.chars().count(),
                        ..Diagnostic::error(Some(at), message)
                    });
                    continue;
                }
            }
        } else {
            None
        };
        let mut expectation = Expectation {
            severity,
            line: Some(line),
            at,
            text,
            regex,
        };
        match found.get(3).map(|m| m.as_str().trim_start()[1..].to_owned()) {
            None => {}
            Some(designator) => match designator.as_str() {
                "unknown" => expectation.line = None,
                "above" => expectation.line = Some(last_plain),
                "below" => {
                    // Dangling at the end: the last line.
                    expectation.line = Some(lines.len());
                    below.push(expectations.len());
                }
                offset => match parse_offset(offset) {
                    // Before the first line: as in MLIR, it never matches
                    // and is reported as not produced.
                    Some(delta) => expectation.line = Some(line.checked_add_signed(delta).unwrap_or(0)),
                    None => {
                        errors.push(Diagnostic::error(
                            Some(at),
                            "expected '@above', '@below', '@unknown', '@+N' or '@-N' naming a line of the input",
                        ));
                        continue;
                    }
                },
            },
        }
        expectations.push(expectation);
    }
    (expectations, errors)
}

/// The regex of an `expected-*-re` text: literal text, with `{{...}}`
/// blocks that are regexes.
fn regex_of(text: &str) -> Result<Regex, String> {
    let mut pattern = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        pattern.push_str(&regex::escape(&rest[..open]));
        rest = &rest[open + 2..];
        let Some(close) = rest.find("}}") else {
            return Err("found start of regex with no end '}}'".to_owned());
        };
        let block = &rest[..close];
        Regex::new(block).map_err(|e| format!("invalid regex: {}", first_line_of(&e.to_string())))?;
        pattern.push('(');
        pattern.push_str(block);
        pattern.push(')');
        rest = &rest[close + 2..];
    }
    pattern.push_str(&regex::escape(rest));
    Regex::new(&pattern).map_err(|e| format!("invalid regex: {}", first_line_of(&e.to_string())))
}

/// The regex crate's error, in one line: its last line says what is wrong.
fn first_line_of(error: &str) -> String {
    let last = error
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(error)
        .trim();
    last.strip_prefix("error: ").unwrap_or(last).to_owned()
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
/// diagnostic that matched no expectation (or one of another severity) and
/// every expectation not produced, in mlir-opt's order and words.
pub fn check(expectations: &[Expectation], diagnostics: &[Diagnostic]) -> Vec<Diagnostic> {
    let mut matched = vec![false; expectations.len()];
    let mut problems = Vec::new();
    let emitted = diagnostics
        .iter()
        .flat_map(|d| std::iter::once(d).chain(d.notes.iter()));
    for diagnostic in emitted {
        // A diagnostic in another file matches no expectation of the input.
        let line = if diagnostic.in_input() {
            diagnostic.position.map(|p| p.line)
        } else {
            Some(0)
        };
        let mut near_miss = None;
        let mut found = None;
        for (i, expectation) in expectations.iter().enumerate() {
            if expectation.line != line || line == Some(0) || !expectation.matches(&diagnostic.message) {
                continue;
            }
            if expectation.severity == diagnostic.severity {
                found = Some(i);
                break;
            }
            near_miss = Some(expectation);
        }
        match (found, near_miss) {
            (Some(i), _) => matched[i] = true,
            (None, Some(expectation)) => problems.push(Diagnostic::error(
                Some(expectation.at),
                format!(
                    "'{}' diagnostic emitted when expecting a '{}'",
                    diagnostic.severity, expectation.severity
                ),
            )),
            (None, None) => problems.push(Diagnostic {
                file: diagnostic.file.clone(),
                ..Diagnostic::error(
                    diagnostic.position,
                    format!("unexpected {}: {}", diagnostic.severity, diagnostic.message),
                )
            }),
        }
    }
    for (expectation, _) in expectations.iter().zip(&matched).filter(|(_, m)| !**m) {
        problems.push(Diagnostic {
            span: expectation.text.chars().count(),
            ..Diagnostic::error(
                Some(expectation.at),
                format!(
                    "expected {} \"{}\" was not produced",
                    expectation.severity, expectation.text
                ),
            )
        });
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
    fn parses_designators() {
        let source = "a // expected-error {{same}}\n// expected-warning @+1 {{next}}\nb\n// expected-note@above {{prev}}\n// expected-remark@-3 {{up}}\n// expected-error@below {{down}}\n// expected-error @below {{down too}}\nc\n// expected-error@unknown {{nowhere}}\n";
        let (found, errors) = parse_expectations(source);
        assert!(errors.is_empty(), "{errors:?}");
        let summary: Vec<_> = found
            .iter()
            .map(|e| (e.severity, e.line, e.text.as_str()))
            .collect();
        assert_eq!(
            summary,
            vec![
                (Severity::Error, Some(1), "same"),
                (Severity::Warning, Some(3), "next"),
                (Severity::Note, Some(3), "prev"),
                (Severity::Remark, Some(2), "up"),
                // Both skip the expectation lines between them and `c`.
                (Severity::Error, Some(8), "down"),
                (Severity::Error, Some(8), "down too"),
                (Severity::Error, None, "nowhere"),
            ]
        );
    }

    #[test]
    fn rejects_bad_designators_and_bad_regexes() {
        let (found, errors) = parse_expectations(
            "// expected-error@-5 {{x}}\n// expected-error@sideways {{x}}\n// expected-error\n// expected-error {{x}} trailing\n// expected-error-re {{a{{(}}b}}\n// expected-error-re {{a{{b}}\n// was expected-error, now expected-note {{y}}\n",
        );
        let messages: Vec<_> = errors.iter().map(|e| e.message.as_str()).collect();
        // The third and fourth lines are text: no `{{...}}` ends them; an
        // offset before the first line never matches (as in MLIR).
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[1].starts_with("invalid regex"), "{messages:?}");
        assert!(!messages[1].contains('\n'), "{messages:?}");
        assert_eq!(messages[2], "found start of regex with no end '}}'");
        let lines: Vec<_> = found.iter().map(|e| (e.severity, e.line)).collect();
        // The last line's mention of expected-error does not hide its
        // expectation.
        assert_eq!(lines, vec![(Severity::Error, Some(0)), (Severity::Note, Some(7))]);
    }

    #[test]
    fn regexes_match_their_blocks_and_the_rest_literally() {
        let (found, _) = parse_expectations("// expected-error-re {{op {{[0-9]+}} (x)}}");
        assert!(found[0].matches("the op 42 (x) failed"));
        assert!(!found[0].matches("the op 42 x failed"));
    }

    #[test]
    fn matches_and_reports_both_ways() {
        let (expectations, _) = parse_expectations(
            "x\n// expected-error@-1 {{bad}}\n// expected-error {{missing}}\n// expected-note@-3 {{thing}}\n",
        );
        let diagnostics = vec![
            Diagnostic::error(at(1), "a bad thing"),
            // An expectation absorbs every diagnostic it matches.
            Diagnostic::error(at(1), "another bad thing"),
            Diagnostic::error(at(1), "another thing"),
            Diagnostic::error(None, "no place"),
        ];
        let problems = check(&expectations, &diagnostics);
        let messages: Vec<_> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "'error' diagnostic emitted when expecting a 'note'",
                "unexpected error: no place",
                "expected error \"missing\" was not produced",
                "expected note \"thing\" was not produced",
            ]
        );
        assert_eq!(problems[2].span, "missing".len());
    }
}
