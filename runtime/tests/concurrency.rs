//! Threads compiling and calling at once: every thread has its own MLIR
//! context, but the compiled-kernel cache, the worker pool and the buffer
//! pool are shared by the process. THREADS threads each run ROUNDS rounds
//! over the examples (in a different order per thread, so one thread's
//! compile races another's cache hit) and a speculating `Session` on the
//! IndRNN; every result and state must equal the interpreter's
//! (`--math exact`: bit for bit).

use jitc_compiler::{
    CodegenOptions, MathMode, OptimizeOptions, Pipeline, new_context, optimize, parse_module,
};
use jitc_interp::{Interpreter, StateStore, Value};
use jitc_runtime::{CpuModule, Session, SessionOptions};
use jitc_test_support::{Match, STATIC_EXAMPLES, example, random, random_inputs};

const THREADS: usize = 4;
const ROUNDS: usize = 3;

fn exact() -> CodegenOptions {
    CodegenOptions {
        math: MathMode::Exact,
        ..CodegenOptions::default()
    }
}

fn run_example(name: &str, shapes: &[&[usize]], seed: u64) -> Result<(), String> {
    let context = new_context().map_err(|e| e.to_string())?;
    let mut module = parse_module(&context, &example(name)).ok_or("does not parse")?;
    optimize(
        &context,
        &mut module,
        &Pipeline::default(),
        &OptimizeOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    let inputs = random_inputs(shapes, seed);
    let args = || inputs.iter().cloned().map(Value::tensor).collect::<Vec<_>>();
    let mut state = StateStore::new();
    state.insert("rnn.h", random(&[4, 8], seed + 99));
    let mut interpreted_state = state.clone();
    let expected = Interpreter::new(&module)
        .run("main", args(), &mut interpreted_state)
        .map_err(|e| e.to_string())?;
    let compiled = CpuModule::compile_with(&context, &mut module, &exact()).map_err(|e| e.to_string())?;
    let actual = compiled
        .run(&module, "main", args(), &mut state)
        .map_err(|e| e.to_string())?;
    let states_equal = interpreted_state.iter().count() == state.iter().count()
        && interpreted_state
            .iter()
            .zip(state.iter())
            .all(|((a, x), (b, y))| a == b && Match::Identical.tensors(x, y));
    if !Match::Identical.values(&expected, &actual) || !states_equal {
        return Err(format!(
            "compiled {actual:?} but the interpreter gave {expected:?}"
        ));
    }
    Ok(())
}

/// Speculative calls of the IndRNN with a changing sequence length, so
/// that threads compile, fall back and recompile at the same time.
fn run_session(thread: usize) -> Result<(), String> {
    let source = example("indrnn.mlir");
    let context = new_context().map_err(|e| e.to_string())?;
    let options = SessionOptions {
        codegen: exact(),
        compile: true,
        ..SessionOptions::default()
    };
    let mut session = Session::new(&context, &source, "main", options).map_err(|e| e.to_string())?;
    let reference = parse_module(&context, &source).ok_or("does not parse")?;
    let mut state = StateStore::new();
    state.insert("rnn.h", random(&[16, 64], 5));
    let mut reference_state = state.clone();
    for call in 0..6 {
        let length = if call < 4 { 2 } else { 3 + thread % 2 };
        let args = vec![
            Value::tensor(random(&[length, 16, 64], call as u64 + 1)),
            Value::tensor(random(&[64, 64], 2)),
            Value::tensor(random(&[64], 3)),
        ];
        let expected = Interpreter::new(&reference)
            .run("main", args.clone(), &mut reference_state)
            .map_err(|e| e.to_string())?;
        let actual = session.call(args, &mut state).map_err(|e| e.to_string())?;
        if !Match::Identical.values(&expected, &actual) {
            return Err(format!(
                "call {call}: the session's result differs from the interpreter's"
            ));
        }
    }
    Ok(())
}

#[test]
fn threads_compiling_and_calling_at_once_match_the_interpreter() {
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            std::thread::spawn(move || -> Result<(), String> {
                for round in 0..ROUNDS {
                    for k in 0..STATIC_EXAMPLES.len() {
                        let (name, shapes) = STATIC_EXAMPLES[(k + thread) % STATIC_EXAMPLES.len()];
                        let seed = (thread * 100 + round * 10 + k) as u64 + 1;
                        run_example(name, shapes, seed)
                            .map_err(|e| format!("thread {thread}, {name}: {e}"))?;
                    }
                }
                run_session(thread).map_err(|e| format!("thread {thread}, session: {e}"))
            })
        })
        .collect();
    let failures: Vec<String> = handles
        .into_iter()
        .filter_map(|h| match h.join() {
            Ok(Ok(())) => None,
            Ok(Err(message)) => Some(message),
            Err(_) => Some("a thread panicked".to_owned()),
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
