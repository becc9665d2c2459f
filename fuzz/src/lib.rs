//! What jitc's fuzz targets share: turning fuzzer bytes into module text,
//! a reused MLIR context, inputs for a function's signature, and the
//! comparison of compiled results with the interpreter's.
//!
//! Every target must hold one property: nothing a user can write makes
//! jitc panic, abort or crash. `libfuzzer-sys` aborts on any panic, even
//! one a pass's `catch_unwind` would turn into an "internal compiler
//! error", so those are found too. The `run` and `differential` targets
//! also require compiled code to compute what the interpreter computes.

use jitc_compiler::DiagnosticCollector;
use jitc_interp::{Buffer, Scalar, Tensor, Value, ValueType};
pub use jitc_test_support::Match;
use melior::Context;
use std::cell::RefCell;

/// Inputs larger than this are skipped: they only slow the fuzzer down.
pub const MAX_INPUT_BYTES: usize = 64 << 10;

/// Brackets nested deeper than this are skipped. libFuzzer runs targets on
/// the main thread's 8 MiB stack, where MLIR's recursive parser and walks
/// hold a few hundred levels; the `jitc` tool runs on a 1 GiB stack and
/// accepts 10,000 (`tools/src/input.rs`), which the lit suite tests.
pub const MAX_FUZZ_NESTING: usize = 200;

/// The module text in `data`, or `None` for inputs not worth a run (too
/// large, nested past [`MAX_FUZZ_NESTING`]). Invalid UTF-8 becomes U+FFFD,
/// as `jitc` reads files.
pub fn module_text(data: &[u8]) -> Option<String> {
    if data.len() > MAX_INPUT_BYTES {
        return None;
    }
    let text = String::from_utf8_lossy(data).into_owned();
    jitc_compiler::check_nesting(&text, MAX_FUZZ_NESTING).ok()?;
    Some(text)
}

/// A context reused across runs, and replaced now and then, since MLIR
/// never frees the types and attributes a context has uniqued.
struct Reused {
    context: Context,
    runs: usize,
}

/// Runs in one context before it is replaced.
const RUNS_PER_CONTEXT: usize = 2000;

thread_local! {
    static CONTEXT: RefCell<Option<Reused>> = const { RefCell::new(None) };
    static LOG: RefCell<Option<InputLog>> = const { RefCell::new(None) };
}

/// With `JITC_FUZZ_LOG=PATH`, every input a target runs is appended to
/// `PATH` (a 4-byte little-endian length, then the bytes), and when the
/// context is replaced `PATH` moves to `PATH.prev` and starts again: after
/// a crash the two files hold, in order, every input the crashed context
/// and the one before it ran (`scripts/fuzz-replay.py` splits them into
/// files that the target's binary runs in one process, in order). For the
/// open heap corruption of `docs/fuzzing.md`, whose inputs never crash
/// alone. Writes go straight to the kernel, so a crash loses none.
struct InputLog {
    path: std::path::PathBuf,
    file: std::fs::File,
}

impl InputLog {
    fn open(path: std::path::PathBuf) -> Option<Self> {
        let file = std::fs::File::create(&path).ok()?;
        Some(Self { path, file })
    }

    fn rotate(&mut self) {
        let mut previous = self.path.clone().into_os_string();
        previous.push(".prev");
        let _ = std::fs::rename(&self.path, previous);
        if let Ok(file) = std::fs::File::create(&self.path) {
            self.file = file;
        }
    }

    fn append(&mut self, data: &[u8]) {
        use std::io::Write;
        let mut record = Vec::with_capacity(data.len() + 4);
        record.extend_from_slice(&(data.len() as u32).to_le_bytes());
        record.extend_from_slice(data);
        let _ = self.file.write_all(&record);
    }
}

/// Records `data` in the input log, when `JITC_FUZZ_LOG` asks for one;
/// targets call it with each input they run in [`with_context`].
pub fn log_input(data: &[u8]) {
    LOG.with(|cell| {
        let mut log = cell.borrow_mut();
        if log.is_none() {
            let Some(path) = std::env::var_os("JITC_FUZZ_LOG") else { return };
            *log = InputLog::open(path.into());
        }
        if let Some(log) = log.as_mut() {
            log.append(data);
        }
    });
}

/// Whether a note of MLIR's dominance check says a use's definition is in
/// a region that does not hold it ("operand defined here (op in a child
/// region)", "... (block #1 in a child region)", "... neither in a parent
/// nor in a child region"). Only a forward reference the parser resolved
/// makes such a use.
pub fn resolved_into_another_region(note: &str) -> bool {
    note.starts_with("operand defined")
        && (note.contains("in a child region)") || note.contains("neither in a parent nor in a child region"))
}

/// Runs `f` with the thread's fuzzing context; diagnostics are collected,
/// not printed, and checked for a use MLIR resolved into another region
/// (a panic, so a crash with its input: [`resolved_into_another_region`]).
pub fn with_context<R>(f: impl FnOnce(&Context) -> R) -> R {
    CONTEXT.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|r| r.runs >= RUNS_PER_CONTEXT) {
            *slot = None;
            LOG.with(|log| {
                if let Some(log) = log.borrow_mut().as_mut() {
                    log.rotate();
                }
            });
            let context = jitc_compiler::new_context().expect("an MLIR context");
            *slot = Some(Reused { context, runs: 0 });
        }
        let reused = slot.as_mut().expect("just made");
        reused.runs += 1;
        let collector = DiagnosticCollector::attach(&reused.context);
        let result = f(&reused.context);
        let diagnostics = collector.take();
        if let Some(note) = diagnostics
            .iter()
            .flat_map(|d| &d.notes)
            .find(|n| resolved_into_another_region(&n.message))
        {
            panic!(
                "MLIR reports a use of a value defined in a region that does not hold it ({}): in parsed text, a forward reference jitc's scan of names (ssa_scope) should have refused, since with a parse error after the definition MLIR frees it with the use still pointing at it; after a pass, that pass's bug",
                note.message
            );
        }
        result
    })
}

/// Values cycled through inputs: ordinary numbers and the special values
/// where IEEE's rules and integer wrapping are easiest to get wrong.
const FLOATS: [f64; 10] = [
    1.5,
    -0.0,
    0.0,
    2.0,
    f64::INFINITY,
    -3.25,
    f64::NAN,
    1e-40,
    -1.0,
    f64::NEG_INFINITY,
];
const INTEGERS: [i64; 8] = [3, -1, 0, 7, i64::MIN, i64::MAX, -8, 1];

/// An input for each argument of a signature: `?` sizes become
/// `dynamic`, and elements cycle through special values. `None` when an
/// argument would have more than `max_elements` elements.
pub fn inputs(types: &[ValueType], dynamic: usize, max_elements: usize) -> Option<Vec<Value>> {
    types
        .iter()
        .map(|r#type| match r#type {
            ValueType::Index => Some(Value::Index(dynamic as i64)),
            ValueType::Scalar(element) => Some(Value::Scalar(Scalar::F64(FLOATS[0]).cast(*element))),
            ValueType::Tensor(shape, element) => {
                let shape: Vec<usize> = shape.iter().map(|d| d.unwrap_or(dynamic)).collect();
                let len = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
                if len > max_elements {
                    return None;
                }
                let mut buffer = Buffer::filled(Scalar::zero(*element), len);
                for i in 0..len {
                    let value = if element.is_float() {
                        Scalar::F64(FLOATS[i % FLOATS.len()])
                    } else {
                        Scalar::I64(INTEGERS[i % INTEGERS.len()])
                    };
                    buffer.set(i, value.cast(*element));
                }
                Tensor::new(shape, buffer).map(Value::tensor)
            }
        })
        .collect()
}
