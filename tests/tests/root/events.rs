//! Tracepoint events with `-e cat:name`: perf trace's line, globs, `--filter`, mixed
//! with syscalls, `-s`, `--json`, only the targets' events, and the refusals.

use std::time::Duration;

use rtrace_tests::{bpf_ready, parse_line, rtrace, run};

const LIMIT: Duration = Duration::from_secs(30);

/// The lines of `stderr` that show event `name` (`cat:name(`).
fn event_lines<'a>(stderr: &'a str, name: &str) -> Vec<&'a str> {
    let needle = format!(" {name}(");
    stderr.lines().filter(|l| l.contains(&needle)).collect()
}

#[test]
fn events_are_printed_in_perfs_shape() {
    if !bpf_ready("events_are_printed_in_perfs_shape") {
        return;
    }
    let r = run(
        rtrace().args([
            "-e",
            "sched:sched_process_exec,sched:sched_process_exit",
            "--",
            "/bin/true",
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{r}");
    // `     0.000 true/P sched:sched_process_exec(filename: "/bin/true", pid: P (true), old_pid: P (true))`
    let (ts, rest) = lines[0].trim_start().split_once(' ').unwrap();
    assert_eq!(ts, "0.000", "{r}");
    let pid: u32 = rest
        .strip_prefix("true/")
        .and_then(|s| s.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no true/PID{r}"));
    assert_eq!(
        rest,
        format!(
            "true/{pid} sched:sched_process_exec(filename: \"/bin/true\", pid: {pid} (true), old_pid: {pid} (true))"
        ),
        "{r}"
    );
    // The priority depends on the test's nice level; group_dead is there on kernels
    // that have the field.
    assert!(
        lines[1].contains(&format!(
            " true/{pid} sched:sched_process_exit(comm: \"true\", pid: {pid} (true), prio: "
        )),
        "{r}"
    );
}

#[test]
fn globs_mix_with_syscalls_and_filter_applies_to_the_events() {
    if !bpf_ready("globs_mix_with_syscalls_and_filter_applies_to_the_events") {
        return;
    }
    let r = run(
        rtrace().args(["-e", "openat,sched:sched_process_e*", "--", "/bin/true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let exec = event_lines(&r.stderr, "sched:sched_process_exec");
    assert_eq!(exec.len(), 1, "{r}");
    // With syscalls, perf's blank duration column.
    assert!(exec[0].contains(" (         ): true/"), "{r}");
    assert_eq!(
        event_lines(&r.stderr, "sched:sched_process_exit").len(),
        1,
        "{r}"
    );
    let calls: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    assert!(calls.iter().any(|l| l.name == "openat"), "{r}");

    // The filter keeps the exit and drops the exec; the syscalls stay.
    let r = run(
        rtrace().args([
            "-e",
            "openat,sched:sched_process_e*",
            "--filter",
            "prio > 0 && comm ~ \"tr*\"",
            "--",
            "/bin/true",
        ]),
        LIMIT,
    );
    assert_eq!(
        r.code(),
        Some(1),
        "exec has no prio or comm field: refused{r}"
    );
    assert!(r.stderr.starts_with("rtrace: --filter '"), "{r}");
    let r = run(
        rtrace().args([
            "-e",
            "openat,sched:sched_process_exit",
            "--filter",
            "pid < 0",
            "--",
            "/bin/true",
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(
        event_lines(&r.stderr, "sched:sched_process_exit").is_empty(),
        "{r}"
    );
    let calls: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    assert!(calls.iter().any(|l| l.name == "openat"), "{r}");
}

#[test]
fn only_the_targets_events_are_shown() {
    if !bpf_ready("only_the_targets_events_are_shown") {
        return;
    }
    // An untraced process exits many times meanwhile.
    let mut busy = std::process::Command::new("sh")
        .args(["-c", "for i in $(seq 200); do /bin/true; done"])
        .spawn()
        .unwrap();
    let r = run(
        rtrace().args([
            "-e",
            "sched:sched_process_exit",
            "--",
            "sh",
            "-c",
            "/bin/true; /bin/true; exit 3",
        ]),
        LIMIT,
    );
    let _ = busy.wait();
    assert_eq!(r.code(), Some(3), "{r}");
    let exits = event_lines(&r.stderr, "sched:sched_process_exit");
    assert_eq!(exits.len(), 3, "the command and its two children{r}");
    assert_eq!(r.stderr.lines().count(), 3, "{r}");
}

#[test]
fn events_show_in_summaries_and_json() {
    if !bpf_ready("events_show_in_summaries_and_json") {
        return;
    }
    let r = run(
        rtrace().args([
            "-s",
            "-e",
            "openat,sched:sched_process_exec",
            "--",
            "/bin/true",
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    // perf prints the events' lines, then the syscall table.
    assert_eq!(
        event_lines(&r.stderr, "sched:sched_process_exec").len(),
        1,
        "{r}"
    );
    assert!(r.stderr.contains("Summary of events:"), "{r}");
    assert!(
        r.stderr
            .lines()
            .any(|l| l.trim_start().starts_with("openat ")),
        "{r}"
    );

    let r = run(
        rtrace().args([
            "--json",
            "-e",
            "sched:sched_process_exit",
            "--",
            "/bin/true",
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let v: serde_json::Value = serde_json::from_str(r.stderr.trim()).unwrap();
    assert_eq!(v["event"], "sched:sched_process_exit", "{r}");
    assert_eq!(v["fields"]["comm"]["decoded"], "\"true\"", "{r}");
    assert_eq!(v["fields"]["pid"]["raw"], v["pid"], "{r}");
}

#[test]
fn events_that_do_not_exist_are_refused_in_one_line() {
    if !bpf_ready("events_that_do_not_exist_are_refused_in_one_line") {
        return;
    }
    let r = run(rtrace().args(["-e", "sched:nosuch", "--", "true"]), LIMIT);
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: -e 'sched:nosuch' matches no tracepoint event (they are listed in /sys/kernel/tracing/available_events)",
        "{r}"
    );
    let r = run(
        rtrace().args([
            "-e",
            "sched:sched_switch",
            "--filter",
            "nope == 1",
            "--",
            "true",
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: --filter 'nope == 1': the event has no field 'nope'",
        "{r}"
    );
}

#[test]
fn a_commands_events_start_with_its_exec() {
    if !bpf_ready("a_commands_events_start_with_its_exec") {
        return;
    }
    // Before its exec the command is rtrace's held child (named rtrace): perf enables
    // its events on exec, and so does rtrace.
    let r = run(rtrace().args(["-e", "sched:*", "--", "/bin/true"]), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    // The exec event need not be the first: a timer tick can run the scheduler's events
    // for the new program between the exec program and the events' program on the
    // exec tracepoint (seen on 6.12 under QEMU): those events are the new program's.
    assert!(
        r.stderr
            .lines()
            .any(|l| l.contains(" true/") && l.contains(" sched:sched_process_exec(")),
        "{r}"
    );
    assert!(
        r.stderr.lines().all(|l| !l.contains(" rtrace/")),
        "no event of the held child before its exec{r}"
    );
}

/// A syscall's entry event is shown decoded as the call's entry is (perf's
/// augmented `syscalls:sys_enter_*`): the path, not its pointer; the flags by name.
/// Its exit event keeps its raw fields; `--filter` still reads the raw ones.
#[test]
fn syscall_entry_events_are_decoded_as_their_call() {
    if !bpf_ready("syscall_entry_events_are_decoded_as_their_call") {
        return;
    }
    let traced = |args: &[&str]| {
        let r = run(
            rtrace()
                .args(args)
                .args(["--", "/bin/cat", "/etc/hostname"]),
            LIMIT,
        );
        assert_eq!(r.code(), Some(0), "{r}");
        r
    };
    let r = traced(&["-e", "syscalls:sys_enter_openat,syscalls:sys_exit_openat"]);
    let enters = event_lines(&r.stderr, "syscalls:sys_enter_openat");
    // Before: `dfd: 4294967196, filename: 0x7f…, flags: 524288`.
    assert!(
        enters
            .iter()
            .any(|l| l
                .ends_with(" syscalls:sys_enter_openat(dfd: CWD, filename: \"/etc/hostname\")")),
        "{r}"
    );
    assert!(
        enters.iter().any(|l| l.contains("flags: RDONLY|CLOEXEC")),
        "{r}"
    );
    assert!(enters.iter().all(|l| !l.contains("__syscall_nr")), "{r}");
    let exits = event_lines(&r.stderr, "syscalls:sys_exit_openat");
    assert_eq!(exits.len(), enters.len(), "{r}");
    assert!(exits.iter().all(|l| l.contains("(__syscall_nr: ")), "{r}");
    // The filter is on the event's own fields: open(2)'s plain O_RDONLY only.
    let r = traced(&["-e", "syscalls:sys_enter_openat", "--filter", "flags == 0"]);
    let enters = event_lines(&r.stderr, "syscalls:sys_enter_openat");
    assert!(!enters.is_empty(), "{r}");
    assert!(enters.iter().all(|l| !l.contains("flags:")), "{r}");
    assert!(
        enters
            .iter()
            .any(|l| l.contains("filename: \"/etc/hostname\"")),
        "{r}"
    );
    // Beside the call itself (its plan read for both), and in a summary's run (which
    // reads no call's records).
    let r = traced(&["-e", "openat,syscalls:sys_enter_openat"]);
    assert!(
        event_lines(&r.stderr, "syscalls:sys_enter_openat")
            .iter()
            .any(|l| l.contains("filename: \"/etc/hostname\"")),
        "{r}"
    );
    assert!(
        r.stderr
            .lines()
            .filter_map(parse_line)
            .any(|l| l.name == "openat" && l.args.contains("filename: \"/etc/hostname\"")),
        "{r}"
    );
    let r = traced(&["-s", "-e", "syscalls:sys_enter_openat"]);
    assert!(
        event_lines(&r.stderr, "syscalls:sys_enter_openat")
            .iter()
            .any(|l| l.contains("filename: \"/etc/hostname\"")),
        "{r}"
    );
}
