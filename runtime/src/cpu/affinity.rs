//! Pinning the helper threads, one to each CPU the process may use after
//! the first (the calling thread, which runs parts too, is left where it
//! is: it belongs to the caller).
//!
//! Unpinned, Linux at times kept both workers of a two-CPU machine on one
//! CPU for many calls in a row: the second woke behind the first, which
//! had already started its part, and when the first finished it took the
//! other part too, so a split kernel ran at one-thread speed. Traced on
//! the development VM (2 vCPUs, with the rayon pool this runtime had
//! then), softmax over (4096, 1024) ran both parts on one worker in four
//! calls of seven, and the cpu bench's medians for the row chains
//! equalled their one-thread times. Pinned, each part started on its own
//! CPU at once. TVM's runtime pins its workers for the same reason.
//!
//! [`allowed_cpus`] and [`pin_to`] are public for code that runs its own
//! threads beside the workers (the cpu bench pins its STREAM triad's
//! threads the same way, so the triad and the kernels are measured alike).
//!
//! Helpers are pinned only where every worker can have a CPU of its own:
//! [`super::thread_count`] no more than the CPUs in the affinity mask of
//! the thread that starts the team. `JITC_PIN_THREADS=0` turns it off, for
//! a process that shares its CPUs with other busy work.

/// Whether the workers are to be pinned, from the value of
/// `JITC_PIN_THREADS`: unset, or anything but `0`, `false`, `no` or `off`
/// (any case), pins.
pub(crate) fn wanted(setting: Option<&str>) -> bool {
    !setting.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        )
    })
}

/// The CPUs the calling thread may run on, in increasing order; empty
/// where the mask cannot be read (or off Linux).
#[cfg(target_os = "linux")]
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed `cpu_set_t` is an empty set, and
    // `sched_getaffinity` writes at most `size_of::<cpu_set_t>()` bytes.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

#[cfg(not(target_os = "linux"))]
pub fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Pins the calling thread to `cpu`; whether the kernel agreed.
#[cfg(target_os = "linux")]
pub fn pin_to(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: as in `allowed_cpus`; `cpu` is below `CPU_SETSIZE`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(not(target_os = "linux"))]
pub fn pin_to(_cpu: usize) -> bool {
    false
}

/// The CPU of each of `threads` workers, or `None` when they stay
/// unpinned: pinning is not `wanted`, or `allowed` has fewer CPUs than
/// `threads`.
pub(crate) fn plan(threads: usize, allowed: &[usize], wanted: bool) -> Option<Vec<usize>> {
    (wanted && threads > 1 && allowed.len() >= threads).then(|| allowed[..threads].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_turns_pinning_off_only_when_it_says_so() {
        assert!(wanted(None));
        assert!(wanted(Some("1")));
        assert!(wanted(Some("yes")));
        for off in ["0", "false", "No", " OFF "] {
            assert!(!wanted(Some(off)), "{off:?}");
        }
    }

    #[test]
    fn workers_get_the_first_allowed_cpus_or_none() {
        assert_eq!(plan(2, &[3, 5, 7], true), Some(vec![3, 5]));
        assert_eq!(plan(2, &[3, 5], false), None);
        assert_eq!(plan(4, &[3, 5], true), None, "more workers than CPUs");
        assert_eq!(plan(1, &[0, 1], true), None, "one worker is never pinned");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_thread_may_run_somewhere() {
        assert!(!allowed_cpus().is_empty());
    }
}
