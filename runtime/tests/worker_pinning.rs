//! The helper threads are pinned, one to each CPU after the first, when
//! there are enough CPUs and `JITC_PIN_THREADS` does not say no (the
//! calling thread, the first worker, is left where it is). Each worker reads its own
//! affinity mask (`jitc_runtime::cpu::worker_cpus`), so these check what
//! the kernel holds, not what the runtime meant to ask for.

use jitc_runtime::cpu::{thread_count, worker_cpus};
use std::process::Command;

/// This process's CPUs, as the main thread's mask has them.
fn process_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    list.split(',')
        .flat_map(|range| match range.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().unwrap()..=b.parse().unwrap()).collect::<Vec<_>>(),
            None => vec![range.parse().unwrap()],
        })
        .collect()
}

fn pinning_off() -> bool {
    std::env::var("JITC_PIN_THREADS").is_ok_and(|v| v == "0")
}

#[test]
fn workers_are_pinned_as_the_setting_and_the_cpus_allow() {
    let cpus = process_cpus();
    // The caller is one of the workers: the helpers are the others.
    let workers = worker_cpus();
    assert_eq!(workers.len(), thread_count() - 1);
    if !pinning_off() && thread_count() > 1 && cpus.len() >= thread_count() {
        let mut pinned: Vec<usize> = workers
            .iter()
            .map(|mask| {
                assert_eq!(mask.len(), 1, "a pinned worker runs on one CPU: {workers:?}");
                mask[0]
            })
            .collect();
        pinned.sort();
        pinned.dedup();
        assert_eq!(
            pinned.len(),
            thread_count() - 1,
            "one CPU per helper: {workers:?}"
        );
        assert!(
            pinned.iter().all(|cpu| cpus.contains(cpu)),
            "{workers:?} outside {cpus:?}"
        );
    } else {
        for mask in &workers {
            assert_eq!(mask, &cpus, "an unpinned worker keeps the process's CPUs");
        }
    }
}

/// `JITC_PIN_THREADS=0` leaves every worker on all the process's CPUs: the
/// test above, run again in a child process with the setting.
#[test]
fn pinning_off_leaves_the_workers_free() {
    if pinning_off() {
        return; // this is the child
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "workers_are_pinned_as_the_setting_and_the_cpus_allow"])
        .env("JITC_PIN_THREADS", "0")
        .env("JITC_NUM_THREADS", "2")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("1 passed"), "the child ran the test: {stdout}");
}
