//! Pass pipelines in MLIR's textual syntax, mixing upstream passes with
//! jitc's own.
//!
//! `builtin.module(meta-dce, canonicalize, func.func(meta-cse, cse))` is
//! parsed into a tree of [`Element`]s. [`build`] then fills one MLIR
//! `PassManager`: jitc's passes are added as external passes, and upstream
//! passes through `mlirOpPassManagerAddPipeline`, so nesting, verification
//! after each pass and `--print-ir-after-all` all behave as in `mlir-opt`.

use crate::{
    Error,
    passes::{self, Profiles},
};
use melior::{Context, pass::PassManager};
use std::ffi::c_void;

/// One element of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Element {
    /// A pass with its option string (the text inside `{}`).
    Pass {
        /// The pass argument, e.g. `meta-dce` or `canonicalize`.
        name: String,
        /// The options, without braces; empty when none were given.
        options: String,
    },
    /// Passes nested under an op, e.g. `func.func(cse)`.
    Nested {
        /// The op name.
        anchor: String,
        /// The nested elements.
        elements: Vec<Element>,
    },
}

impl Element {
    /// A pass without options.
    pub fn pass(name: &str, options: &str) -> Self {
        Self::Pass {
            name: name.to_owned(),
            options: options.to_owned(),
        }
    }
}

/// Parses a textual pipeline anchored on `builtin.module`, as given to
/// `--pass-pipeline`. Returns its top-level elements.
pub fn parse(text: &str) -> Result<Vec<Element>, Error> {
    let mut parser = Parser { text, position: 0 };
    parser.skip_space();
    let anchor = parser.name()?;
    if anchor != "builtin.module" {
        return Err(parser.error(&format!(
            "the pipeline must be anchored on 'builtin.module', not '{anchor}'"
        )));
    }
    let elements = parser.nested()?;
    parser.skip_space();
    if parser.position != text.len() {
        return Err(parser.error("unexpected text after the pipeline"));
    }
    Ok(elements)
}

struct Parser<'t> {
    text: &'t str,
    position: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> Error {
        Error::Pipeline(format!(
            "{message} (at offset {} of '{}')",
            self.position, self.text
        ))
    }

    fn peek(&self) -> Option<char> {
        self.text[self.position..].chars().next()
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.position += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        let found = self.peek() == Some(c);
        if found {
            self.position += c.len_utf8();
        }
        found
    }

    fn name(&mut self) -> Result<String, Error> {
        self.skip_space();
        let start = self.position;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            self.position += 1;
        }
        if start == self.position {
            return Err(self.error("expected a pass or op name"));
        }
        Ok(self.text[start..self.position].to_owned())
    }

    /// `(` element (`,` element)* `)`, or `()`.
    fn nested(&mut self) -> Result<Vec<Element>, Error> {
        if !self.eat('(') {
            return Err(self.error("expected '('"));
        }
        let mut elements = Vec::new();
        if self.eat(')') {
            return Ok(elements);
        }
        loop {
            elements.push(self.element()?);
            if self.eat(')') {
                return Ok(elements);
            }
            if !self.eat(',') {
                return Err(self.error("expected ',' or ')'"));
            }
        }
    }

    fn element(&mut self) -> Result<Element, Error> {
        let name = self.name()?;
        self.skip_space();
        match self.peek() {
            Some('(') => Ok(Element::Nested {
                anchor: name,
                elements: self.nested()?,
            }),
            Some('{') => {
                let options = self.braced()?;
                Ok(Element::Pass { name, options })
            }
            _ => Ok(Element::Pass {
                name,
                options: String::new(),
            }),
        }
    }

    /// A balanced `{...}`; returns the text inside.
    fn braced(&mut self) -> Result<String, Error> {
        let start = self.position + 1;
        let mut depth = 0usize;
        for (offset, c) in self.text[self.position..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        let end = self.position + offset;
                        self.position = end + 1;
                        return Ok(self.text[start..end].trim().to_owned());
                    }
                }
                _ => {}
            }
        }
        Err(self.error("unbalanced '{' in pass options"))
    }
}

/// Renders elements back to MLIR's syntax.
pub fn render(elements: &[Element]) -> String {
    elements
        .iter()
        .map(|element| match element {
            Element::Pass { name, options } if options.is_empty() => name.clone(),
            Element::Pass { name, options } => format!("{name}{{{options}}}"),
            Element::Nested { anchor, elements } => format!("{anchor}({})", render(elements)),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Builds a pass manager on `builtin.module` that runs `elements` in order.
pub fn build<'c>(
    context: &'c Context,
    elements: &[Element],
    profiles: &Profiles,
) -> Result<PassManager<'c>, Error> {
    let manager = PassManager::new(context);
    add_elements(manager.as_operation_pass_manager().to_raw(), elements, profiles)?;
    Ok(manager)
}

fn add_elements(
    manager: mlir_sys::MlirOpPassManager,
    elements: &[Element],
    profiles: &Profiles,
) -> Result<(), Error> {
    for element in elements {
        match element {
            Element::Nested { anchor, elements } => {
                let anchor_ref = mlir_sys::MlirStringRef {
                    data: anchor.as_ptr().cast(),
                    length: anchor.len(),
                };
                // SAFETY: `manager` is live; the nested manager is owned by it.
                let nested = unsafe { mlir_sys::mlirOpPassManagerGetNestedUnder(manager, anchor_ref) };
                add_elements(nested, elements, profiles)?;
            }
            Element::Pass { name, options } => match passes::find(name) {
                Some(info) => {
                    let pass = passes::create(info, options, profiles)?;
                    // SAFETY: the pass manager takes ownership of the pass.
                    unsafe { mlir_sys::mlirOpPassManagerAddOwnedPass(manager, pass.to_raw()) };
                }
                None => add_upstream(manager, name, options)?,
            },
        }
    }
    Ok(())
}

fn add_upstream(manager: mlir_sys::MlirOpPassManager, name: &str, options: &str) -> Result<(), Error> {
    let text = render(&[Element::pass(name, options)]);
    let mut message = String::new();
    unsafe extern "C" fn collect(part: mlir_sys::MlirStringRef, data: *mut c_void) {
        // SAFETY: `data` is the `String` below; `part` is valid for this call.
        unsafe {
            let message = &mut *(data as *mut String);
            let bytes = std::slice::from_raw_parts(part.data.cast::<u8>(), part.length);
            message.push_str(&String::from_utf8_lossy(bytes));
        }
    }
    let text_ref = mlir_sys::MlirStringRef {
        data: text.as_ptr().cast(),
        length: text.len(),
    };
    // SAFETY: `manager` is live, `text` outlives the call, and `collect` only
    // writes to `message`, which outlives it too.
    let result = unsafe {
        mlir_sys::mlirOpPassManagerAddPipeline(
            manager,
            text_ref,
            Some(collect),
            (&mut message as *mut String).cast(),
        )
    };
    if result.value == 0 {
        let message = message.trim();
        let message = if message.is_empty() {
            format!("cannot add pass '{name}'")
        } else {
            message.to_owned()
        };
        return Err(Error::Pipeline(message));
    }
    Ok(())
}

/// Whether `name` is a pass jitc knows, its own or upstream.
pub fn is_known_pass(context: &Context, name: &str) -> bool {
    passes::find(name).is_some() || {
        let scratch = PassManager::new(context);
        add_upstream(scratch.as_operation_pass_manager().to_raw(), name, "").is_ok()
    }
}

/// The textual form MLIR gives `manager`'s pipeline, every option with its
/// value (`builtin.module(func.func(canonicalize{  max-iterations=10 ...}))`).
pub fn textual(manager: &PassManager) -> String {
    unsafe extern "C" fn append(text: mlir_sys::MlirStringRef, out: *mut c_void) {
        // SAFETY: `out` is the `String` passed below, alive for the call;
        // MLIR passes `length` valid bytes at `data`.
        let (out, bytes) = unsafe {
            (
                &mut *out.cast::<String>(),
                std::slice::from_raw_parts(text.data.cast::<u8>(), text.length),
            )
        };
        out.push_str(&String::from_utf8_lossy(bytes));
    }
    let mut text = String::new();
    // SAFETY: the manager is live; the callback only appends to `text`.
    unsafe {
        mlir_sys::mlirPrintPassPipeline(
            manager.as_operation_pass_manager().to_raw(),
            Some(append),
            (&mut text as *mut String).cast(),
        )
    };
    text
}

/// Enables MLIR's pass timing on `manager`: a report per pass goes to
/// stderr when the manager is dropped (`--mlir-timing`).
pub fn enable_timing(manager: &PassManager) {
    // SAFETY: the manager is live.
    unsafe { mlir_sys::mlirPassManagerEnableTiming(manager.to_raw()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_pipelines_with_options() {
        let parsed =
            parse("builtin.module(meta-dce, func.func(cse, canonicalize{max-iterations=3 test{x}}), inline)")
                .unwrap();
        assert_eq!(
            parsed,
            vec![
                Element::pass("meta-dce", ""),
                Element::Nested {
                    anchor: "func.func".into(),
                    elements: vec![
                        Element::pass("cse", ""),
                        Element::pass("canonicalize", "max-iterations=3 test{x}")
                    ],
                },
                Element::pass("inline", ""),
            ]
        );
        assert_eq!(
            render(&parsed),
            "meta-dce,func.func(cse,canonicalize{max-iterations=3 test{x}}),inline"
        );
    }

    #[test]
    fn rejects_malformed_pipelines() {
        for bad in [
            "",
            "func.func(cse)",
            "builtin.module(",
            "builtin.module(cse",
            "builtin.module(a{)",
            "builtin.module(cse) x",
            "builtin.module(,)",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should not parse");
        }
        assert_eq!(parse("builtin.module()").unwrap(), vec![]);
    }
}
