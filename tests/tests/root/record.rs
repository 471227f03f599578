//! `rtrace record` and `rtrace -i`: the records written to a file and printed later,
//! with the replay's own output options and filters, without BPF or root.

use std::{process::Command, time::Duration};

use rtrace_tests::{bpf_ready, parse_line, rtrace, rtrace_bin, run, scratch_dir};

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn a_record_replays_as_the_live_trace() {
    if !bpf_ready("a_record_replays_as_the_live_trace") {
        return;
    }
    let dir = scratch_dir("record");
    let data = dir.join("trace.data");
    let data_s = data.to_str().unwrap();
    let r = run(
        rtrace().args([
            "record",
            "-o",
            data_s,
            "-e",
            "openat,close,exit_group,sched:sched_process_exit",
            "--",
            "sh",
            "-c",
            "cat /etc/hostname >/dev/null; exit 4",
        ]),
        LIMIT,
    );
    // The command's status, and one line saying where the record is.
    assert_eq!(r.code(), Some(4), "{r}");
    assert_eq!(
        r.stderr.trim_end().lines().collect::<Vec<_>>().len(),
        1,
        "{r}"
    );
    assert!(
        r.stderr.starts_with(&format!("rtrace: wrote {data_s} (")),
        "{r}"
    );

    // Replayed by an unprivileged user: no BPF, no root.
    let replay = |args: &[&str]| {
        run(
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(rtrace_bin())
                .args(["-i", data_s])
                .args(args)
                .env("PERF_CONFIG", "/dev/null"),
            LIMIT,
        )
    };
    std::fs::set_permissions(&*dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&data, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let all = replay(&[]);
    assert_eq!(all.code(), Some(0), "{all}");
    let lines: Vec<_> = all.stderr.lines().filter_map(parse_line).collect();
    let cat_open = lines
        .iter()
        .find(|l| l.comm == "cat" && l.name == "openat" && l.args.contains("\"/etc/hostname\""))
        .unwrap_or_else(|| panic!("cat's openat of /etc/hostname{all}"));
    let (cat, fd) = (cat_open.tid, cat_open.ret.to_string());
    // The fd paths are followed as live: cat's close names the file.
    assert!(
        lines.iter().any(|l| l.tid == cat
            && l.name == "close"
            && l.args.contains(&format!("{fd}</etc/hostname>"))),
        "{all}"
    );
    assert_eq!(
        all.stderr
            .lines()
            .filter(|l| l.contains(" sched:sched_process_exit("))
            .count(),
        2,
        "sh and cat exit{all}"
    );

    // The replay's own filters and outputs.
    let only = replay(&["-e", "close", "-p", &cat.to_string()]);
    let shown: Vec<_> = only.stderr.lines().filter_map(parse_line).collect();
    assert!(!shown.is_empty(), "{only}");
    assert!(
        shown.iter().all(|l| l.name == "close" && l.tid == cat),
        "{only}"
    );
    let hidden = replay(&["--filter-pids", &cat.to_string(), "-e", "openat"]);
    assert!(
        hidden
            .stderr
            .lines()
            .filter_map(parse_line)
            .all(|l| l.tid != cat),
        "{hidden}"
    );
    let summary = replay(&["-s"]);
    assert!(
        summary.stderr.contains(&format!(" cat ({cat}), ")),
        "{summary}"
    );
    assert!(
        summary
            .stderr
            .lines()
            .any(|l| l.trim_start().starts_with("openat ")),
        "{summary}"
    );
    let json = replay(&["--json", "-e", "openat"]);
    for line in json.stderr.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["syscall"], "openat", "{json}");
    }

    // Something else is refused in one line.
    let r = run(rtrace().args(["-i", "/etc/hostname"]), LIMIT);
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: /etc/hostname: not an rtrace record file (it does not start with \"rtrace-record 1\")",
        "{r}"
    );
    let r = run(rtrace().args(["record", "-s", "--", "true"]), LIMIT);
    assert_eq!(r.code(), Some(2), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: rtrace record: -s is for the replay: rtrace -i FILE -s",
        "{r}"
    );
}

/// The offset where the records of a record file begin: after the first line, the
/// header's length and the header.
fn records_start(bytes: &[u8]) -> usize {
    let line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let len = u32::from_le_bytes(bytes[line..line + 4].try_into().unwrap()) as usize;
    line + 4 + len
}

/// The bytes of `rtrace record -- true`, made in `dir`.
fn recorded_true(dir: &std::path::Path) -> Vec<u8> {
    let data = dir.join("good.data");
    let r = run(
        rtrace().args(["record", "-o", data.to_str().unwrap(), "--", "true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    std::fs::read(&data).unwrap()
}

/// Every syscall record's comm is the name and zeros after it, also once the ring
/// has wrapped: on 6.1 the kernel's helper copies the name only up to its NUL, so
/// bytes left from an earlier lap's record would follow it, and two records of one
/// thread would carry different names (the timeline named such a thread twice).
#[test]
fn a_records_comm_is_zeros_after_the_name() {
    if !bpf_ready("a_records_comm_is_zeros_after_the_name") {
        return;
    }
    let dir = scratch_dir("record-comm");
    let data = dir.join("comm.data");
    // A two-page ring, lapped many times by paths, buffers and names of every length.
    let r = run(
        rtrace().args([
            "record",
            "-m",
            "2",
            "-o",
            data.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 150 ]; do cat /etc/hostname /etc/passwd; i=$((i+1)); done >/dev/null",
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let bytes = std::fs::read(&data).unwrap();
    let mut at = records_start(&bytes);
    let (mut syscalls, mut bad) = (0, Vec::new());
    while at + 4 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let item = &bytes[at + 4..at + 4 + len];
        at += 4 + len;
        // A syscall record (kind 1 in its first two bytes) holds its comm at 88..104.
        if len < 112 || u16::from_le_bytes([item[0], item[1]]) != 1 {
            continue;
        }
        syscalls += 1;
        let comm = &item[88..104];
        let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
        if comm[end..].iter().any(|&b| b != 0) {
            bad.push(comm.to_vec());
        }
    }
    assert!(syscalls > 2000, "{syscalls} syscall records{r}");
    assert!(
        bad.is_empty(),
        "{} of {syscalls} records carry bytes after the name, e.g. {:?}",
        bad.len(),
        bad.first()
    );
}

/// `rtrace -i FILE` under a 1 GiB address-space limit, as a small machine has.
fn replay_bounded(file: &std::path::Path) -> rtrace_tests::Run {
    run(
        Command::new("sh")
            .args(["-c", "ulimit -v 1048576; exec \"$0\" -i \"$1\""])
            .arg(rtrace_bin())
            .arg(file)
            .env("PERF_CONFIG", "/dev/null"),
        LIMIT,
    )
}

#[test]
fn damaged_record_files_are_refused_in_one_line() {
    if !bpf_ready("damaged_record_files_are_refused_in_one_line") {
        return;
    }
    let dir = scratch_dir("damaged");
    let good = recorded_true(&dir);
    let start = records_start(&good);
    let first_len = u32::from_le_bytes(good[start..start + 4].try_into().unwrap()) as usize;
    let second = start + 4 + first_len;

    // A first record claiming 4 GiB: before, 4.2 GB of RSS and exit 0 (SIGABRT under
    // this limit).
    let mut huge = good.clone();
    huge[start..start + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let f = dir.join("huge.data");
    std::fs::write(&f, &huge).unwrap();
    let r = replay_bounded(&f);
    assert_eq!(r.code(), Some(1), "{r}");
    assert_eq!(r.stderr.lines().count(), 1, "{r}");
    assert!(
        r.stderr
            .contains("is damaged after 0 records: record 1 claims 4294967295 bytes"),
        "{r}"
    );

    // Cut in the middle of the second record: before, exit 0 and nothing said. The
    // first record is shown, then the line.
    let f = dir.join("cut.data");
    std::fs::write(&f, &good[..second + 6]).unwrap();
    let r = replay_bounded(&f);
    assert_eq!(r.code(), Some(1), "{r}");
    let last = r.stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("rtrace: ") && last.contains("is cut short after 1 records"),
        "{r}"
    );

    // Cut at a record boundary, as a killed recorder leaves it: read as it is.
    let f = dir.join("boundary.data");
    std::fs::write(&f, &good[..second]).unwrap();
    let r = replay_bounded(&f);
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(!r.stderr.contains("rtrace: "), "{r}");

    // A header cut short: before, only "failed to fill whole buffer".
    let f = dir.join("header.data");
    std::fs::write(&f, &good[..start - 100]).unwrap();
    let r = replay_bounded(&f);
    assert_eq!(r.code(), Some(1), "{r}");
    assert!(
        r.stderr
            .contains("is cut short after 0 records (inside its header"),
        "{r}"
    );
}

#[test]
fn a_replay_and_a_blocked_start_up_end_on_a_signal() {
    if !bpf_ready("a_replay_and_a_blocked_start_up_end_on_a_signal") {
        return;
    }
    use std::{os::unix::process::ExitStatusExt as _, process::Stdio};
    let dir = scratch_dir("replay-signal");
    let good = recorded_true(&dir);
    let fifo = dir.join("fifo");
    rtrace_tests::mkfifo(&fifo);

    // A replay reading a pipe that never ends: Ctrl-C ends it.
    let child = rtrace()
        .arg("-i")
        .arg(&fifo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    std::io::Write::write_all(&mut writer, &good[..good.len() / 2]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: plain kill(2) of our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let r = rtrace_tests::wait_output(child, "rtrace -i FIFO".into(), LIMIT);
    drop(writer);
    assert_eq!(r.status.signal(), Some(libc::SIGINT), "{r}");

    // rtrace blocked opening -o on a FIFO no one reads: the first SIGINT waits for the
    // step to end, a second one ends rtrace.
    let child = rtrace()
        .args(["-o", fifo.to_str().unwrap(), "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..2 {
        // SAFETY: plain kill(2) of our child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = rtrace_tests::wait_output(child, "rtrace -o FIFO -- true".into(), LIMIT);
    assert_eq!(r.status.signal(), Some(libc::SIGINT), "{r}");
}

/// A replay has no kernel to leave out the entries of blocking calls: it shows them
/// unfinished only where the live trace does, and `--json` stays JSON throughout.
#[test]
fn a_replay_shows_unfinished_calls_only_where_the_live_trace_does() {
    if !bpf_ready("a_replay_shows_unfinished_calls_only_where_the_live_trace_does") {
        return;
    }
    let dir = scratch_dir("record-unfinished");
    let data = dir.join("blocked.data");
    // sh's vfork blocks while its child runs: its entry comes before the child's lines.
    // (arm64 has no vfork: libc's is clone(CLONE_VM | CLONE_VFORK), as unfinished.)
    let vfork = if cfg!(target_arch = "aarch64") {
        "clone"
    } else {
        "vfork"
    };
    let r = run(
        rtrace()
            .args(["record", "-o", data.to_str().unwrap(), "--"])
            .args([
                "sh",
                "-c",
                "sleep 0.1 & cat /nonexistent-rtrace 2>/dev/null; wait",
            ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let replay = |args: &[&str]| {
        let r = run(rtrace().arg("-i").arg(&data).args(args), LIMIT);
        assert_eq!(r.code(), Some(0), "{r}");
        r
    };
    let unfinished = |l: &&str| l.ends_with(" ...") || l.contains("[continued]");
    let all = replay(&[]);
    assert!(
        all.stderr
            .lines()
            .any(|l| l.contains(&format!(" {vfork}(")) && l.ends_with(" ...")),
        "the text replay shows the blocked vfork unfinished{all}"
    );

    let json = replay(&["--json"]);
    let mut failed = 0;
    for line in json.stderr.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}{json}"));
        if v["syscall"] == vfork {
            assert!(v["ret"].is_i64(), "vfork's object is whole: {line}");
        }
        failed += usize::from(!v["errno"].is_null());
    }
    assert!(failed > 0, "{json}");

    // --failure: the failed calls, each on one whole line, as live (the kernel sends
    // no entries ahead there).
    let failures = replay(&["--failure"]);
    let lines: Vec<&str> = failures.stderr.lines().collect();
    assert!(!lines.iter().any(unfinished), "{failures}");
    assert!(
        lines
            .iter()
            .all(|l| parse_line(l).is_some_and(|p| p.ret.starts_with("-1 "))),
        "{failures}"
    );
    assert_eq!(
        lines.len(),
        failed,
        "one line per failed call{failures}{json}"
    );
}

/// A record of events alone replays as the live trace shows them: no duration column,
/// which perf keeps for event lines among syscalls (before, the replay added it); the
/// syscall entry events decoded as live.
#[test]
fn a_record_of_events_alone_replays_as_the_live_trace() {
    if !bpf_ready("a_record_of_events_alone_replays_as_the_live_trace") {
        return;
    }
    let dir = scratch_dir("record-events");
    let data = dir.join("events.data");
    let events = "sched:sched_process_exit,syscalls:sys_enter_openat";
    let r = run(
        rtrace()
            .args(["record", "-o", data.to_str().unwrap(), "-e", events, "--"])
            .args(["cat", "/etc/hostname"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let live = run(
        rtrace().args(["-e", events, "--", "cat", "/etc/hostname"]),
        LIMIT,
    );
    let replay = run(rtrace().arg("-i").arg(&data), LIMIT);
    assert_eq!(replay.code(), Some(0), "{replay}");
    // Times and pids differ between the runs; the shape does not.
    let shape = |l: &str| {
        let rest = l.trim_start().split_once(' ').map_or("", |(_, r)| r);
        let (task, call) = rest.split_once(' ').unwrap_or(("", rest));
        let comm = task.split('/').next().unwrap_or("");
        let name = call.split('(').next().unwrap_or("").to_string();
        (
            comm.to_string(),
            name,
            call.contains("filename: \"/etc/hostname\""),
        )
    };
    let shapes = |s: &str| s.lines().map(shape).collect::<Vec<_>>();
    assert_eq!(
        shapes(&replay.stderr),
        shapes(&live.stderr),
        "{live}{replay}"
    );
    assert!(
        replay.stderr.lines().all(|l| !l.contains("(         ): ")),
        "{replay}"
    );
    assert!(
        shapes(&replay.stderr)
            .iter()
            .any(|(_, _, hostname)| *hostname),
        "{replay}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
