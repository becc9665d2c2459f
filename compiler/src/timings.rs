//! Phase timings for `jitc compile --timings`, in the spirit of
//! `-ftime-report`: the compiler's phases record their wall-clock time
//! while a [`Recording`] is alive on the thread; otherwise recording costs
//! one thread-local flag check per phase.

use std::{
    cell::RefCell,
    marker::PhantomData,
    time::{Duration, Instant},
};

thread_local! {
    static PHASES: RefCell<Option<Vec<(&'static str, Duration)>>> = const { RefCell::new(None) };
}

/// Records this thread's phases until [`Recording::finish`]; it stays on
/// the thread that started it (not `Send`). Recordings do not nest: a
/// second `start` on the thread begins afresh, and ending either ends
/// recording.
pub struct Recording(PhantomData<*const ()>);

impl Recording {
    /// Starts recording (phases recorded before are dropped).
    pub fn start() -> Self {
        PHASES.with(|p| *p.borrow_mut() = Some(Vec::new()));
        Recording(PhantomData)
    }

    /// Stops recording; returns each phase and its time, in the order they
    /// ended (a phase run twice appears twice).
    pub fn finish(self) -> Vec<(&'static str, Duration)> {
        PHASES.with(|p| p.borrow_mut().take()).unwrap_or_default()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        PHASES.with(|p| p.borrow_mut().take());
    }
}

/// [`phase`] with a name made at run time (leaked once per distinct name
/// recorded: names are few).
pub fn phase_named<T>(name: String, f: impl FnOnce() -> T) -> T {
    if PHASES.with(|p| p.borrow().is_none()) {
        return f();
    }
    phase(intern(name), f)
}

fn intern(name: String) -> &'static str {
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<Vec<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(known) = names.iter().find(|n| **n == name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.into_boxed_str());
    names.push(leaked);
    leaked
}

/// Runs `f` as the phase `name`, recording its time when recording.
pub fn phase<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    if PHASES.with(|p| p.borrow().is_none()) {
        return f();
    }
    let start = Instant::now();
    let result = f();
    let elapsed = start.elapsed();
    PHASES.with(|p| {
        if let Some(phases) = p.borrow_mut().as_mut() {
            phases.push((name, elapsed));
        }
    });
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_recorded_only_while_recording() {
        phase("before", || ());
        let recording = Recording::start();
        let value = phase("work", || 7);
        phase("more", || ());
        let phases = recording.finish();
        assert_eq!(value, 7);
        let names: Vec<&str> = phases.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["work", "more"]);
        phase("after", || ());
        let again = Recording::start().finish();
        assert!(again.is_empty());
    }
}
