//! The command rtrace holds until tracing starts never outlives an rtrace that dies or
//! fails during start-up, never runs untraced because of it, and nothing BPF is left.

use std::{
    fs,
    process::{Command, Stdio},
    thread,
    time::Duration,
};

use rtrace_tests::{Bg, bpf_ready, rtrace, rtrace_bin, run, scratch_dir, wait_for};

/// Processes still running the rtrace binary whose command line holds `marker`.
pub(crate) fn rtrace_processes_with(marker: &str) -> Vec<u32> {
    let bin = fs::canonicalize(rtrace_bin()).unwrap();
    let mut found = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let exe = fs::read_link(format!("/proc/{pid}/exe")).ok();
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if exe.as_deref() == Some(bin.as_path()) && cmdline.contains(marker) {
            found.push(pid);
        }
    }
    found
}

/// Names of the loaded BPF programs that are rtrace's (the kernel keeps 15 bytes).
pub(crate) fn rtrace_programs() -> Vec<String> {
    const OURS: [&str; 5] = [
        "sys_enter",
        "sys_exit",
        "sched_process_f",
        "sched_process_e",
        "sched_process_exit",
    ];
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter_map(|p| p.name_as_str().map(str::to_string))
        .filter(|n| {
            OURS.iter()
                .any(|o| n.starts_with(o) || o.starts_with(n.as_str()))
        })
        .collect()
}

/// No rtrace program loaded, once those of an rtrace that has just exited are gone: the
/// kernel frees a detached program after a grace period, a little after its last fd closed.
fn no_rtrace_programs() -> bool {
    wait_for(Duration::from_secs(5), || rtrace_programs().is_empty())
}

fn assert_nothing_left(marker: &str, what: &str) {
    assert!(
        wait_for(Duration::from_secs(5), || rtrace_processes_with(marker)
            .is_empty()),
        "{what}: held workload left behind: {:?}",
        rtrace_processes_with(marker)
    );
    assert!(
        no_rtrace_programs(),
        "{what}: BPF programs still loaded: {:?}",
        rtrace_programs()
    );
}

#[test]
fn a_failed_start_leaves_no_held_workload_and_no_bpf() {
    if !bpf_ready("a_failed_start_leaves_no_held_workload_and_no_bpf") {
        return;
    }
    assert!(no_rtrace_programs(), "another rtrace is running");
    let dir = scratch_dir("failedstart");
    let touched = dir.join("ran");
    let other = Bg::spawn("sleep", &["60"]);
    // A one-entry pid map cannot hold both the filtered pids and rtrace's own.
    let marker = format!("touch {}", touched.display());
    let r = run(
        rtrace()
            .env("RTRACE_PID_MAP_ENTRIES", "1")
            .args(["--filter-pids", &other.pid().to_string(), "--", "sh", "-c"])
            .arg(&marker),
        Duration::from_secs(20),
    );
    assert_eq!(r.code(), Some(1), "{r}");
    let errors: Vec<_> = r.stderr.lines().collect();
    assert_eq!(
        errors,
        [
            "rtrace: the map pids_filtered is full: it holds 1 tasks — raise RTRACE_PID_MAP_ENTRIES (e.g. RTRACE_PID_MAP_ENTRIES=8192)"
        ],
        "{r}"
    );
    assert_nothing_left(&marker, "map full");
    assert!(!touched.exists(), "the command ran untraced");
}

#[test]
fn rtrace_killed_during_start_up_takes_its_held_workload_along() {
    if !bpf_ready("rtrace_killed_during_start_up_takes_its_held_workload_along") {
        return;
    }
    assert!(no_rtrace_programs(), "another rtrace is running");
    for delay_ms in [0u64, 2, 5, 10, 20, 30, 40, 50, 80, 120] {
        // A sleep of a length no other test uses, to find the processes by.
        let marker = format!("3{delay_ms:03}.5");
        let mut child = rtrace()
            .args(["--", "sleep", &marker])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_nothing_left(&marker, &format!("SIGKILL after {delay_ms} ms"));
        // Killed after the release, the command runs on (as perf's would): stop it.
        let _ = Command::new("pkill")
            .args(["-f", &format!("^sleep {marker}$")])
            .status();
    }
}
