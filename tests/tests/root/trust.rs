//! Trust under load and bad input: a system-wide trace ends with its command however
//! far behind the reader is, stops are honoured in every phase (start-up, -D, SIGINT
//! inherited ignored), limits the kernel hits are named, and bad options or config
//! files get one line, never a hang or an abort.

use std::{
    os::unix::process::CommandExt as _,
    thread,
    time::{Duration, Instant},
};

use rtrace_tests::{
    Bg, Tracer, bpf_ready, compile_c, parse_line, process_running as running, rtrace, run,
    scratch_dir,
};

const LIMIT: Duration = Duration::from_secs(60);

fn signal(pid: u32, sig: i32) {
    // SAFETY: plain kill(2).
    unsafe { libc::kill(pid as i32, sig) };
}

/// Threads that make getppid calls as fast as they can: more records than any reader
/// takes, so that the ring is never empty while they run.
const STORM: &str = r#"
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>
static void *spin(void *arg) { for (;;) syscall(SYS_getppid); return arg; }
int main(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, spin, 0);
    spin(0);
}
"#;

#[test]
fn a_system_wide_trace_ends_with_its_command_while_the_reader_is_behind() {
    if !bpf_ready("a_system_wide_trace_ends_with_its_command_while_the_reader_is_behind") {
        return;
    }
    let dir = scratch_dir("storm");
    let (cc, storm) = compile_c(&dir, "storm", STORM, &["-O2", "-pthread"]);
    assert!(cc.status.success(), "{cc}");
    // The reader of a debug build falls behind such a storm at once and never catches
    // up: before, it drained until the ring was empty before it looked at the
    // command's exit, and never ended. The storm starts once tracing has (in an
    // emulated kernel it would starve rtrace's start-up); the command notes when it
    // ends.
    let end_file = dir.join("end");
    let script = format!("sleep 3; date +%s.%N > {}", end_file.display());
    let mut cmd = rtrace();
    cmd.args(["-v", "-a", "-o", "/dev/null", "--", "sh", "-c", &script]);
    let t = Tracer::start_cmd(cmd);
    let _storm = Bg::spawn(&storm, &[]);
    let r = t.wait(LIMIT);
    let ended = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(end_file.exists(), "the command did not end{r}");
    let command_ended: f64 = std::fs::read_to_string(&end_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // 0.6-0.9 s on the development VM (half a second of it the final read); an
    // emulated kernel gets a wide margin, far under the minute the old loop never
    // ended in.
    let after = ended - command_ended;
    assert!(
        after < 10.0,
        "rtrace ended {after:.2} s after its command{r}"
    );
    // What the final read left is said, as a loss is.
    if let Some(l) = r.stderr.lines().find(|l| l.contains("left unread")) {
        assert!(
            l.starts_with("rtrace: ")
                && l.ends_with("(the reader was behind the system-wide trace)"),
            "{r}"
        );
    }
}

#[test]
fn sigint_inherited_ignored_still_stops_rtrace_while_it_starts() {
    if !bpf_ready("sigint_inherited_ignored_still_stops_rtrace_while_it_starts") {
        return;
    }
    // A script's background job: `rtrace -- cmd & kill -INT $!` with SIGINT ignored.
    // Before, a SIGINT that came while rtrace started (30-120 ms after launch here)
    // was lost every time, and the command ran its whole sleep. Sent here once rtrace says it
    // is starting (-v), before its programs load: a signal sent before rtrace's first
    // instruction meets the ignored disposition it inherited, and the kernel drops it.
    // The command is long enough that a lost signal cannot pass for a slow start-up
    // (rtrace took 6.2 s to verify its programs and end under QEMU's emulation of 6.1,
    // against a bound of 6 s with a 7 s command).
    for delay_ms in [0u64, 20, 50] {
        let length = format!("20.{delay_ms}");
        let mut cmd = rtrace();
        cmd.args(["-v", "--", "sleep", &length]);
        // SAFETY: only signal(2) between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                Ok(())
            });
        }
        let t = Tracer::start_until(cmd, "rtrace: a process ends with its last thread");
        thread::sleep(Duration::from_millis(delay_ms));
        let sent = Instant::now();
        signal(t.pid(), libc::SIGINT);
        let r = t.wait(LIMIT);
        let took = sent.elapsed();
        // Where the command had started, it inherits SIGINT ignored, as it would
        // without rtrace, and rtrace gives it its 2 s of grace and ends.
        let ran = running(&["sleep", &length]);
        if ran {
            let _ = std::process::Command::new("pkill")
                .args(["-f", &format!("sleep {length}")])
                .status();
        }
        assert_eq!(r.code(), Some(130), "after {delay_ms} ms{r}");
        assert!(
            took < Duration::from_secs(15),
            "after {delay_ms} ms: took {took:?}{r}"
        );
        assert!(
            !ran || r.stderr.contains("execve"),
            "after {delay_ms} ms: the command ran untraced{r}"
        );
    }
}

/// Starts `rtrace -v ARGS`, waits until it has written its maps (the last step before
/// -D's wait), sends `sig` `after` that, and returns how rtrace ended and how long
/// after the signal.
fn stopped_after(args: &[&str], after: Duration, sig: i32) -> (rtrace_tests::Run, Duration) {
    let mut cmd = rtrace();
    cmd.arg("-v").args(args);
    let t = Tracer::start_until(cmd, "rtrace: pruned pids_to_trace");
    thread::sleep(after);
    let sent = Instant::now();
    signal(t.pid(), sig);
    let r = t.wait(LIMIT);
    (r, sent.elapsed())
}

#[test]
fn a_stop_during_the_delay_ends_the_session_at_once() {
    if !bpf_ready("a_stop_during_the_delay_ends_the_session_at_once") {
        return;
    }
    // Half a second into the 10 s delay.
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let length = format!("30.{sig}");
        let (r, took) = stopped_after(
            &["-D", "10000", "--", "sleep", &length],
            Duration::from_millis(500),
            sig,
        );
        // Before, the delay ran out first: 8.8 s later.
        assert!(
            took < Duration::from_secs(3),
            "signal {sig}: took {took:?}{r}"
        );
        assert_eq!(r.code(), Some(128 + sig), "{r}");
        assert!(!running(&["sleep", &length]), "the command was left{r}");
    }
    // A delay too long for any clock still yields to a stop (before: only SIGKILL).
    let (r, took) = stopped_after(
        &["-D", "4294967296", "--", "sleep", "30.5"],
        Duration::from_millis(500),
        libc::SIGTERM,
    );
    assert!(took < Duration::from_secs(3), "took {took:?}{r}");
    assert_eq!(r.code(), Some(128 + libc::SIGTERM), "{r}");
}

#[test]
fn delay_zero_is_no_delay() {
    if !bpf_ready("delay_zero_is_no_delay") {
        return;
    }
    let r = run(rtrace().args(["-D", "0", "--", "true"]), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines = r.stderr.lines().filter_map(parse_line).count();
    // Before, -D 0 showed nothing at all.
    assert!(lines > 5, "{lines} lines{r}");
}

#[test]
fn the_fd_limit_is_named_as_such() {
    if !bpf_ready("the_fd_limit_is_named_as_such") {
        return;
    }
    let bin = rtrace_tests::rtrace_bin();
    for limit in [4, 20] {
        let script = format!("ulimit -n {limit}; exec \"$0\" -- true");
        let r = run(
            std::process::Command::new("sh")
                .env("PERF_CONFIG", "/dev/null")
                .args(["-c", &script])
                .arg(&bin),
            LIMIT,
        );
        assert_eq!(r.code(), Some(1), "ulimit -n {limit}{r}");
        assert_eq!(r.stderr.lines().count(), 1, "ulimit -n {limit}{r}");
        // Before: "permission denied: … lacks CAP_BPF" (4), and a map's name with no
        // cause the README sent to the verifier (20).
        assert!(
            r.stderr.contains("Too many open files") || r.stderr.contains("too many open files"),
            "ulimit -n {limit}{r}"
        );
        assert!(!r.stderr.contains("CAP_"), "ulimit -n {limit}{r}");
    }
    let r = run(
        std::process::Command::new("sh")
            .env("PERF_CONFIG", "/dev/null")
            .args(["-c", "ulimit -n 20; exec \"$0\" -- true"])
            .arg(&bin),
        LIMIT,
    );
    assert!(
        r.stderr.contains("too many open files (ulimit -n is 20)"),
        "{r}"
    );
}

#[test]
fn a_deep_filter_is_refused_in_one_line() {
    if !bpf_ready("a_deep_filter_is_refused_in_one_line") {
        return;
    }
    let deep = format!(
        "{}common_pid == 1{}",
        "(".repeat(15_000),
        ")".repeat(15_000)
    );
    let nots = format!("{}common_pid == 1", "!".repeat(30_000));
    for filter in [deep, nots] {
        let r = run(
            rtrace().args([
                "-e",
                "sched:sched_process_exit",
                "--filter",
                &filter,
                "--",
                "true",
            ]),
            LIMIT,
        );
        // Before: "thread 'main' has overflowed its stack", SIGABRT.
        assert_ne!(r.code(), Some(0), "{r}");
        assert!(r.code().is_some(), "killed by a signal{r}");
        assert_eq!(r.stderr.lines().count(), 1, "{r}");
        assert!(r.stderr.contains("more than 256 deep"), "{r}");
        assert!(r.stderr.len() < 400, "{r}");
    }
}

#[test]
fn config_files_cannot_hang_or_bloat_the_trace() {
    if !bpf_ready("config_files_cannot_hang_or_bloat_the_trace") {
        return;
    }
    let dir = scratch_dir("perfconfig");
    let fifo = dir.join("fifo");
    rtrace_tests::mkfifo(&fifo);
    // Before: rtrace waited for a writer that never came.
    let r = run(
        rtrace().env("PERF_CONFIG", &fifo).args(["--", "true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(
        r.stderr
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("rtrace: cannot read the config file")),
        "{r}"
    );
    // Before: every line padded to 2,000,000,000 columns.
    let config = dir.join("perfconfig");
    std::fs::write(&config, "[trace]\n\targs_alignment = 2000000000\n").unwrap();
    let r = run(
        rtrace().env("PERF_CONFIG", &config).args(["--", "true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(
        r.stderr.contains("ignoring args_alignment = 2000000000"),
        "{r}"
    );
    let longest = r.stderr.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 2000, "a line of {longest} bytes");
}

/// Forks a child that calls getppid 3 times, then makes the next fork take the same pid
/// (`ns_last_pid`, as checkpoint/restore tools do) for a child that calls getuid 5
/// times; retried when another process on the machine took the pid in between.
const REUSE: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
int main(void) {
    for (int attempt = 0; attempt < 50; attempt++) {
        pid_t a = fork();
        if (a == 0) { for (int i = 0; i < 3; i++) syscall(SYS_getppid); _exit(0); }
        waitpid(a, 0, 0);
        int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
        if (fd < 0) return 2;
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%d", a - 1);
        if (write(fd, buf, n) != n) return 3;
        close(fd);
        pid_t b = fork();
        if (b == 0) { for (int i = 0; i < 5; i++) syscall(SYS_getuid); _exit(0); }
        waitpid(b, 0, 0);
        if (b == a) { printf("%d\n", a); return 0; }
    }
    return 1;
}
"#;

#[test]
fn a_reused_pid_gets_a_summary_section_of_its_own() {
    if !bpf_ready("a_reused_pid_gets_a_summary_section_of_its_own") {
        return;
    }
    let dir = scratch_dir("reuse");
    let (cc, reuse) = compile_c(&dir, "reuse", REUSE, &["-O1"]);
    assert!(cc.status.success(), "{cc}");
    let r = run(rtrace().arg("-s").arg("--").arg(&reuse), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let pid: u32 = r.stdout.trim().parse().unwrap();
    // Before, both children added up in one "reuse (PID)" section.
    let titles: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with(&format!(" reuse ({pid}), ")))
        .collect();
    assert_eq!(titles.len(), 2, "{titles:?}{r}");
    let section_of = |call: &str| {
        let mut title = "";
        for l in r.stderr.lines() {
            if l.starts_with(" reuse (") {
                title = l;
            }
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.first() == Some(&call) && title.starts_with(&format!(" reuse ({pid}), ")) {
                return Some((title, f[1].to_string()));
            }
        }
        None
    };
    let (first, ppid_calls) = section_of("getppid").unwrap_or_else(|| panic!("no getppid{r}"));
    let (second, uid_calls) = section_of("getuid").unwrap_or_else(|| panic!("no getuid{r}"));
    assert_eq!((ppid_calls.as_str(), uid_calls.as_str()), ("3", "5"), "{r}");
    assert_ne!(first, second, "one section for both children{r}");
}

#[test]
fn a_long_summary_keeps_only_live_threads_in_the_kernel() {
    if !bpf_ready("a_long_summary_keeps_only_live_threads_in_the_kernel") {
        return;
    }
    // 120 short processes over ~8 s, some 25 rows each: 3,000 rows, more than the
    // 2,048 the maps hold. Before, the maps filled and calls went missing; now the
    // exited threads' rows leave the kernel every second. Once with --hist, whose
    // histograms are kept in the rows' slots.
    let script = "i=0; while [ $i -lt 60 ]; do /bin/true; sleep 0.1; i=$((i+1)); done";
    for hist in [None, Some("--hist")] {
        let r = run(
            rtrace()
                .env("RTRACE_SUMMARY_ENTRIES", "2048")
                .args(["-s"].into_iter().chain(hist))
                .args(["--", "sh", "-c", script]),
            LIMIT,
        );
        assert_eq!(r.code(), Some(0), "{r}");
        assert!(!r.stderr.contains("missing from the summary"), "{r}");
        let count = |title: &str| r.stderr.lines().filter(|l| l.starts_with(title)).count();
        assert_eq!((count(" true ("), count(" sleep (")), (60, 60), "{r}");
        // The rows of the threads that ended leave their slots to later threads,
        // zeroed: every run of /bin/true makes the same calls, so every `true`
        // section shows the same rows (and histogram counts), the last ones (in slots
        // used before) as the first.
        let rows = section_rows(&r.stderr, " true (");
        assert_eq!(rows.len(), 60, "{r}");
        assert!(rows[0].len() > 5, "{r}");
        if hist.is_some() {
            let counted: u64 = rows[0].iter().map(|row| row.3).sum();
            assert!(counted > 20, "no histograms{r}");
        }
        for (i, section) in rows.iter().enumerate() {
            assert_eq!(
                section, &rows[0],
                "true section {i} differs from the first{r}"
            );
        }
    }
}

/// Each section whose title starts with `title`: its rows' (syscall, calls, errors,
/// the sum of the counts of the histogram under it).
fn section_rows(text: &str, title: &str) -> Vec<Vec<(String, u64, u64, u64)>> {
    let mut sections: Vec<Vec<(String, u64, u64, u64)>> = Vec::new();
    let mut in_one = false;
    for line in text.lines() {
        if line.starts_with(' ') && !line.starts_with("  ") && line.contains(" events, ") {
            in_one = line.starts_with(title);
            if in_one {
                sections.push(Vec::new());
            }
            continue;
        }
        let Some(rows) = sections.last_mut().filter(|_| in_one) else {
            continue;
        };
        let f: Vec<&str> = line.split_whitespace().collect();
        // A histogram's line: `[lo, hi)   count |@@@|`, the count before the bar.
        if line.trim_start().starts_with('[') {
            let bar = f.iter().position(|w| w.starts_with('|'));
            if let (Some(b), Some(row)) = (bar, rows.last_mut())
                && b > 0
                && let Ok(n) = f[b - 1].parse::<u64>()
            {
                row.3 += n;
            }
            continue;
        }
        if f.len() >= 3
            && let (Ok(calls), Ok(errors)) = (f[1].parse(), f[2].parse())
        {
            rows.push((f[0].to_string(), calls, errors, 0));
        }
    }
    for rows in &mut sections {
        rows.sort();
    }
    sections
}

#[test]
fn max_events_on_a_system_wide_trace_is_no_loss() {
    if !bpf_ready("max_events_on_a_system_wide_trace_is_no_loss") {
        return;
    }
    let dir = scratch_dir("maxev");
    let (cc, storm) = compile_c(&dir, "storm", STORM, &["-O2", "-pthread"]);
    assert!(cc.status.success(), "{cc}");
    // Niced, so that it fills the ring without starving rtrace's start-up (in an
    // emulated kernel that took past the test's minute).
    let _storm = Bg::spawn("nice", &["-n", "19", storm.to_str().unwrap()]);
    // The ring is full when --max-events is reached: what is left is not wanted, and
    // is not "left unread" by a reader that was behind.
    let r = run(
        rtrace().args(["-a", "--max-events", "10", "-o", "/dev/null"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(!r.stderr.contains("left unread"), "{r}");
}

/// A low soft limit on open files is raised for rtrace up to the hard one, as perf
/// raises it (before: `too many open files (ulimit -n is 12)`); the command still gets
/// the user's limit.
#[test]
fn a_low_soft_fd_limit_is_raised_for_rtrace_alone() {
    if !bpf_ready("a_low_soft_fd_limit_is_raised_for_rtrace_alone") {
        return;
    }
    let bin = rtrace_tests::rtrace_bin();
    let r = run(
        std::process::Command::new("sh")
            .env("PERF_CONFIG", "/dev/null")
            .args([
                "-c",
                "ulimit -S -n 12; ulimit -H -n 4096; exec \"$0\" -e exit_group -- sh -c 'echo $(ulimit -S -n) $(ulimit -H -n)'",
            ])
            .arg(&bin),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(r.stdout.trim(), "12 4096", "{r}");
    assert!(r.stderr.contains("exit_group("), "{r}");
    // Raised and still short: the hard limit is what to raise.
    let r = run(
        std::process::Command::new("sh")
            .env("PERF_CONFIG", "/dev/null")
            .args(["-c", "ulimit -S -n 8; ulimit -H -n 16; exec \"$0\" -- true"])
            .arg(&bin),
        LIMIT,
    );
    assert_eq!(r.code(), Some(1), "{r}");
    assert!(
        r.stderr
            .contains("the hard limit, ulimit -Hn, is 16; rtrace raised its soft limit to it"),
        "{r}"
    );
}

/// The command's wait for rtrace's reader to be raised (it is raised once the event
/// loop starts, just after the command is let go), then both levels, as /proc says.
const NICE_OF_READER_AND_COMMAND: &str = "for i in $(seq 200); do r=$(awk '{print $19}' /proc/$PPID/stat); [ \"$r\" = \"$WANT\" ] && break; sleep 0.05; done; echo \"$r $(awk '{print $19}' /proc/$$/stat)\"";

#[test]
fn the_reader_is_raised_and_the_command_keeps_its_level() {
    if !bpf_ready("the_reader_is_raised_and_the_command_keeps_its_level") {
        return;
    }
    // Started at level 0: the reader (rtrace's main thread) runs ten levels up, the
    // command it traces where it was.
    let mut cmd = rtrace();
    cmd.env("WANT", "-10").args([
        "-e",
        "exit_group",
        "--",
        "sh",
        "-c",
        NICE_OF_READER_AND_COMMAND,
    ]);
    let r = run(&mut cmd, LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(r.stdout.trim(), "-10 0", "{r}");
    // Started niced, rtrace stays where it was put, and its command with it.
    let bin = rtrace_tests::rtrace_bin();
    let r = run(
        std::process::Command::new("nice")
            .env("PERF_CONFIG", "/dev/null")
            .env("WANT", "3")
            .args(["-n", "3"])
            .arg(&bin)
            .args([
                "-e",
                "exit_group",
                "--",
                "sh",
                "-c",
                NICE_OF_READER_AND_COMMAND,
            ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(r.stdout.trim(), "3 3", "{r}");
}
