//! `rtrace -- cmd`: what it prints, what it exits with, what it refuses.

use std::{process::Command, time::Duration};

use rtrace_tests::{bpf_ready, one_layout, parse_line, rtrace, run};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn traces_a_command_with_its_syscalls_and_nothing_of_rtrace() {
    if !bpf_ready("traces_a_command_with_its_syscalls_and_nothing_of_rtrace") {
        return;
    }
    let r = run(
        rtrace().args(["--", "head", "-c", "5", "/etc/hostname"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let expected_out: String = std::fs::read_to_string("/etc/hostname")
        .unwrap()
        .chars()
        .take(5)
        .collect();
    assert_eq!(
        r.stdout, expected_out,
        "the workload's own output is untouched{r}"
    );
    let lines: Vec<_> = r.trace_lines().into_iter().filter_map(parse_line).collect();
    assert!(!lines.is_empty(), "{r}");
    // One task, and it is the workload: rtrace's own syscalls never show.
    let tid = lines[0].tid;
    assert!(
        lines.iter().all(|l| l.tid == tid && l.comm != "rtrace"),
        "{r}"
    );
    assert_ne!(tid, std::process::id());
    let names: Vec<&str> = lines.iter().map(|l| l.name).collect();
    assert_eq!(
        names.first(),
        Some(&"execve"),
        "the trace starts at the exec{r}"
    );
    assert_eq!(
        names.last(),
        Some(&"exit_group"),
        "the last exit_group is printed{r}"
    );
    assert_eq!(lines.last().unwrap().ret, "?", "{r}");
    let opened = lines
        .iter()
        .any(|l| l.name == "openat" && l.ret.parse::<i32>().is_ok_and(|fd| fd >= 3));
    assert!(opened, "openat returning a valid fd{r}");
    assert!(names.contains(&"read") && names.contains(&"write"), "{r}");
    let failed = lines.iter().find(|l| l.ret.starts_with("-1 "));
    if let Some(f) = failed {
        assert!(
            f.ret.starts_with("-1 E") && f.ret.ends_with(')'),
            "errors print as -1 ENAME (text){r}"
        );
    }
}

#[test]
fn same_syscalls_as_strace_for_ls() {
    if !bpf_ready("same_syscalls_as_strace_for_ls") {
        return;
    }
    let dir = rtrace_tests::scratch_dir("strace");
    let st = dir.join("strace.txt");
    // One address layout for both runs (see one_layout): on arm64 ld.so's munmap count
    // varies with where the libraries land, and about one run in ten differed there.
    let s = run(
        one_layout(&mut Command::new("strace"))
            .args(["-f", "-qq", "-o"])
            .arg(&st)
            .args(["ls", "/"]),
        LIMIT,
    );
    assert_eq!(s.code(), Some(0), "{s}");
    // (syscall, failed) in order, from both tracers.
    let strace_calls: Vec<(String, bool)> = std::fs::read_to_string(&st)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let l = l.split_once(' ').map_or(l, |(_, rest)| rest).trim_start();
            let name = l.split('(').next()?.to_string();
            let failed = l
                .rsplit_once(" = ")
                .is_some_and(|(_, ret)| ret.starts_with("-1 "));
            Some((name, failed))
        })
        .filter(|(n, _)| !n.is_empty() && !n.starts_with('+'))
        .collect();
    let r = run(one_layout(&mut rtrace()).args(["--", "ls", "/"]), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let calls: Vec<(String, bool)> = r
        .trace_lines()
        .into_iter()
        .filter_map(parse_line)
        .map(|l| (l.name.to_string(), l.ret.starts_with("-1 ")))
        .collect();
    assert!(
        calls.iter().any(|(_, failed)| *failed),
        "some calls fail{r}"
    );
    assert_eq!(
        calls, strace_calls,
        "rtrace and strace -f agree on ls's syscalls, in order, and on which failed{r}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `rtrace --json -o - -- cmd | jq`: the trace alone on stdout, every line JSON, and the
/// command's own stdout on stderr, where it cannot break a line of the trace.
#[test]
fn dash_o_puts_the_trace_on_stdout_and_the_commands_on_stderr() {
    if !bpf_ready("dash_o_puts_the_trace_on_stdout_and_the_commands_on_stderr") {
        return;
    }
    let r = run(
        rtrace().args([
            "--json",
            "-e",
            "write",
            "-o",
            "-",
            "--",
            "sh",
            "-c",
            "echo from-the-command",
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}{r}")))
        .collect();
    assert!(
        lines.iter().any(|v| v["syscall"] == "write"),
        "no write in the trace{r}"
    );
    assert!(r.stderr.contains("from-the-command\n"), "{r}");
    assert!(
        !std::path::Path::new("-").exists(),
        "a file named '-' was written"
    );
}

#[test]
fn exit_status_is_the_commands() {
    if !bpf_ready("exit_status_is_the_commands") {
        return;
    }
    let r = run(rtrace().args(["--", "sh", "-c", "exit 7"]), LIMIT);
    assert_eq!(r.code(), Some(7), "{r}");
    let r = run(rtrace().args(["--", "sh", "-c", "kill -TERM $$"]), LIMIT);
    assert_eq!(r.code(), Some(128 + 15), "killed by SIGTERM: 128+15{r}");
}

#[test]
fn children_of_the_command_are_followed() {
    if !bpf_ready("children_of_the_command_are_followed") {
        return;
    }
    let r = run(
        rtrace().args(["--", "sh", "-c", "/bin/true; /bin/true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.trace_lines().into_iter().filter_map(parse_line).collect();
    let mut tids: Vec<u32> = lines.iter().map(|l| l.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    assert!(tids.len() >= 2, "the shell's children are traced too{r}");
    let true_execs = lines
        .iter()
        .filter(|l| l.name == "execve" && l.comm == "true")
        .count();
    assert!(true_execs >= 1, "{r}");
    let exits = lines.iter().filter(|l| l.name == "exit_group").count();
    assert_eq!(exits, tids.len(), "every task's exit_group is printed{r}");
}

#[test]
fn the_last_event_is_never_lost() {
    if !bpf_ready("the_last_event_is_never_lost") {
        return;
    }
    // perf's own exit-race test, ten times.
    for _ in 0..10 {
        let r = run(rtrace().args(["--no-comm", "--", "true"]), LIMIT);
        assert_eq!(r.code(), Some(0), "{r}");
        let last = r
            .stderr
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("");
        assert!(
            last.contains(" exit_group()") && last.ends_with("= ?"),
            "last line is exit_group{r}"
        );
    }
}

#[test]
fn output_file_gets_the_trace_and_old_one_is_kept() {
    if !bpf_ready("output_file_gets_the_trace_and_old_one_is_kept") {
        return;
    }
    let dir = rtrace_tests::scratch_dir("o");
    let f = dir.join("t.txt");
    std::fs::write(&f, "previous\n").unwrap();
    let r = run(rtrace().arg("-o").arg(&f).args(["--", "true"]), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(r.trace_lines().is_empty(), "nothing on stderr with -o{r}");
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.lines().any(|l| l.contains(" exit_group()")), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.join("t.txt.old")).unwrap(),
        "previous\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `rtrace ARGS -m 1` (one page of ring) on a burst of 40k syscalls made while the
/// reader is stopped (SIGSTOP): the ring fills however fast the reader is (it is
/// raised, and woken past half full: on an idle machine it kept up with a one-page
/// ring, and a burst alone no longer lost anything). Its stderr once it ends.
fn burst_with_the_reader_stopped(extra: &[&str]) -> rtrace_tests::Run {
    let dir = rtrace_tests::scratch_dir("lost");
    let go = dir.join("go");
    let done = dir.join("done");
    let script = format!(
        "while [ ! -e {go} ]; do sleep 0.01; done; dd if=/dev/zero of=/dev/null bs=1 count=20000 2>/dev/null; touch {done}",
        go = go.display(),
        done = done.display()
    );
    let mut cmd = rtrace();
    cmd.args(extra).args(["-m", "1", "--", "sh", "-c", &script]);
    // The loop's test of `go` in the trace: tracing has started, the reader reads.
    let t = rtrace_tests::Tracer::start_until(cmd, &go.display().to_string());
    let signal = |sig| {
        // SAFETY: plain kill(2) of our own child.
        unsafe { libc::kill(t.pid() as i32, sig) };
    };
    signal(libc::SIGSTOP);
    std::fs::write(&go, "").unwrap();
    let burst_ended = rtrace_tests::wait_for(LIMIT, || done.exists());
    signal(libc::SIGCONT);
    assert!(burst_ended, "the burst did not end: {}", t.stderr());
    t.wait(LIMIT)
}

#[test]
fn a_full_ring_reports_lost_events() {
    if !bpf_ready("a_full_ring_reports_lost_events") {
        return;
    }
    let r = burst_with_the_reader_stopped(&[]);
    assert_eq!(r.code(), Some(0), "{r}");
    let lost_line = r
        .stderr
        .lines()
        .find(|l| l.starts_with("LOST ") && l.ends_with(" events!"));
    assert!(
        lost_line.is_some(),
        "LOST N events! is printed{}",
        &r.stderr[r.stderr.len().saturating_sub(2000)..]
    );

    // With --json every line is an object, the loss too (jq would stop at a text line).
    let r = burst_with_the_reader_stopped(&["--json"]);
    assert_eq!(r.code(), Some(0), "{r}");
    let mut lost = 0;
    for l in r.stderr.lines() {
        assert!(l.starts_with('{') && l.ends_with('}'), "not JSON: {l}");
        if let Some(n) = l
            .strip_prefix("{\"lost\":")
            .and_then(|n| n.strip_suffix('}'))
        {
            lost += n.parse::<u64>().unwrap();
        }
    }
    assert!(lost > 0, "a {{\"lost\":N}} object is printed");
}

#[test]
fn a_command_that_cannot_run() {
    if !bpf_ready("a_command_that_cannot_run") {
        return;
    }
    let r = run(rtrace().args(["--", "/no/such/program"]), LIMIT);
    assert_eq!(r.code(), Some(127), "{r}");
    let own: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("rtrace: "))
        .collect();
    assert_eq!(own.len(), 1, "{r}");
    assert!(own[0].contains("/no/such/program"), "{r}");
    let r = run(rtrace().args(["--", "no-such-command-xyz"]), LIMIT);
    assert_eq!(r.code(), Some(127), "{r}");
    assert_eq!(
        r.stderr.trim(),
        "rtrace: cannot run 'no-such-command-xyz': command not found"
    );
}

#[test]
fn a_script_without_a_shebang_is_run_by_the_shell() {
    if !bpf_ready("a_script_without_a_shebang_is_run_by_the_shell") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = rtrace_tests::scratch_dir("noshebang");
    let script = dir.join("script");
    let marker = dir.join("ran");
    std::fs::write(&script, format!("touch {}\nexit 3\n", marker.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = run(rtrace().arg("--").arg(&script), LIMIT);
    assert_eq!(
        r.code(),
        Some(3),
        "the script's own status, as a shell gives it{r}"
    );
    assert!(marker.exists(), "{r}");
    let execs: Vec<_> = r
        .trace_lines()
        .into_iter()
        .filter(|l| l.contains(" execve("))
        .collect();
    assert!(
        execs
            .first()
            .is_some_and(|l| l.ends_with("ENOEXEC (Exec format error)")),
        "{r}"
    );
    assert!(
        execs
            .iter()
            .any(|l| l.contains("\"/bin/sh\"") && l.ends_with("= 0")),
        "{r}"
    );
}

#[test]
fn bad_options_get_one_line() {
    // No BPF needed: rejected before anything is loaded.
    let bin = rtrace_tests::rtrace_bin();
    if !bin.exists() {
        assert!(bpf_ready("bad_options_get_one_line"));
        return;
    }
    for args in [
        &["--bogus"][..],
        &["-p", "abc"],
        &["-p", "999999999"],
        &["-m", "zz", "--", "true"],
        // (uid_t)-1: no user, not "every user".
        &["-u", "4294967295"],
    ] {
        let r = run(rtrace().args(args), LIMIT);
        assert_ne!(r.code(), Some(0), "{r}");
        assert_eq!(r.stderr.lines().count(), 1, "{r}");
        assert!(r.stderr.starts_with("rtrace: "), "{r}");
    }
    // The variable that sizes the pid maps: not a number, or out of range, is refused
    // (it used to fall back to 8192 silently, or to spin in the kernel for 100000000).
    for value in ["0", "-1", "abc", "99999999999", "100000000"] {
        let r = run(
            rtrace()
                .env("RTRACE_PID_MAP_ENTRIES", value)
                .args(["--", "true"]),
            LIMIT,
        );
        assert_eq!(r.code(), Some(2), "{value}{r}");
        assert_eq!(
            r.stderr.trim_end(),
            format!(
                "rtrace: invalid RTRACE_PID_MAP_ENTRIES '{value}': expected a number of tasks from 1 to 4194304"
            ),
            "{r}"
        );
    }
    for value in ["0", "x", "4194305"] {
        let r = run(
            rtrace()
                .env("RTRACE_SUMMARY_ENTRIES", value)
                .args(["-s", "--", "true"]),
            LIMIT,
        );
        assert_eq!(r.code(), Some(2), "{value}{r}");
        assert_eq!(
            r.stderr.trim_end(),
            format!(
                "rtrace: invalid RTRACE_SUMMARY_ENTRIES '{value}': expected a number of (thread, syscall) pairs from 1 to 4194304"
            ),
            "{r}"
        );
    }
}

#[test]
fn an_endless_perf_config_is_refused_with_perfs_warning() {
    if !bpf_ready("an_endless_perf_config_is_refused_with_perfs_warning") {
        return;
    }
    // It used to be read whole: 2 GB and no start.
    let r = run(
        rtrace()
            .env("PERF_CONFIG", "/dev/zero")
            .args(["--", "true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(
        r.stderr.lines().next(),
        Some("rtrace: bad config file line 1 in /dev/zero"),
        "{r}"
    );
    assert!(
        r.trace_lines().iter().any(|l| l.contains("exit_group")),
        "{r}"
    );
}

#[test]
fn unprivileged_users_are_told_what_is_needed() {
    if !bpf_ready("unprivileged_users_are_told_what_is_needed") {
        return;
    }
    let r = run(
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all",
            ])
            .arg(rtrace_tests::rtrace_bin())
            .args(["--", "true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(r.stderr.lines().count(), 1, "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: permission denied: tracing needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, and this process lacks CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN — run it with sudo",
        "{r}"
    );
}

/// `setpriv` for root with only `caps` (e.g. `+bpf,+perfmon`; `` for none) in every set.
fn root_with_caps(caps: &str) -> Command {
    let mut c = Command::new("setpriv");
    for set in ["--bounding-set", "--inh-caps", "--ambient-caps"] {
        c.arg(format!("{set}=-all{caps}"));
    }
    c
}

#[test]
fn root_without_the_capabilities_is_told_so() {
    if !bpf_ready("root_without_the_capabilities_is_told_so") {
        return;
    }
    // Root in a container with Docker's default capabilities is in this state.
    let r = run(
        root_with_caps("")
            .arg(rtrace_tests::rtrace_bin())
            .args(["--", "true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: permission denied: tracing needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, and this process lacks CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN — it runs as root without them: in a container, add them (see the README's \"In a container\")",
        "{r}"
    );
}

#[test]
fn cap_bpf_and_cap_perfmon_are_enough_where_tracefs_is_mounted() {
    if !bpf_ready("cap_bpf_and_cap_perfmon_are_enough_where_tracefs_is_mounted") {
        return;
    }
    let r = run(
        root_with_caps(",+bpf,+perfmon")
            .arg(rtrace_tests::rtrace_bin())
            .args(["--", "cat", "/proc/self/stat"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.name == "openat" && l.args.contains("/proc/self/stat")),
        "{r}"
    );

    // Without tracefs (a container's own mount namespace), mounting it needs
    // CAP_SYS_ADMIN: the line says so and how to bind the host's.
    let script = format!(
        "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; exec setpriv --bounding-set=-all,+bpf,+perfmon --inh-caps=-all,+bpf,+perfmon --ambient-caps=-all,+bpf,+perfmon {} -- true",
        rtrace_tests::rtrace_bin().display()
    );
    let r = run(
        Command::new("unshare").args(["-m", "sh", "-c", &script]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: tracefs is not mounted at /sys/kernel/tracing, and mounting it needs CAP_SYS_ADMIN — mount it first (mount -t tracefs nodev /sys/kernel/tracing), or in a container bind the host's (docker run -v /sys/kernel/tracing:/sys/kernel/tracing:ro)",
        "{r}"
    );
}

#[test]
fn a_blocked_call_is_shown_unfinished_then_continued() {
    if !bpf_ready("a_blocked_call_is_shown_unfinished_then_continued") {
        return;
    }
    let r = run(
        rtrace().args(["--", "sh", "-c", "sleep 0.3 & sleep 0.1; wait"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<&str> = r.stderr.lines().collect();
    let unfinished = lines
        .iter()
        .position(|l| {
            l.contains(" wait4(")
                && l.strip_suffix(" ...")
                    .is_some_and(|c| c.trim_end().ends_with(')'))
        })
        .unwrap_or_else(|| panic!("wait4 shown unfinished while the children run{r}"));
    let continued = lines[unfinished..]
        .iter()
        .find(|l| l.contains(" ... [continued]: wait4())"))
        .unwrap_or_else(|| panic!("and later continued{r}"));
    assert!(
        continued.contains(" ms): "),
        "with its duration: {continued}{r}"
    );
    let pid = parse_line(continued).and_then(|l| l.ret.split(' ').next()?.parse::<i32>().ok());
    assert!(pid.is_some_and(|p| p > 0), "returns the child's pid{r}");
}

#[test]
fn max_events_stops_after_exactly_n_lines() {
    if !bpf_ready("max_events_stops_after_exactly_n_lines") {
        return;
    }
    let r = run(rtrace().args(["--max-events", "5", "--", "ls", "/"]), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(r.trace_lines().len(), 5, "{r}");
}

/// A perf user's habits: unique prefixes of long options, `--no-X` for booleans, one
/// line for perf options rtrace does not have yet, clap's tip kept, and a shell's exit
/// codes for a command that is missing (127) or cannot be run (126).
#[test]
fn perf_users_habits() {
    if !bpf_ready("perf_users_habits") {
        return;
    }
    let r = run(rtrace().args(["--dur", "100000", "--", "true"]), LIMIT);
    assert_eq!(r.code(), Some(0), "--dur is --duration{r}");
    assert!(r.trace_lines().is_empty(), "nothing took 100 s{r}");
    let r = run(rtrace().args(["-s", "--no-summary", "--", "true"]), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(
        !r.stderr.contains("Summary of events"),
        "the last one wins{r}"
    );
    assert!(r.stderr.contains(" exit_group()"), "{r}");
    let r = run(
        rtrace().args(["--failure", "--no-failure", "--", "true"]),
        LIMIT,
    );
    assert!(r.stderr.contains(" exit_group()"), "{r}");
    for (args, line) in [
        (
            &["--switch-on", "sched:sched_switch", "--", "true"][..],
            "rtrace: --switch-on is not supported yet",
        ),
        (
            &["--map-dump", "pids_to_trace", "--", "true"],
            "rtrace: --map-dump is not supported yet",
        ),
        (
            &["--summery", "--", "true"],
            "rtrace: unexpected argument '--summery' found (a similar argument exists: '--summary') — see rtrace --help",
        ),
    ] {
        let r = run(rtrace().args(args), LIMIT);
        assert_eq!(r.code(), Some(2), "{r}");
        assert_eq!(r.stderr.trim_end(), line, "{r}");
    }
    for (cmd, code) in [("/etc/passwd", 126), ("/", 126), ("/no/such/rtrace", 127)] {
        let r = run(rtrace().args(["--", cmd]), LIMIT);
        assert_eq!(r.code(), Some(code), "{r}");
        assert_eq!(r.stderr.lines().count(), 1, "{r}");
    }
}

const SLEEP: &[&str] = &["-e", "clock_nanosleep", "--", "sleep", "0.01"];

/// perf's config files where perf looks when PERF_CONFIG is unset (~/.perfconfig here),
/// and colour as NO_COLOR, CLICOLOR_FORCE and perf's color.ui say.
#[test]
fn perf_config_files_and_colour() {
    if !bpf_ready("perf_config_files_and_colour") {
        return;
    }
    let home = rtrace_tests::scratch_dir("home");
    std::fs::write(
        home.join(".perfconfig"),
        "[trace]\n\tshow_timestamp = false\n[color]\n\tui = always\n",
    )
    .unwrap();
    let r = run(
        rtrace()
            .env_remove("PERF_CONFIG")
            .env("HOME", &home)
            .args(SLEEP),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(r.stderr.starts_with("("), "no timestamp{r}");
    // 10 ms: a red duration when colour is on.
    assert!(r.stderr.contains('\x1b'), "color.ui = always{r}");
    let r = run(
        rtrace()
            .env_remove("PERF_CONFIG")
            .env("HOME", &home)
            .env("NO_COLOR", "1")
            .args(SLEEP),
        LIMIT,
    );
    assert!(!r.stderr.contains('\x1b'), "NO_COLOR{r}");
    let r = run(rtrace().env("CLICOLOR_FORCE", "1").args(SLEEP), LIMIT);
    assert!(
        r.stderr.contains('\x1b'),
        "CLICOLOR_FORCE colours a pipe{r}"
    );
    std::fs::remove_dir_all(&home).unwrap();
}

/// `-e` puts its syscall programs on the chosen calls' own kernel functions by default
/// for a 64-bit command, or on their events where the kernel refuses the functions
/// (and with `RTRACE_SYSCALL_HOOKS=functions` or `events`): the same lines as on the
/// raw tracepoints (`RTRACE_SYSCALL_HOOKS=raw`), children and grandchildren followed
/// (they are made targets at fork, as no other call's exit runs a program to adopt
/// them), and `-v` says which. Where the test's runner knows the kernel
/// (`RTRACE_TEST_FUNCTIONS=1`: it attaches to functions; `0`: it does not), which one
/// is checked; elsewhere it is printed.
#[test]
fn e_runs_on_the_chosen_calls_own_events_and_follows_children() {
    if !bpf_ready("e_runs_on_the_chosen_calls_own_events_and_follows_children") {
        return;
    }
    let script = "cat /etc/hostname >/dev/null; (cat /etc/hostname >/dev/null)";
    let trace = |hooks: Option<&str>| {
        let mut c = rtrace();
        c.args(["-v", "-e", "openat,close", "--", "sh", "-c", script]);
        if let Some(h) = hooks {
            c.env("RTRACE_SYSCALL_HOOKS", h);
        }
        let r = run(&mut c, LIMIT);
        assert_eq!(r.code(), Some(0), "{r}");
        r
    };
    const SAID: &str = "the syscall programs run on the chosen calls' own events";
    const FUNCTIONS: &str = "the syscall programs run on the chosen calls' own functions (__x64_sys_close, __x64_sys_openat)";
    const REFUSED: &str =
        "the syscall programs run on the chosen calls' own events, not their functions: ";
    let functions_said = FUNCTIONS.replace(
        "__x64_",
        if cfg!(target_arch = "aarch64") {
            "__arm64_"
        } else {
            "__x64_"
        },
    );
    let events = trace(Some("events"));
    let functions = trace(Some("functions"));
    let chosen = trace(None);
    let raw = trace(Some("raw"));
    assert!(events.stderr.contains(SAID), "{events}");
    assert!(!events.stderr.contains(&functions_said), "{events}");
    assert!(!raw.stderr.contains(SAID), "{raw}");
    assert!(!raw.stderr.contains(&functions_said), "{raw}");
    // The functions are the default, where the kernel takes them.
    for r in [&functions, &chosen] {
        let refused = r.stderr.contains(REFUSED);
        assert!(
            refused != r.stderr.contains(&functions_said),
            "the functions or the events, said, are the default for sh{r}"
        );
        match std::env::var("RTRACE_TEST_FUNCTIONS").as_deref() {
            Ok("1") => assert!(!refused, "this kernel attaches to functions{r}"),
            Ok("0") => assert!(refused, "this kernel refuses functions{r}"),
            _ => eprintln!(
                "on this kernel -e runs on the calls' {}",
                if refused { "events" } else { "functions" }
            ),
        }
    }
    assert!(
        raw.stderr.contains(
            "rtrace: -e runs on the raw syscall tracepoints, which every call passes: RTRACE_SYSCALL_HOOKS=raw"
        ),
        "{raw}"
    );
    let calls = |r: &rtrace_tests::Run| -> Vec<(String, String, String)> {
        r.trace_lines()
            .into_iter()
            .filter_map(parse_line)
            .map(|l| (l.comm.to_string(), l.name.to_string(), l.ret.to_string()))
            .collect()
    };
    let hostname_opens = |r: &rtrace_tests::Run| {
        r.trace_lines()
            .into_iter()
            .filter_map(parse_line)
            .filter(|l| l.name == "openat" && l.args.contains("\"/etc/hostname\""))
            .map(|l| l.tid)
            .collect::<std::collections::BTreeSet<u32>>()
            .len()
    };
    assert_eq!(
        hostname_opens(&events),
        2,
        "both cats, the second a grandchild{events}"
    );
    assert_eq!(hostname_opens(&functions), 2, "{functions}");
    assert_eq!(calls(&events), calls(&raw), "{events}{raw}");
    assert_eq!(calls(&functions), calls(&raw), "{functions}{raw}");
    assert_eq!(calls(&chosen), calls(&raw), "{chosen}{raw}");
    assert!(
        calls(&events)
            .iter()
            .all(|(_, name, _)| name == "openat" || name == "close"),
        "{events}"
    );
}

/// On the chosen calls' own events or functions, releasing each perf event and link
/// waits for the kernel's grace periods; rtrace leaves that to a detached process,
/// after the calls are unchosen. That process holds none of rtrace's output: when rtrace has exited,
/// nothing else has its pipes. And it does its work: soon no process of rtrace is left,
/// nor any of its programs.
#[test]
fn the_events_are_released_behind_rtrace_without_its_output() {
    if !bpf_ready("the_events_are_released_behind_rtrace_without_its_output") {
        return;
    }
    for hooks in ["events", "functions"] {
        released_behind_rtrace(hooks);
    }
}

fn released_behind_rtrace(hooks: &str) {
    use std::{
        io::Read,
        os::{fd::AsRawFd, unix::fs::MetadataExt},
        process::Stdio,
    };
    let marker = "exit 0 # the_events_are_released_behind_rtrace";
    let mut child = rtrace()
        .env("RTRACE_SYSCALL_HOOKS", hooks)
        .args(["-v", "-e", "openat,close", "--", "sh", "-c", marker])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let pipes = [stdout.as_raw_fd(), stderr.as_raw_fd()].map(|fd| {
        std::fs::metadata(format!("/proc/self/fd/{fd}"))
            .unwrap()
            .ino()
    });
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let status = child.wait().unwrap();
    let me = std::process::id();
    let mut holders = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let link = std::fs::read_link(fd.path()).unwrap_or_default();
            let link = link.to_string_lossy();
            if pid != me && pipes.iter().any(|i| link == format!("pipe:[{i}]")) {
                holders.push((pid, link.to_string()));
            }
        }
    }
    let text = reader.join().unwrap();
    assert!(status.success(), "{status:?}{text}");
    assert!(
        text.contains("the syscall programs run on the chosen calls' own"),
        "{hooks}: {text}"
    );
    assert!(
        holders.is_empty(),
        "rtrace's output is held after it exited: {holders:?}"
    );
    drop(stdout);
    use super::held::{rtrace_processes_with, rtrace_programs};
    assert!(
        rtrace_tests::wait_for(Duration::from_secs(10), || {
            rtrace_processes_with(marker).is_empty() && rtrace_programs().is_empty()
        }),
        "{hooks}: after rtrace: its processes {:?}, its programs {:?}",
        rtrace_processes_with(marker),
        rtrace_programs()
    );
}
