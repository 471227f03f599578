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

fn build_sleeper(dir: &std::path::Path) -> std::path::PathBuf {
    let (r, bin) = compile_c(
        dir,
        "sleeper",
        r#"#include <time.h>
#include <unistd.h>
int main(void) {
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 20; i++) nanosleep(&ms, 0);
    for (int i = 0; i < 100; i++) getppid();
    return 0;
}
"#,
        &["-O2"],
    );
    assert_eq!(r.code(), Some(0), "{r}");
    bin
}

/// The rows of the section of `comm` in a JSON summary line of `text`.
fn json_rows(text: &str, comm: &str) -> Vec<serde_json::Value> {
    let summary: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v.get("summary").is_some())
        .unwrap_or_else(|| panic!("no JSON summary:\n{text}"));
    let section = summary["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["comm"] == comm || s["comm"].is_null())
        .unwrap_or_else(|| panic!("no section for {comm}: {summary}"))
        .clone();
    section["syscalls"].as_array().unwrap().clone()
}

/// Each row's histogram holds its calls; 20 sleeps of 1 ms are all at 512 µs or more
/// (a busy machine only makes them longer); 100 getppid are there.
fn check_hist_rows(rows: &[serde_json::Value], what: &str) {
    for row in rows {
        let hist = row["histogram"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: a row without its histogram: {row}"));
        let sum: u64 = hist.iter().map(|b| b["count"].as_u64().unwrap()).sum();
        assert_eq!(sum, row["calls"].as_u64().unwrap(), "{what}: {row}");
    }
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["syscall"] == name)
            .unwrap_or_else(|| panic!("{what}: no {name} row: {rows:?}"))
    };
    let sleeps = rows
        .iter()
        .find(|r| r["syscall"] == "clock_nanosleep" || r["syscall"] == "nanosleep")
        .unwrap_or_else(|| panic!("{what}: no sleep row: {rows:?}"));
    assert_eq!(sleeps["calls"], 20, "{what}: {sleeps}");
    for b in sleeps["histogram"].as_array().unwrap() {
        if b["count"].as_u64().unwrap() > 0 {
            assert!(
                b["min_ns"].as_u64().unwrap() >= 1 << 19,
                "{what}: a 1 ms sleep under 512 µs: {sleeps}"
            );
        }
    }
    assert_eq!(row("getppid")["calls"], 100, "{what}");
}

/// `--hist`: a log2 histogram of each syscall's durations, counted in the kernel per
/// thread and for all threads together, drawn under each row and given in the JSON
/// summary; each call falls in the bucket of the duration its trace line shows; a
/// replay counts the same from the records.
#[test]
fn hist_counts_every_call_in_its_bucket() {
    if !bpf_ready("hist_counts_every_call_in_its_bucket") {
        return;
    }
    let dir = scratch_dir("hist");
    let bin = build_sleeper(&dir);
    for mode in ["thread", "total"] {
        let out = dir.join(format!("{mode}.json"));
        let r = run(
            rtrace()
                .args(["--json", "-S", "--hist", "-o"])
                .arg(&out)
                .arg(format!("--summary-mode={mode}"))
                .arg("--")
                .arg(&bin),
            LIMIT,
        );
        assert_eq!(r.code(), Some(0), "{r}");
        let text = std::fs::read_to_string(&out).unwrap();
        let rows = json_rows(&text, "sleeper");
        check_hist_rows(&rows, mode);
        // The kernel's buckets are those of the lines' durations (ms with 6 decimals).
        for row in &rows {
            let name = &row["syscall"];
            let mut want: BTreeMap<u64, u64> = BTreeMap::new();
            for line in text
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|v| v["syscall"] == *name && v["comm"] == "sleeper")
            {
                let Some(ms) = line["duration"].as_f64() else {
                    continue;
                };
                let ns = (ms * 1e6).round() as u64;
                let min_ns = if ns == 0 {
                    0
                } else {
                    1u64 << (63 - ns.leading_zeros())
                };
                *want.entry(min_ns).or_default() += 1;
            }
            if name != "clock_nanosleep" && name != "nanosleep" && name != "getppid" {
                continue;
            }
            let got: BTreeMap<u64, u64> = row["histogram"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|b| b["count"].as_u64().unwrap() > 0)
                .map(|b| (b["min_ns"].as_u64().unwrap(), b["count"].as_u64().unwrap()))
                .collect();
            assert_eq!(got, want, "{mode}: {name}'s buckets against its lines'");
        }
    }

    // A thread that exits more than a second before the end has its rows (and their
    // histograms) moved out of the kernel's maps by a sweep first.
    let out = dir.join("swept.json");
    let r = run(
        rtrace()
            .args(["--json", "-s", "--hist", "-o"])
            .arg(&out)
            .args(["--", "sh", "-c"])
            .arg(format!("{}; sleep 2.5", bin.display())),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let text = std::fs::read_to_string(&out).unwrap();
    check_hist_rows(&json_rows(&text, "sleeper"), "swept");

    // The text: rows under the row, with µs and ms bounds.
    let r = run(rtrace().args(["-s", "--hist", "--"]).arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<&str> = r.stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| {
            l.trim_start().starts_with("clock_nanosleep ")
                || l.trim_start().starts_with("nanosleep ")
        })
        .unwrap_or_else(|| panic!("no sleep row{r}"));
    let mut sum = 0;
    for l in &lines[at + 1..] {
        let Some(rest) = l.trim_start().strip_prefix('[') else {
            break;
        };
        assert!(rest.contains("ms)") || rest.contains("s, ...)"), "{l}{r}");
        let count: u64 = l
            .split('|')
            .next()
            .unwrap()
            .split_whitespace()
            .last()
            .unwrap()
            .parse()
            .unwrap();
        sum += count;
    }
    assert_eq!(sum, 20, "the rows under the sleeps hold 20 calls{r}");

    // Replay: the same buckets, counted from the records.
    let data = dir.join("rtrace.data");
    let r = run(
        rtrace()
            .arg("record")
            .arg("-o")
            .arg(&data)
            .arg("--")
            .arg(&bin),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let r = run(
        rtrace()
            .arg("-i")
            .arg(&data)
            .args(["-s", "--hist", "--json"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    check_hist_rows(
        &json_rows(&format!("{}{}", r.stdout, r.stderr), "sleeper"),
        "replay",
    );
}
