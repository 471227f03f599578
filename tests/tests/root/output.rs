//! The trace's output failing: a full disk, a full device, a reader that went away.
//! Each is seen, said once (or, for a broken pipe, ended as SIGPIPE would), tracing
//! stops, and the command rtrace started is not left running.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use rtrace_tests::{bpf_ready, rtrace, run, scratch_dir};

/// Many one-byte syscalls: far more trace than fits the places below.
const STORM: [&str; 5] = [
    "dd",
    "if=/dev/zero",
    "of=/dev/null",
    "bs=1",
    "count=3000000",
];

fn storm_running() -> bool {
    rtrace_tests::process_running(&STORM)
}

#[test]
fn a_full_disk_stops_the_trace_with_one_line() {
    if !bpf_ready("a_full_disk_stops_the_trace_with_one_line") {
        return;
    }
    let dir = scratch_dir("fulldisk");
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success(), "mount a 64 KiB tmpfs");
    let r = run(
        rtrace()
            .arg("-o")
            .arg(dir.join("trace"))
            .arg("--")
            .args(STORM),
        Duration::from_secs(60),
    );
    let _ = Command::new("umount").arg(&dir).status();
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: writing the trace: No space left on device (os error 28)",
        "{r}"
    );
    assert!(!storm_running(), "the command was stopped{r}");

    // The same for stderr on a full device, where the message cannot be written.
    let mut child = rtrace()
        .arg("--")
        .args(STORM)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create("/dev/full").unwrap())
        .spawn()
        .unwrap();
    let status = wait_limited(&mut child, Duration::from_secs(60));
    assert_eq!(status.code(), Some(1), "2>/dev/full");
    assert!(!storm_running(), "2>/dev/full: the command was stopped");
}

fn wait_limited(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("rtrace did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_broken_pipe_ends_rtrace_as_sigpipe_would() {
    if !bpf_ready("a_broken_pipe_ends_rtrace_as_sigpipe_would") {
        return;
    }
    // As `rtrace -- cmd 2>&1 | head -1`.
    let mut child = rtrace()
        .arg("--")
        .args(STORM)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("execve"), "{first}");
    // The reader is gone now.
    let status = wait_limited(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(141), "as perf: 128 + SIGPIPE");
    assert!(!storm_running(), "the command was stopped");
}
