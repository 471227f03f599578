//! Summaries (-s, -S), counted in the kernel: perf's own checks, and strace -c's counts.

use std::{collections::BTreeMap, process::Command, thread, time::Duration};

use rtrace_tests::{Tracer, bpf_ready, compile_c, one_layout, rtrace, run, scratch_dir};

const LIMIT: Duration = Duration::from_secs(60);

/// perf's test: `^\s*(open|read|close).*[0-9]+%$`
fn perf_summary_rows(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            ["open", "read", "close"].iter().any(|p| t.starts_with(p))
                && l.strip_suffix('%')
                    .is_some_and(|s| s.ends_with(|c: char| c.is_ascii_digit()))
        })
        .count()
}

#[test]
fn perfs_own_summary_checks() {
    if !bpf_ready("perfs_own_summary_checks") {
        return;
    }
    for args in [
        &["-s"][..],
        &["-S"],
        &["-s", "--summary-mode=thread"],
        &["-S", "--summary-mode=total"],
        &["-as", "--summary-mode=thread", "--no-bpf-summary"],
    ] {
        let r = run(rtrace().args(args).args(["--", "cat", "/dev/null"]), LIMIT);
        assert_eq!(r.code(), Some(0), "{r}");
        assert!(
            perf_summary_rows(&r.stderr) >= 3,
            "at least 3 open/read/close rows{r}"
        );
        assert!(r.stderr.contains("\n Summary of events:\n"), "{r}");
        let traced = !r.trace_lines().is_empty();
        assert_eq!(
            traced,
            args[0] == "-S",
            "-S also prints the trace, -s only the summary{r}"
        );
    }
}

fn build_forker(dir: &std::path::Path) -> std::path::PathBuf {
    let (r, bin) = compile_c(
        dir,
        "forker",
        r#"#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    for (int i = 0; i < 4; i++) {
        if (fork() == 0) {
            for (int k = 0; k < 50; k++) getppid();
            open("/nonexistent/rtrace", O_RDONLY);
            _exit(0);
        }
    }
    while (wait(0) > 0) {}
    return 0;
}
"#,
        &["-O2"],
    );
    assert_eq!(r.code(), Some(0), "{r}");
    bin
}

/// syscall -> (calls, errors) from `strace -c` output.
fn strace_counts(text: &str) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 5
            || f[0].starts_with('%')
            || f[0].starts_with('-')
            || f.last() == Some(&"total")
        {
            continue;
        }
        let Ok(calls) = f[3].parse::<u64>() else {
            continue;
        };
        let errors = if f.len() == 6 {
            f[4].parse().unwrap_or(0)
        } else {
            0
        };
        out.insert(f.last().unwrap().to_string(), (calls, errors));
    }
    out
}

/// syscall -> (calls, errors) summed over the sections of rtrace's summary.
fn rtrace_counts(text: &str) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 8 && f[7].ends_with('%') && f[1].parse::<u64>().is_ok() {
            let e = out.entry(f[0].to_string()).or_default();
            e.0 += f[1].parse::<u64>().unwrap();
            e.1 += f[2].parse::<u64>().unwrap();
        }
    }
    out
}

/// A fork that a signal (an earlier child's SIGCHLD) interrupts fails with
/// ERESTARTNOINTR and is made again by the kernel: both tracers count it, but how many
/// there are depends on timing (strace's own slowness makes them likelier). The forks
/// that succeeded are compared.
fn restarts_aside(mut counts: BTreeMap<String, (u64, u64)>) -> BTreeMap<String, (u64, u64)> {
    if let Some((calls, errors)) = counts.get_mut("clone") {
        *calls -= *errors;
        *errors = 0;
    }
    counts
}

#[test]
fn counts_equal_strace_c_for_a_forking_program() {
    if !bpf_ready("counts_equal_strace_c_for_a_forking_program") {
        return;
    }
    let dir = scratch_dir("sum");
    let forker = build_forker(&dir);
    let s = run(
        one_layout(&mut Command::new("strace"))
            .args(["-c", "-f", "-qq"])
            .arg(&forker),
        LIMIT,
    );
    assert_eq!(s.code(), Some(0), "{s}");
    let want = strace_counts(&s.stderr);
    assert_eq!(want.get("getppid"), Some(&(200, 0)), "{s}");
    for mode in ["thread", "total"] {
        let r = run(
            one_layout(&mut rtrace())
                .args(["-s", &format!("--summary-mode={mode}"), "--"])
                .arg(&forker),
            LIMIT,
        );
        assert_eq!(r.code(), Some(0), "{r}");
        assert_eq!(
            restarts_aside(rtrace_counts(&r.stderr)),
            restarts_aside(want.clone()),
            "calls and errors as strace -c -f counts them ({mode}){r}{s}"
        );
        if mode == "thread" {
            let sections = r.stderr.lines().filter(|l| l.contains(" events, ")).count();
            assert_eq!(sections, 5, "the parent and its four children{r}");
            let per_child = r
                .stderr
                .lines()
                .filter(|l| l.trim_start().starts_with("getppid "))
                .count();
            assert_eq!(per_child, 4, "{r}");
        } else {
            assert!(r.stderr.contains("\n total, "), "{r}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errno_summary_names_the_errors() {
    if !bpf_ready("errno_summary_names_the_errors") {
        return;
    }
    let r = run(
        rtrace().args(["--errno-summary", "--", "cat", "/nonexistent/rtrace"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(1), "cat's own status{r}");
    assert!(
        r.trace_lines().is_empty(),
        "--errno-summary alone implies -s{r}"
    );
    let lines: Vec<&str> = r.stderr.lines().collect();
    let openat = lines
        .iter()
        .position(|l| l.trim_start().starts_with("openat "))
        .expect("an openat row");
    let errnos: Vec<&&str> = lines[openat + 1..]
        .iter()
        .take_while(|l| l.starts_with("\t\t\t\t"))
        .collect();
    assert!(
        errnos.iter().any(|l| l.trim().starts_with("ENOENT: ")),
        "{r}"
    );
}

#[test]
fn max_summary_caps_the_rows() {
    if !bpf_ready("max_summary_caps_the_rows") {
        return;
    }
    let r = run(
        rtrace().args(["-s", "--max-summary", "2", "--", "cat", "/dev/null"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let rows = rtrace_counts(&r.stderr);
    assert_eq!(rows.len(), 2, "{r}");
}

#[test]
fn sigint_prints_the_summary() {
    if !bpf_ready("sigint_prints_the_summary") {
        return;
    }
    let t = Tracer::start(&["-s", "--", "sleep", "29.75"]);
    thread::sleep(Duration::from_millis(200));
    let r = t.stop();
    let _ = Command::new("pkill").args(["-f", "sleep 29.75"]).status();
    assert_eq!(
        r.code(),
        Some(128 + 2),
        "stopped by SIGINT while the command ran{r}"
    );
    assert!(r.stderr.contains("\n Summary of events:\n"), "{r}");
    assert!(r.stderr.contains(" sleep ("), "{r}");
    assert!(
        r.stderr
            .lines()
            .any(|l| l.trim_start().starts_with("execve ")),
        "{r}"
    );
}

/// With --json every line is JSON, the summary too (one `{"summary": […]}` object), and
/// a failed call says `"ret": -1` with its errno by name and number.
#[test]
fn json_mode_prints_only_json_with_the_summary() {
    if !bpf_ready("json_mode_prints_only_json_with_the_summary") {
        return;
    }
    let dir = scratch_dir("json");
    let out = dir.join("trace.json");
    let r = run(
        rtrace()
            .args(["--json", "-S", "--errno-summary", "-o"])
            .arg(&out)
            .args(["--", "cat", "/nonexistent/rtrace-json"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(1), "{r}");
    let text = std::fs::read_to_string(&out).unwrap();
    let values: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let failed = values
        .iter()
        .find(|v| {
            v["syscall"] == "openat" && v["args"]["filename"]["str"] == "/nonexistent/rtrace-json"
        })
        .unwrap_or_else(|| panic!("no openat of the missing file:\n{text}"));
    assert_eq!(failed["ret"], -1, "{failed}");
    assert_eq!(failed["errno"]["name"], "ENOENT", "{failed}");
    assert_eq!(failed["errno"]["num"], libc::ENOENT, "{failed}");
    let summaries: Vec<&serde_json::Value> = values
        .iter()
        .filter(|v| v.get("summary").is_some())
        .collect();
    assert_eq!(summaries.len(), 1, "one summary object:\n{text}");
    let cat = summaries[0]["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["comm"] == "cat")
        .unwrap_or_else(|| panic!("a section for cat: {}", summaries[0]));
    let openat = cat["syscalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["syscall"] == "openat")
        .unwrap();
    assert!(openat["errors"].as_u64().unwrap() >= 1, "{openat}");
    assert!(
        openat["errnos"]["ENOENT"].as_u64().unwrap() >= 1,
        "{openat}"
    );
    // The summary counts the same calls the lines show.
    let lines = values
        .iter()
        .filter(|v| v["syscall"] == "openat" && v["tid"] == cat["tid"])
        .count() as u64;
    assert_eq!(openat["calls"].as_u64().unwrap(), lines, "{openat}");
}

/// A summary whose maps fill up says how many calls it is missing and which variable
/// makes room.
#[test]
fn a_full_summary_map_names_its_variable() {
    if !bpf_ready("a_full_summary_map_names_its_variable") {
        return;
    }
    let sh = ["--", "sh", "-c", "/bin/true; /bin/true"];
    let r = run(
        rtrace()
            .env("RTRACE_SUMMARY_ENTRIES", "5")
            .arg("-s")
            .args(sh),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("missing from the summary"))
        .unwrap_or_else(|| panic!("no missing-calls line{r}"));
    assert!(
        line.starts_with("rtrace: ")
            && line.ends_with(
                "syscalls are missing from the summary: its maps were full (they hold 5 thread and syscall pairs; raise RTRACE_SUMMARY_ENTRIES)"
            ),
        "{line}"
    );
    let r = run(rtrace().arg("-s").args(sh), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(!r.stderr.contains("missing from the summary"), "{r}");
}

/// --time-percent: strace -c's `% time` after perf's columns (perf's rows still end in
/// `%` without it); each section's shares add up to 100.
#[test]
fn time_percent_is_each_rows_share() {
    if !bpf_ready("time_percent_is_each_rows_share") {
        return;
    }
    let r = run(
        rtrace().args(["-s", "--time-percent", "--", "cat", "/dev/null"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(r.stderr.contains("stddev   % time\n"), "{r}");
    let shares: Vec<f64> = r
        .stderr
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 9 && f[7].ends_with('%')).then(|| f[8].parse().unwrap())
        })
        .collect();
    assert!(shares.len() >= 3, "{r}");
    let sum: f64 = shares.iter().sum();
    assert!((sum - 100.0).abs() < 0.1 * shares.len() as f64, "{sum}{r}");
    // Without it, perf's table.
    let r = run(rtrace().args(["-s", "--", "cat", "/dev/null"]), LIMIT);
    assert!(!r.stderr.contains("% time"), "{r}");
    assert!(perf_summary_rows(&r.stderr) >= 3, "{r}");
}
