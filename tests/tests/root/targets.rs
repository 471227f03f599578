//! Targets: -p, -t, -a, --filter-pids; what ends up in the pid maps and in the trace.

use std::{collections::BTreeSet, thread, time::Duration};

use rtrace_tests::{Tracer, bpf_ready, map_keys, parse_line, python, wait_for};

fn lines_of(stderr: &str) -> Vec<rtrace_tests::Line<'_>> {
    stderr.lines().filter_map(parse_line).collect()
}

/// Python that calls getppid() every 10 ms in `threads` threads (and the main one).
fn busy_python(threads: usize) -> String {
    format!(
        "import os, threading, time\n\
         def spin():\n    while True:\n        os.getppid(); time.sleep(0.01)\n\
         for _ in range({threads}):\n    threading.Thread(target=spin, daemon=True).start()\n\
         spin()\n"
    )
}

fn tasks_of(pid: u32) -> BTreeSet<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

#[test]
fn pid_traces_every_thread_of_the_process() {
    if !bpf_ready("pid_traces_every_thread_of_the_process") {
        return;
    }
    let py = python(&busy_python(3));
    assert!(wait_for(Duration::from_secs(10), || tasks_of(py.pid())
        .len()
        >= 4));
    let t = Tracer::start(&["-p", &py.pid().to_string()]);
    thread::sleep(Duration::from_millis(800));
    let r = t.stop();
    assert_eq!(r.code(), Some(0), "{r}");
    let threads = tasks_of(py.pid());
    let seen: BTreeSet<u32> = lines_of(&r.stderr)
        .iter()
        .filter(|l| l.name == "getppid")
        .map(|l| l.tid)
        .collect();
    assert_eq!(
        seen, threads,
        "getppid from each of the process's threads{r}"
    );
    assert!(
        lines_of(&r.stderr).iter().all(|l| threads.contains(&l.tid)),
        "{r}"
    );
}

#[test]
fn tid_traces_only_that_thread() {
    if !bpf_ready("tid_traces_only_that_thread") {
        return;
    }
    let py = python(&busy_python(2));
    assert!(wait_for(Duration::from_secs(10), || tasks_of(py.pid())
        .len()
        >= 3));
    let tid = *tasks_of(py.pid()).iter().find(|&&t| t != py.pid()).unwrap();
    let t = Tracer::start(&["-t", &tid.to_string()]);
    thread::sleep(Duration::from_millis(600));
    let r = t.stop();
    let lines = lines_of(&r.stderr);
    assert!(lines.iter().any(|l| l.name == "getppid"), "{r}");
    assert!(lines.iter().all(|l| l.tid == tid), "only thread {tid}{r}");
}

#[test]
fn pid_follows_the_children_it_forks() {
    if !bpf_ready("pid_follows_the_children_it_forks") {
        return;
    }
    let sh = rtrace_tests::Bg::spawn("sh", &["-c", "while :; do /bin/true; sleep 0.05; done"]);
    let t = Tracer::start(&["-p", &sh.pid().to_string()]);
    thread::sleep(Duration::from_millis(700));
    let r = t.stop();
    let lines = lines_of(&r.stderr);
    let children: BTreeSet<u32> = lines
        .iter()
        .filter(|l| l.tid != sh.pid())
        .map(|l| l.tid)
        .collect();
    assert!(children.len() >= 2, "children of -p are traced{r}");
    assert!(
        lines.iter().any(|l| l.comm == "true" && l.name == "execve"),
        "{r}"
    );
    assert!(
        lines.iter().any(|l| l.tid == sh.pid() && l.name == "wait4"),
        "{r}"
    );
}

/// perf's `-p PID -- cmd`: PID (and what it forks) is traced for as long as the command
/// runs, and the command itself is not traced; rtrace exits with its status.
#[test]
fn pid_with_a_command_traces_the_pid_while_the_command_runs() {
    if !bpf_ready("pid_with_a_command_traces_the_pid_while_the_command_runs") {
        return;
    }
    let sh = rtrace_tests::Bg::spawn(
        "sh",
        &[
            "-c",
            "while :; do cat /proc/self/stat >/dev/null; sleep 0.05; done",
        ],
    );
    let pid = sh.pid().to_string();
    let started = std::time::Instant::now();
    let r = rtrace_tests::run(
        rtrace_tests::rtrace().args([
            "-p",
            &pid,
            "-e",
            "openat,execve",
            "--",
            "sh",
            "-c",
            "cat /etc/hostname >/dev/null; sleep 1; exit 3",
        ]),
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    assert_eq!(r.code(), Some(3), "the command's status{r}");
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(20),
        "took {took:?}{r}"
    );
    let lines = lines_of(&r.stderr);
    let stats = lines
        .iter()
        .filter(|l| l.name == "openat" && l.args.contains("/proc/self/stat"))
        .count();
    // A cat about every 0.05 s for the second: many, even on a busy machine.
    assert!(stats >= 3, "{stats} openat of /proc/self/stat{r}");
    assert!(
        !r.stderr.contains("/etc/hostname"),
        "the command is not traced{r}"
    );
}

#[test]
fn zombies_and_dead_pids_are_not_in_the_maps() {
    if !bpf_ready("zombies_and_dead_pids_are_not_in_the_maps") {
        return;
    }
    let dir = rtrace_tests::scratch_dir("zombie");
    let out = dir.join("zombie");
    let py = python(&format!(
        "import os, time\n\
         pid = os.fork()\n\
         if pid == 0:\n    os._exit(0)\n\
         open({out:?}, 'w').write(str(pid))\n\
         while True:\n    os.getppid(); time.sleep(0.02)\n",
        out = out.to_str().unwrap()
    ));
    assert!(wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&out).is_ok_and(|s| !s.is_empty())
    }));
    let zombie: u32 = std::fs::read_to_string(&out).unwrap().parse().unwrap();
    assert!(wait_for(Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{zombie}/stat")).is_ok_and(|s| s.contains(") Z "))
    }));
    // Pids are below pid_max (which can be as high as 4194304): pid_max itself is
    // never a live task.
    let gone: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let live = py.pid();
    let t = Tracer::start(&[
        "-p",
        &format!("{zombie},{live}"),
        "--filter-pids",
        &format!("{zombie},{gone}"),
    ]);
    let to_trace = map_keys(t.pid(), "pids_to_trace").expect("pids_to_trace readable");
    let filtered = map_keys(t.pid(), "pids_filtered").expect("pids_filtered readable");
    let rtrace_pid = t.pid();
    thread::sleep(Duration::from_millis(300));
    let r = t.stop();
    assert_eq!(
        to_trace,
        vec![live],
        "the zombie was pruned from pids_to_trace{r}"
    );
    assert!(
        !filtered.contains(&zombie) && !filtered.contains(&gone),
        "{filtered:?}{r}"
    );
    assert!(
        filtered.contains(&rtrace_pid),
        "rtrace filters itself: {filtered:?}"
    );
    assert!(
        lines_of(&r.stderr)
            .iter()
            .any(|l| l.tid == live && l.name == "getppid"),
        "{r}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_strange_command_name_is_still_alive() {
    if !bpf_ready("a_strange_command_name_is_still_alive") {
        return;
    }
    let py = python(
        "import ctypes, os, time\n\
         ctypes.CDLL(None).prctl(15, b'a) Z\\n(b', 0, 0, 0)\n\
         while True:\n    os.getppid(); time.sleep(0.02)\n",
    );
    let pid = py.pid();
    assert!(wait_for(Duration::from_secs(10), || {
        std::fs::read(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with(b"a) Z\n(b"))
    }));
    let t = Tracer::start(&["-p", &pid.to_string()]);
    let keys = map_keys(t.pid(), "pids_to_trace").unwrap();
    thread::sleep(Duration::from_millis(300));
    let r = t.stop();
    assert_eq!(keys, vec![pid], "kept by the sweep{r}");
    // perf prints the name as it is (newline included), so look for the call itself.
    assert!(r.stderr.contains(&format!("(b/{pid} getppid()")), "{r}");
}

#[test]
fn system_wide_filter_pids_hides_a_task_and_rtrace_itself() {
    if !bpf_ready("system_wide_filter_pids_hides_a_task_and_rtrace_itself") {
        return;
    }
    let busy = python(&busy_python(0));
    let b = busy.pid().to_string();
    // Control: without the filter the busy task shows, so the check below can fail
    // (2 s: the interpreter's start-up takes a while in the emulated kernels).
    let t = Tracer::start(&["-a", "--", "sleep", "2"]);
    let rtrace_pid = t.pid();
    let r = t.wait(Duration::from_secs(20));
    let lines = lines_of(&r.stderr);
    assert!(
        lines.iter().any(|l| l.tid == busy.pid()),
        "control: busy task traced{r}"
    );
    assert!(
        lines.iter().all(|l| l.tid != rtrace_pid),
        "never rtrace's own lines{r}"
    );

    let t = Tracer::start(&["-a", "--filter-pids", &b, "--", "sleep", "0.5"]);
    let rtrace_pid = t.pid();
    let r = t.wait(Duration::from_secs(20));
    let lines = lines_of(&r.stderr);
    assert!(lines.iter().any(|l| l.comm == "sleep"), "{r}");
    assert!(
        lines.iter().all(|l| l.tid != busy.pid()),
        "filtered task hidden{r}"
    );
    assert!(
        lines.iter().all(|l| l.tid != rtrace_pid),
        "never rtrace's own lines{r}"
    );
}

#[test]
fn no_inherit_does_not_follow_children() {
    if !bpf_ready("no_inherit_does_not_follow_children") {
        return;
    }
    let r = rtrace_tests::run(
        rtrace_tests::rtrace().args(["--no-inherit", "--", "sh", "-c", "/bin/true; /bin/true"]),
        Duration::from_secs(60),
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines = lines_of(&r.stderr);
    let tids: BTreeSet<u32> = lines.iter().map(|l| l.tid).collect();
    assert_eq!(tids.len(), 1, "only the command itself{r}");
    assert!(lines.iter().any(|l| l.name == "wait4"), "{r}");
    assert!(lines.iter().all(|l| l.comm != "true"), "{r}");
}

#[test]
fn uid_traces_only_that_users_tasks() {
    if !bpf_ready("uid_traces_only_that_users_tasks") {
        return;
    }
    let busy = python(&busy_python(0)); // root's: must not show
    let t = Tracer::start(&[
        "-u",
        "65534",
        "--",
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "sh",
        "-c",
        "/bin/true; sleep 0.3",
    ]);
    let r = t.wait(Duration::from_secs(20));
    assert_eq!(r.code(), Some(0), "{r}");
    let lines = lines_of(&r.stderr);
    assert!(
        lines.iter().any(|l| l.comm == "true" && l.name == "execve"),
        "{r}"
    );
    assert!(lines.iter().any(|l| l.comm == "sleep"), "{r}");
    assert!(
        lines.iter().all(|l| l.tid != busy.pid()),
        "root's tasks are not traced{r}"
    );
    for l in &lines {
        let status = std::fs::read_to_string(format!("/proc/{}/status", l.tid)).unwrap_or_default();
        let uid_line = status
            .lines()
            .find(|s| s.starts_with("Uid:"))
            .unwrap_or("Uid:\t65534");
        assert!(
            uid_line.contains("65534"),
            "task {} is not the user's: {uid_line}{r}",
            l.tid
        );
    }
}

#[test]
fn cpu_list_keeps_only_the_calls_made_there() {
    if !bpf_ready("cpu_list_keeps_only_the_calls_made_there") {
        return;
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("SKIPPED cpu_list_keeps_only_the_calls_made_there: one CPU");
        return;
    }
    let r = rtrace_tests::run(
        rtrace_tests::rtrace().args([
            "-C",
            "1",
            "-e",
            "exit_group",
            "--",
            "sh",
            "-c",
            "taskset -c 0 sh -c 'exit 3'; taskset -c 1 sh -c 'exit 4'; true",
        ]),
        Duration::from_secs(60),
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let exits: Vec<String> = lines_of(&r.stderr)
        .iter()
        .filter(|l| l.name == "exit_group")
        .map(|l| l.args.to_string())
        .collect();
    assert!(
        exits.contains(&"error_code: 4".to_string()),
        "CPU 1's exit shows{r}"
    );
    assert!(
        !exits.contains(&"error_code: 3".to_string()),
        "CPU 0's does not{r}"
    );
}

/// A fake terminal host: python renamed `sshd` runs `sh -c 'rtrace -v -a …'`, so
/// rtrace's ancestors are sh, then "sshd". Returns what rtrace's pids_filtered held, the
/// pids of sh and of the fake sshd, and rtrace's own.
fn filtered_under_fake_sshd(extra: &str) -> (Vec<u32>, u32, u32, u32) {
    let dir = rtrace_tests::scratch_dir("fakesshd");
    let pids = dir.join("pids");
    let go = dir.join("go");
    let rtrace = rtrace_tests::rtrace_bin();
    let host = python(&format!(
        "import ctypes, subprocess, os\n\
         ctypes.CDLL(None).prctl(15, b'sshd', 0, 0, 0)\n\
         sh = subprocess.Popen(['sh', '-c', 'echo $$ > {pids}; exec 2>/dev/null; {rtrace} -v -a {extra} -e getppid -- sh -c \"while [ ! -e {go} ]; do sleep 0.05; done\"; true'])\n\
         sh.wait()\n",
        pids = pids.display(),
        go = go.display(),
        rtrace = rtrace.display(),
    ));
    assert!(wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&pids).is_ok_and(|s| s.ends_with('\n'))
    }));
    let sh: u32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // rtrace: the child of sh running rtrace's binary, once its map holds itself.
    let mut found = None;
    assert!(wait_for(Duration::from_secs(20), || {
        found = rtrace_tests::children_of(sh)
            .into_iter()
            .find(|&c| map_keys(c, "pids_filtered").is_some_and(|k| k.contains(&c)));
        found.is_some()
    }));
    let me = found.unwrap();
    // The sweep runs after the writes; read once tracing has started: the held
    // command's own entry (left out until its exec) is gone once it has exec'd, which
    // in an emulated kernel took longer than a fixed 300 ms.
    thread::sleep(Duration::from_millis(300));
    let held = rtrace_tests::children_of(me);
    assert!(
        wait_for(Duration::from_secs(20), || map_keys(me, "pids_filtered")
            .is_some_and(|k| !k.iter().any(|p| held.contains(p)))),
        "the held command {held:?} never exec'd"
    );
    let filtered = map_keys(me, "pids_filtered").unwrap();
    std::fs::write(&go, "").unwrap();
    // rtrace ends with its command, which must see `go` before the directory goes.
    assert!(
        wait_for(Duration::from_secs(20), || !rtrace_tests::task_alive(me)),
        "rtrace {me} ended"
    );
    let fake = host.pid();
    drop(host);
    (filtered, sh, fake, me)
}

#[test]
fn system_wide_leaves_out_the_terminal_host_only_as_perf_does() {
    if !bpf_ready("system_wide_leaves_out_the_terminal_host_only_as_perf_does") {
        return;
    }
    let (filtered, sh, fake_sshd, me) = filtered_under_fake_sshd("");
    assert!(filtered.contains(&me), "{filtered:?}");
    assert!(filtered.contains(&fake_sshd), "{filtered:?}");
    assert!(
        !filtered.contains(&sh),
        "the user's shell is traced: {filtered:?} (sh {sh})"
    );

    // With --filter-pids, perf leaves out only what the user named, and itself.
    let other = rtrace_tests::Bg::spawn("sleep", &["30"]);
    let (filtered, _, fake_sshd, me) =
        filtered_under_fake_sshd(&format!("--filter-pids {}", other.pid()));
    assert_eq!(
        filtered,
        {
            let mut v = vec![me, other.pid()];
            v.sort_unstable();
            v
        },
        "fake sshd {fake_sshd}"
    );
}
