//! What a user sees before any tracing starts (help, and each refusal with its exit
//! status), as snapshots: no root or BPF needed. A change to any of these shows as a
//! diff to review (`cargo insta review`, or the `.snap.new` file next to the snapshot).

use std::process::{Command, Stdio};

/// Runs rtrace as a user's shell would, without their perf config or colour settings,
/// and gives its status and both streams as one text.
fn rtrace(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .args(args)
        .env("PERF_CONFIG", "/dev/null")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .stdin(Stdio::null())
        .output()
        .expect("rtrace runs");
    format!(
        "status: {}\n--- stdout\n{}--- stderr\n{}",
        out.status
            .code()
            .map_or_else(|| "killed".to_string(), |c| c.to_string()),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn help() {
    insta::assert_snapshot!(rtrace(&["--help"]));
}

/// `-h` is the options; `--help` adds what rtrace is and its other forms, as ripgrep's do.
#[test]
fn short_help_is_the_options_and_long_help_says_more() {
    let short = rtrace(&["-h"]);
    let long = rtrace(&["--help"]);
    for text in [&short, &long] {
        assert!(
            text.contains("--filter-pids") && text.contains("Exit status:"),
            "{text}"
        );
    }
    assert!(
        long.contains("rtrace record") && long.contains("runs untraced"),
        "{long}"
    );
    assert!(long.len() > short.len());
}

/// Each mistake gets one `rtrace:` line and status 2, and nothing runs.
#[test]
fn refusals() {
    let cases: &[(&str, &[&str])] = &[
        ("misspelt_option", &["--filtr-pids", "1"]),
        (
            "perf_option_not_here_yet",
            &["--switch-on", "sched:sched_switch", "--", "true"],
        ),
        (
            "call_graph_rtrace_cannot_do",
            &["--call-graph", "dwarf", "--", "true"],
        ),
        ("page_fault_kind_unknown", &["-F", "some", "--", "true"]),
        ("unknown_syscall", &["-e", "nosuch", "--", "true"]),
        ("not_a_number", &["--duration", "abc", "--", "true"]),
        (
            "string_limit_out_of_range",
            &["--string-limit", "5000", "--", "true"],
        ),
        ("no_such_process", &["-p", "999999999"]),
        ("no_such_user", &["-u", "no-such-user-here"]),
        // strace's habits: rtrace's equivalent, in one line.
        ("strace_tt", &["-tt", "ls"]),
        ("strace_c", &["-c", "ls"]),
        ("strace_s_n", &["-s", "100", "ls"]),
        ("strace_y", &["-yy", "ls"]),
        ("strace_k", &["-k", "ls"]),
        (
            "strace_signal_qualifier",
            &["-e", "signal=SIGINT", "--", "true"],
        ),
        (
            "strace_unknown_class",
            &["-e", "trace=%nosuch", "--", "true"],
        ),
        ("syscall_typo", &["-e", "opnat", "--", "true"]),
        // --timeline: a file of its own, not mixed with a command's output, and not
        // for a record (its replay writes one).
        (
            "timeline_same_file_as_output",
            &["--timeline", "t.json", "-o", "t.json", "--", "true"],
        ),
        (
            "timeline_to_stdout_with_command",
            &["--timeline", "-", "--", "true"],
        ),
        ("timeline_empty_name", &["--timeline", "", "--", "true"]),
        (
            "timeline_when_recording",
            &["record", "--timeline", "t.json", "--", "true"],
        ),
        ("hist_without_summary", &["--hist", "--", "true"]),
    ];
    for (name, args) in cases {
        insta::assert_snapshot!(*name, rtrace(args), &args.join(" "));
    }
}

/// A flag given twice (a wrapper's and the user's) is taken, as perf takes it: the
/// options parse, and what follows is the usual check (here, a summary of a process
/// that does not exist).
#[test]
fn a_flag_given_twice_is_taken() {
    let once = rtrace(&["-s", "-p", "999999999"]);
    assert!(once.contains("status: 2"), "{once}");
    assert!(!once.contains("multiple times"), "{once}");
    assert_eq!(rtrace(&["-s", "-s", "-p", "999999999"]), once);
    assert_eq!(
        rtrace(&[
            "--max-events",
            "1",
            "--max-events",
            "2",
            "-s",
            "-p",
            "999999999"
        ]),
        once
    );
}

/// `rtrace --version | head -1`: the reader is gone before the features are written,
/// which is no reason to panic (seen: "failed printing to stdout: Broken pipe").
#[test]
fn version_into_a_closed_pipe_is_quiet() {
    let (read, write) = std::io::pipe().expect("a pipe");
    drop(read);
    let out = Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(write)
        .stderr(Stdio::piped())
        .output()
        .expect("rtrace runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// The first line says the version, the commit, the target and how it is linked.
#[test]
fn version_names_the_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .arg("--version")
        .output()
        .expect("rtrace runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().unwrap_or_default();
    let arch = std::env::consts::ARCH;
    assert!(
        first.starts_with(concat!("rtrace ", env!("CARGO_PKG_VERSION"), " ("))
            && first.contains(&format!("{arch}-unknown-linux-"))
            && (first.contains(", static;") || first.contains(", dynamic;")),
        "{first}"
    );
}
