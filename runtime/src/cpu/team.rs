//! The worker team that runs the parts of a split kernel: the calling
//! thread and [`super::thread_count`] − 1 helper threads, started on first
//! use and kept for the life of the process.
//!
//! **Why not a general pool.** A kernel call is a fork and a join of a few
//! equal parts, and the time it costs beyond its parts is the time the
//! helpers take to start, which on this class of machine (a VM whose idle
//! CPUs halt) is 10-100 µs for a sleeping thread. So:
//! - the caller runs parts itself: a call never waits for a thread to
//!   start before work begins, and never sleeps, so nothing wakes it at
//!   the end;
//! - a helper that has finished spins for [`SPIN`] before it sleeps: the
//!   next kernel of a burst (an RNN's steps, a training step's kernels)
//!   finds it awake, and splitting pays for kernels of a few microseconds
//!   ([`Team::awake`] lets the caller tell);
//! - parts are handed out by one counter, so a helper that is late leaves
//!   its part to whoever is free, the caller included.
//!
//! **Lifetime of a job.** The job (a reference to the caller's closure) is
//! published in an atomic pointer. A helper announces itself in `inside`
//! before it reads the pointer; the caller, when every part has run,
//! clears the pointer and waits until `inside` is zero. With sequentially
//! consistent operations on both sides, a helper either is counted or sees
//! the cleared pointer, so no helper touches a job after its call returned.
//!
//! **Panics.** A part that panics counts as run, and the first panic is
//! raised again in the caller once no helper can touch the job: the
//! caller never unwinds past a job a helper still reads, and a helper
//! never dies leaving the caller waiting.
//!
//! **Rousing.** A kernel that would split only if a helper were awake runs
//! on the caller alone, and the caller rouses the helpers
//! ([`Team::rouse`]): they spin again for [`SPIN`], so the kernels after
//! it in a burst split.
//!
//! **Sleep.** A helper that has spun [`SPIN`] without a new job counts
//! itself in `sleepers` and waits on a condition variable, checking the job
//! number under the mutex; the caller, after publishing a job, takes the
//! mutex and notifies only when `sleepers` is not zero (again sequentially
//! consistent on both sides, so a wake-up is never lost).

use std::{
    sync::{
        Condvar, Mutex,
        atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst},
    },
    time::{Duration, Instant},
};

/// How long a helper spins for the next job before it sleeps.
pub const SPIN: Duration = Duration::from_micros(200);

/// A job: the caller's closure, run once per part.
type Work<'a> = &'a (dyn Fn(usize) + Sync);

/// What the caller publishes.
struct Job {
    work: Work<'static>,
    parts: usize,
    /// The next part to hand out.
    next: AtomicUsize,
    /// Parts that have run.
    done: AtomicUsize,
    /// The first panic of a part, wherever it ran: re-raised by the caller
    /// once no helper can touch the job any more.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

/// The caller and its helpers (see the module doc).
pub struct Team {
    /// The current job, or null.
    job: AtomicPtr<Job>,
    /// Bumped for every job; helpers compare it with the last they saw.
    number: AtomicU64,
    /// Helpers between announcing themselves and leaving a job.
    inside: AtomicUsize,
    /// Helpers asleep, or about to be.
    sleepers: AtomicUsize,
    /// Helpers spinning for a job now.
    spinning: AtomicUsize,
    /// Bumped to wake sleeping helpers without a job ([`Team::rouse`]).
    rousings: AtomicU64,
    /// Times a helper woke from sleep to a rousing rather than a job.
    roused: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    /// One caller at a time: concurrent calls from several threads take
    /// turns (each part still runs on two CPUs).
    calls: Mutex<()>,
    helpers: usize,
    /// The CPUs each helper may run on, as each read its own mask once
    /// started.
    masks: Mutex<Vec<Vec<usize>>>,
}

impl Team {
    /// A team of the caller and `helpers` helper threads, not started yet.
    const fn new(helpers: usize) -> Self {
        Self {
            job: AtomicPtr::new(std::ptr::null_mut()),
            number: AtomicU64::new(0),
            inside: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            spinning: AtomicUsize::new(0),
            rousings: AtomicU64::new(0),
            roused: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            calls: Mutex::new(()),
            helpers,
            masks: Mutex::new(Vec::new()),
        }
    }

    /// The process's team, its helpers started (each pinned to `cpus[h]`
    /// when given); `None` when no helper could be started.
    pub fn start(helpers: usize, cpus: Option<Vec<usize>>) -> Option<&'static Team> {
        let team: &'static Team = Box::leak(Box::new(Team::new(helpers)));
        for h in 0..helpers {
            let cpu = cpus.as_ref().and_then(|c| c.get(h).copied());
            std::thread::Builder::new()
                .name(format!("jitc-worker-{}", h + 1))
                .spawn(move || team.helper(cpu))
                .ok()?;
        }
        Some(team)
    }

    /// Whether a helper is spinning for work now: a split started now
    /// costs no wake-up.
    pub fn awake(&self) -> bool {
        self.spinning.load(SeqCst) > 0
    }

    /// Wakes the sleeping helpers without a job, so they spin for the next
    /// one: the caller of a kernel that would split if they were awake
    /// runs it alone and rouses them for the kernels that follow.
    pub fn rouse(&self) {
        self.rousings.fetch_add(1, SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
    }

    /// The CPUs each helper may run on, as it read its own affinity mask
    /// when it started (waiting for every helper to have started).
    pub fn masks(&self) -> Vec<Vec<usize>> {
        loop {
            let masks = self.masks.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if masks.len() == self.helpers {
                return masks;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// `work(p)` for every `p` in `0..parts`, run as [`Team::run`] runs
    /// it, in part order.
    pub fn map<T: Send>(&self, parts: usize, work: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
        let slots: Vec<Mutex<Option<T>>> = (0..parts).map(|_| Mutex::new(None)).collect();
        self.run(parts, &|p| {
            let value = work(p);
            *slots[p].lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
        });
        slots
            .into_iter()
            .map(|slot| {
                slot.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("Team::run runs every part")
            })
            .collect()
    }

    /// Runs `work(p)` for every `p` in `0..parts`, on the caller and the
    /// helpers; returns when all have run.
    pub fn run(&self, parts: usize, work: &(dyn Fn(usize) + Sync)) {
        if parts == 0 {
            return;
        }
        if parts == 1 || self.helpers == 0 {
            (0..parts).for_each(work);
            return;
        }
        let _turn = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the reference is published only until this call returns:
        // it is cleared, and every helper that may have read it has left,
        // before `job` (and `work`) go out of scope below.
        let work: Work<'static> = unsafe { std::mem::transmute::<Work<'_>, Work<'static>>(work) };
        let job = Job {
            work,
            parts,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
        };
        self.job.store(&job as *const Job as *mut Job, SeqCst);
        self.number.fetch_add(1, SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
        Self::take_parts(&job);
        while job.done.load(SeqCst) < parts {
            std::hint::spin_loop();
        }
        self.job.store(std::ptr::null_mut(), SeqCst);
        while self.inside.load(SeqCst) > 0 {
            std::hint::spin_loop();
        }
        let panic = job.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(panic) = panic {
            std::panic::resume_unwind(panic);
        }
    }

    /// Runs parts of `job` until none is left. A part that panics counts
    /// as run, its panic kept for the caller: the caller must not unwind
    /// past a job helpers still read, and a helper must not die leaving
    /// the caller waiting.
    fn take_parts(job: &Job) {
        loop {
            let part = job.next.fetch_add(1, SeqCst);
            if part >= job.parts {
                return;
            }
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (job.work)(part)));
            if let Err(panic) = ran {
                job.panic
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(panic);
            }
            job.done.fetch_add(1, SeqCst);
        }
    }

    /// A helper's life: wait for a job (spinning, then asleep), take parts.
    fn helper(&'static self, cpu: Option<usize>) {
        if let Some(cpu) = cpu {
            // A refused pin leaves the helper where it was: slower at
            // worst, never wrong.
            super::affinity::pin_to(cpu);
        }
        self.masks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(super::affinity::allowed_cpus());
        let mut seen = self.number.load(SeqCst);
        loop {
            self.spinning.fetch_add(1, SeqCst);
            let start = Instant::now();
            let mut spins = 0u32;
            while self.number.load(SeqCst) == seen {
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(1024) && start.elapsed() >= SPIN {
                    break;
                }
            }
            self.spinning.fetch_sub(1, SeqCst);
            if self.number.load(SeqCst) == seen {
                let rousings = self.rousings.load(SeqCst);
                let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
                self.sleepers.fetch_add(1, SeqCst);
                while self.number.load(SeqCst) == seen && self.rousings.load(SeqCst) == rousings {
                    guard = self.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
                }
                self.sleepers.fetch_sub(1, SeqCst);
                drop(guard);
                if self.number.load(SeqCst) == seen {
                    // Roused: spin for the job to come.
                    self.roused.fetch_add(1, SeqCst);
                    continue;
                }
            }
            seen = self.number.load(SeqCst);
            self.inside.fetch_add(1, SeqCst);
            let job = self.job.load(SeqCst);
            if !job.is_null() {
                // SAFETY: the caller keeps the job alive until `inside` is
                // zero again (see the module doc).
                Self::take_parts(unsafe { &*job });
            }
            self.inside.fetch_sub(1, SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn every_part_runs_once_whatever_the_timing() {
        let team = Team::start(1, None).expect("a helper starts");
        for parts in [0, 1, 2, 3, 8, 64] {
            for round in 0..200 {
                let counts: Vec<AtomicU32> = (0..parts).map(|_| AtomicU32::new(0)).collect();
                team.run(parts, &|p| {
                    counts[p].fetch_add(1, SeqCst);
                    if round % 7 == 0 {
                        std::thread::yield_now();
                    }
                });
                assert!(
                    counts.iter().all(|c| c.load(SeqCst) == 1),
                    "{parts} parts, round {round}"
                );
                if round % 50 == 0 {
                    // Long enough for the helper to fall asleep.
                    std::thread::sleep(SPIN * 3);
                }
            }
        }
    }

    #[test]
    fn map_gives_each_parts_value_in_part_order() {
        let team = Team::start(1, None).expect("a helper starts");
        for parts in [0, 1, 2, 5, 64] {
            let values = team.map(parts, &|p| {
                if p % 3 == 0 {
                    std::thread::yield_now();
                }
                p * p
            });
            assert_eq!(
                values,
                (0..parts).map(|p| p * p).collect::<Vec<_>>(),
                "{parts} parts"
            );
        }
    }

    #[test]
    fn a_roused_helper_spins_again_without_a_job() {
        let team = Team::start(1, None).expect("a helper starts");
        let asleep = |team: &Team| team.sleepers.load(SeqCst) == 1;
        let within = |what: &dyn Fn() -> bool| {
            let start = Instant::now();
            while !what() {
                assert!(start.elapsed() < Duration::from_secs(5), "timed out");
                std::thread::yield_now();
            }
        };
        within(&|| asleep(team));
        assert_eq!(team.roused.load(SeqCst), 0);
        team.rouse();
        within(&|| team.roused.load(SeqCst) == 1);
        // And it sleeps again once it has spun for `SPIN` with no job.
        within(&|| asleep(team));
        // A job after that still runs on both.
        let count = AtomicU32::new(0);
        team.run(2, &|_| {
            count.fetch_add(1, SeqCst);
        });
        assert_eq!(count.load(SeqCst), 2);
    }

    #[test]
    fn a_part_that_panics_reaches_the_caller_and_the_team_goes_on() {
        let team = Team::start(1, None).expect("a helper starts");
        for panicking in [0, 1, 7] {
            let ran = AtomicU32::new(0);
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                team.run(8, &|p| {
                    ran.fetch_add(1, SeqCst);
                    assert!(p != panicking, "part {p} fails");
                });
            }));
            let message = outcome.expect_err("the panic reaches the caller");
            let text = message.downcast_ref::<String>().cloned().unwrap_or_default();
            assert_eq!(text, format!("part {panicking} fails"));
            assert_eq!(ran.load(SeqCst), 8, "every part still ran");
        }
        // The helper survived: a later job runs on both.
        let count = AtomicU32::new(0);
        team.run(64, &|_| {
            count.fetch_add(1, SeqCst);
        });
        assert_eq!(count.load(SeqCst), 64);
    }

    #[test]
    fn calls_from_several_threads_take_turns() {
        let team = Team::start(1, None).expect("a helper starts");
        let total = AtomicU32::new(0);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..100 {
                        team.run(4, &|_| {
                            total.fetch_add(1, SeqCst);
                        });
                    }
                });
            }
        });
        assert_eq!(total.load(SeqCst), 4 * 100 * 4);
    }
}
