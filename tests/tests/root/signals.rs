//! Signals sent to rtrace: relayed to the command it started (never to -p targets),
//! the session ends cleanly and soon, and a command never runs untraced because rtrace
//! was interrupted while starting.

use std::{
    process::Stdio,
    thread,
    time::{Duration, Instant},
};

use rtrace_tests::{
    Bg, Tracer, bpf_ready, process_running as running, rtrace, scratch_dir, trace_lines, wait_for,
    wait_output,
};

fn signal(pid: u32, sig: i32) {
    // SAFETY: plain kill(2).
    unsafe { libc::kill(pid as i32, sig) };
}

#[test]
fn a_stop_signal_to_rtrace_alone_reaches_its_command() {
    if !bpf_ready("a_stop_signal_to_rtrace_alone_reaches_its_command") {
        return;
    }
    for (sig, name, summary) in [
        (libc::SIGTERM, "SIGTERM", false),
        (libc::SIGINT, "SIGINT", false),
        (libc::SIGHUP, "SIGHUP", true),
    ] {
        let length = format!("31.{sig}");
        let mut args = vec!["--", "sleep", &length];
        if summary {
            args.insert(0, "-s");
        }
        // rtrace() starts it with each signal's default disposition, as a terminal
        // gives it: under `nohup` (SIGHUP ignored, inherited by rtrace and so by its
        // command) the relayed SIGHUP would rightly leave the command running.
        let mut cmd = rtrace();
        cmd.arg("-v").args(&args);
        let t = Tracer::start_cmd(cmd);
        thread::sleep(Duration::from_millis(200));
        let sent = Instant::now();
        signal(t.pid(), sig);
        let r = t.wait(Duration::from_secs(10));
        let took = sent.elapsed();
        assert_eq!(r.code(), Some(128 + sig), "{name}: the command's status{r}");
        assert!(
            !running(&["sleep", &length]),
            "{name}: the command was left running{r}"
        );
        // The grace a command gets is 2 s; one that obeys ends the session at once.
        assert!(took < Duration::from_secs(1), "{name}: took {took:?}{r}");
        if summary {
            assert!(r.stderr.contains("Summary of events"), "{name}{r}");
        } else {
            assert!(
                trace_lines(&r.stderr)
                    .iter()
                    .any(|l| l.contains("clock_nanosleep")),
                "{name}: the interrupted sleep is shown{r}"
            );
        }
    }
}

#[test]
fn p_targets_are_never_signalled() {
    if !bpf_ready("p_targets_are_never_signalled") {
        return;
    }
    let target = Bg::spawn("sleep", &["31.99"]);
    let t = Tracer::start(&["-p", &target.pid().to_string()]);
    signal(t.pid(), libc::SIGTERM);
    let r = t.wait(Duration::from_secs(10));
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(running(&["sleep", "31.99"]), "the -p target lives on{r}");
}

#[test]
fn sigint_during_start_up_never_lets_the_command_run_untraced() {
    if !bpf_ready("sigint_during_start_up_never_lets_the_command_run_untraced") {
        return;
    }
    let dir = scratch_dir("intstart");
    for delay_ms in [0u64, 5, 10, 20, 40, 60, 80, 120, 160] {
        let marker = dir.join(format!("ran-{delay_ms}"));
        let script = format!("touch {}", marker.display());
        let child = rtrace()
            .args(["--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        thread::sleep(Duration::from_millis(delay_ms));
        signal(child.id(), libc::SIGINT);
        let r = wait_output(child, script.clone(), Duration::from_secs(20));
        if marker.exists() {
            assert!(
                trace_lines(&r.stderr)
                    .iter()
                    .any(|l| l.contains(" touch/") || l.contains("execve")),
                "after {delay_ms} ms: the command ran but was not traced{r}"
            );
        } else {
            use std::os::unix::process::ExitStatusExt;
            assert!(
                r.code() == Some(130) || r.status.signal() == Some(libc::SIGINT),
                "after {delay_ms} ms: ended as SIGINT asks{r}"
            );
        }
        assert!(
            wait_for(Duration::from_secs(3), || !running(&[
                rtrace_tests::rtrace_bin().to_str().unwrap(),
                "--",
                "sh",
                "-c",
                &script
            ])),
            "after {delay_ms} ms: a held child was left{r}"
        );
    }
}
