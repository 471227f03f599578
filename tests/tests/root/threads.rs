//! A process is one target from its first thread to its last, whichever thread that is:
//! the leader may exit first (`pthread_exit`), or be replaced by a thread that execs.
//! These paths differ between kernels (`group_dead` in `sched_process_exit` exists only
//! on new ones), so each test also runs with `RTRACE_GROUP_EXIT=live`, the path the
//! kernels without that field take.

use std::{path::PathBuf, time::Duration};

use rtrace_tests::{
    Bg, Run, Scratch, Tracer, bpf_ready, compile_c, parse_line, rtrace, run, scratch_dir,
};

/// The main thread starts a worker, waits until it runs, then `pthread_exit`s; the
/// worker sleeps 0.2 s (the leader is long gone) and calls getppid 50 times.
const LEADER_EXIT: &str = r#"
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static volatile int started;
static void *worker(void *arg) {
    struct timespec ts = {0, 200000000};
    started = 1;
    nanosleep(&ts, 0);
    for (int i = 0; i < 50; i++) getppid();
    return 0;
}
int main(void) {
    pthread_t t;
    struct timespec ts = {0, 1000000};
    pthread_create(&t, 0, worker, 0);
    while (!started) nanosleep(&ts, 0);
    pthread_exit(0);
}
"#;

/// Without arguments: a worker thread (not the leader) execs this program again with
/// the argument `child`, which calls getppid 20 times and exits.
const THREAD_EXEC: &str = r#"
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static char *self;
static void *worker(void *arg) {
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, 0);
    char *argv[] = {self, "child", 0};
    execv(self, argv);
    return 0;
}
int main(int argc, char **argv) {
    if (argc > 1) {
        for (int i = 0; i < 20; i++) getppid();
        return 0;
    }
    self = argv[0];
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    for (;;) pause();
}
"#;

/// The group-exit paths to test on this kernel: the one rtrace picks, and the
/// live-count path that kernels without `group_dead` take.
const MODES: [Option<&str>; 2] = [None, Some("live")];

/// The binary, and its directory (removed when dropped: keep it while the binary runs).
fn program(tag: &str, source: &str) -> (Scratch, PathBuf) {
    let dir = scratch_dir(tag);
    let (r, bin) = compile_c(&dir, tag, source, &["-O1", "-pthread"]);
    assert!(r.status.success(), "gcc failed{r}");
    (dir, bin)
}

/// A program whose main thread starts a worker that waits for the file `go` in its
/// scratch directory, then runs `worker`; `main` is the rest of the main thread. Run
/// with an argument, it calls getppid 20 times and exits (what the exec tests exec).
/// Returns the directory (keep it while the binary runs), the binary and the go file.
fn go_program(tag: &str, worker: &str, main: &str) -> (Scratch, PathBuf, PathBuf) {
    let dir = scratch_dir(tag);
    let go = dir.join("go");
    let source = format!(
        r#"
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static char *self;
static void *worker(void *arg) {{
    struct timespec ts = {{0, 20000000}};
    while (access("{go}", F_OK) != 0) nanosleep(&ts, 0);
    {worker}
    return 0;
}}
int main(int argc, char **argv) {{
    if (argc > 1) {{
        for (int i = 0; i < 20; i++) getppid();
        return 0;
    }}
    self = argv[0];
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    {main}
}}
"#,
        go = go.display()
    );
    let (r, bin) = compile_c(&dir, tag, &source, &["-O1", "-pthread"]);
    assert!(r.status.success(), "gcc failed{r}");
    (dir, bin, go)
}

/// The id of a thread of `pid` other than its leader, once there is one.
fn second_thread(pid: u32) -> u32 {
    let mut tid = None;
    assert!(rtrace_tests::wait_for(Duration::from_secs(5), || {
        tid = rtrace_tests::threads(pid).into_iter().find(|&t| t != pid);
        tid.is_some()
    }));
    tid.unwrap()
}

fn traced(mode: Option<&str>, args: &[&str], bin: &PathBuf) -> Run {
    let mut cmd = rtrace();
    if let Some(m) = mode {
        cmd.env("RTRACE_GROUP_EXIT", m);
    }
    cmd.args(args).arg("--").arg(bin);
    run(&mut cmd, Duration::from_secs(30))
}

fn count(r: &Run, name: &str) -> usize {
    r.stderr
        .lines()
        .filter_map(parse_line)
        .filter(|l| l.name == name)
        .count()
}

#[test]
fn threads_that_outlive_their_leader_stay_traced() {
    if !bpf_ready("threads_that_outlive_their_leader_stay_traced") {
        return;
    }
    let (_dir, bin) = program("leaderexit", LEADER_EXIT);
    for mode in MODES {
        let r = traced(mode, &[], &bin);
        assert_eq!(r.code(), Some(0), "mode {mode:?}{r}");
        assert_eq!(count(&r, "getppid"), 50, "mode {mode:?}{r}");
        let s = traced(mode, &["-s"], &bin);
        let row = s
            .stderr
            .lines()
            .find(|l| l.trim_start().starts_with("getppid"));
        let calls = row.and_then(|l| l.split_whitespace().nth(1));
        assert_eq!(calls, Some("50"), "mode {mode:?}{s}");
    }
}

#[test]
fn an_exec_from_a_thread_keeps_the_process_traced() {
    if !bpf_ready("an_exec_from_a_thread_keeps_the_process_traced") {
        return;
    }
    let (_dir, bin) = program("threadexec", THREAD_EXEC);
    for mode in MODES {
        let r = traced(mode, &[], &bin);
        assert_eq!(r.code(), Some(0), "mode {mode:?}{r}");
        let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
        let pid = lines.first().expect("a traced line").tid;
        // The exec'ing thread's execve: entered under its own tid, returned under the
        // leader's, shown whole, with the path it ran.
        let execs: Vec<_> = lines
            .iter()
            .filter(|l| l.name == "execve" && l.ret == "0")
            .collect();
        assert_eq!(execs.len(), 2, "mode {mode:?}{r}");
        let second = execs[1];
        assert!(
            second.args.contains(bin.to_str().unwrap()) && second.tid == pid,
            "the thread's execve is whole and shown under the process's pid: mode {mode:?}{r}"
        );
        let after: Vec<_> = lines.iter().filter(|l| l.name == "getppid").collect();
        assert_eq!(after.len(), 20, "mode {mode:?}{r}");
        assert!(after.iter().all(|l| l.tid == pid), "mode {mode:?}{r}");
    }
}

#[test]
fn in_a_summary_a_thread_that_execs_joins_its_leaders_block() {
    if !bpf_ready("in_a_summary_a_thread_that_execs_joins_its_leaders_block") {
        return;
    }
    // The worker takes its leader's number and start time as it execs: its calls from
    // then on are the leader's thread's, one block with both execve and the 20 getppid.
    // The start time the kernel side keeps per thread must follow, or they went to a
    // second block under the same number (seen, with the exec program's reset removed).
    let (_dir, bin) = program("threadexecs", THREAD_EXEC);
    let r = traced(None, &["-s"], &bin);
    assert_eq!(r.code(), Some(0), "{r}");
    let heads: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with(" threadexecs ("))
        .collect();
    assert_eq!(heads.len(), 2, "the leader's block and the worker's{r}");
    assert_ne!(
        heads[0].split(',').next(),
        heads[1].split(',').next(),
        "two threads, not one twice{r}"
    );
    let row = |name: &str| -> Vec<Option<&str>> {
        r.stderr
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("{name} ")))
            .map(|l| l.split_whitespace().nth(1))
            .collect()
    };
    assert_eq!(row("getppid"), [Some("20")], "{r}");
    assert_eq!(row("execve"), [Some("2")], "{r}");
}

#[test]
fn at_vv_the_programs_say_which_thread_took_its_leaders_number() {
    if !bpf_ready("at_vv_the_programs_say_which_thread_took_its_leaders_number") {
        return;
    }
    let (_dir, bin) = program("threadexecvv", THREAD_EXEC);
    let r = traced(None, &["-vv"], &bin);
    assert_eq!(r.code(), Some(0), "{r}");
    let pid = r
        .stderr
        .lines()
        .filter_map(parse_line)
        .next()
        .expect("a traced line")
        .tid;
    // rtrace runs in the initial pid namespace here: the kernel's numbers are its own.
    let took: Vec<(u32, u32)> = r
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("rtrace: bpf debug: thread "))
        .filter_map(|l| {
            let (old, rest) = l.split_once(" exec'd and took its leader's number ")?;
            let (new, _) = rest.split_once(' ')?;
            Some((old.parse().ok()?, new.parse().ok()?))
        })
        .collect();
    assert_eq!(took.len(), 1, "{r}");
    assert_eq!(took[0].1, pid, "{r}");
    assert_ne!(took[0].0, pid, "the worker thread, not the leader{r}");
}

#[test]
fn p_of_a_process_whose_leader_exited_is_traced_until_its_last_thread() {
    if !bpf_ready("p_of_a_process_whose_leader_exited_is_traced_until_its_last_thread") {
        return;
    }
    // The leader exits at once; the worker waits for the go file, then calls getppid
    // 30 times and ends the process.
    let (_dir, bin, go) = go_program(
        "pleader",
        "for (int i = 0; i < 30; i++) getppid();",
        "pthread_exit(0);",
    );
    for mode in MODES {
        let _ = std::fs::remove_file(&go);
        let proc_ = Bg::spawn(&bin, &[]);
        let pid = proc_.pid();
        // Wait until the leader is a zombie and only the worker runs.
        assert!(rtrace_tests::wait_for(Duration::from_secs(5), || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        }));
        let mut cmd = rtrace();
        if let Some(m) = mode {
            cmd.env("RTRACE_GROUP_EXIT", m);
        }
        cmd.args(["-v", "-p", &pid.to_string()]);
        let t = Tracer::start_cmd(cmd);
        std::thread::sleep(Duration::from_millis(300));
        std::fs::write(&go, "").unwrap();
        let r = t.wait(Duration::from_secs(15));
        assert_eq!(r.code(), Some(0), "mode {mode:?}{r}");
        assert_eq!(count(&r, "getppid"), 30, "mode {mode:?}{r}");
        drop(proc_);
    }
}

#[test]
fn p_of_a_thread_id_traces_its_whole_process() {
    if !bpf_ready("p_of_a_thread_id_traces_its_whole_process") {
        return;
    }
    // A process with a second thread; -p is given the second thread's id, as perf
    // accepts: the whole process is traced, and the session ends when it exits.
    let (_dir, bin, go) = go_program(
        "ptid",
        "for (int i = 0; i < 10; i++) getppid();",
        "pthread_join(t, 0); for (int i = 0; i < 10; i++) getpid(); return 0;",
    );
    let proc_ = Bg::spawn(&bin, &[]);
    let pid = proc_.pid();
    let tid = second_thread(pid);
    let t = Tracer::start(&["-p", &tid.to_string()]);
    std::fs::write(&go, "").unwrap();
    let r = t.wait(Duration::from_secs(15));
    assert_eq!(r.code(), Some(0), "{r}");
    assert_eq!(count(&r, "getppid"), 10, "{r}");
    assert_eq!(count(&r, "getpid"), 10, "the leader is traced too{r}");
}

#[test]
fn t_of_a_thread_that_execs_follows_it_and_ends() {
    if !bpf_ready("t_of_a_thread_that_execs_follows_it_and_ends") {
        return;
    }
    // The worker thread waits for the go file, then execs the program again as
    // `child`, which calls getppid 20 times. -t names the worker; after its exec it
    // runs under the process's pid, and is still the target.
    let (_dir, bin, go) = go_program(
        "texec",
        "char *argv[] = {self, \"child\", 0}; execv(self, argv);",
        "for (;;) pause();",
    );
    for args in [&["-t"][..], &["--no-inherit", "-p"][..]] {
        let _ = std::fs::remove_file(&go);
        let proc_ = Bg::spawn(&bin, &[]);
        let pid = proc_.pid();
        let target = if args[0] == "-t" {
            second_thread(pid)
        } else {
            pid
        };
        let target = target.to_string();
        let all: Vec<&str> = args.iter().copied().chain([target.as_str()]).collect();
        let t = Tracer::start(&all);
        std::fs::write(&go, "").unwrap();
        let r = t.wait(Duration::from_secs(15));
        assert_eq!(r.code(), Some(0), "{args:?}{r}");
        let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
        let after: Vec<_> = lines.iter().filter(|l| l.name == "getppid").collect();
        assert_eq!(after.len(), 20, "{args:?}{r}");
        assert!(after.iter().all(|l| l.tid == pid), "{args:?}{r}");
        drop(proc_);
    }
}

/// Two threads that each move to the other of two CPUs (argv[1] and argv[2]) before every
/// call: each call of a thread goes to a different CPU's ring than its last. The calls
/// are `close(N)` of fds that are not open, N counting up per thread.
const CPU_HOPPER: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#define CALLS 2000
static int cpus[2];
static void *hop(void *arg) {
    long base = (long)arg;
    for (int i = 0; i < CALLS; i++) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpus[(i + base / 10000) % 2], &set);
        if (sched_setaffinity(0, sizeof set, &set)) exit(3);
        close(base + i);
    }
    return 0;
}
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    cpus[0] = atoi(argv[1]);
    cpus[1] = atoi(argv[2]);
    pthread_t a, b;
    pthread_create(&a, 0, hop, (void *)10000L);
    pthread_create(&b, 0, hop, (void *)20000L);
    pthread_join(a, 0);
    pthread_join(b, 0);
    return 0;
}
"#;

#[test]
fn a_thread_moving_between_cpus_has_its_calls_in_order() {
    if !bpf_ready("a_thread_moving_between_cpus_has_its_calls_in_order") {
        return;
    }
    let cpus = allowed_cpus();
    assert!(
        cpus.len() >= 2,
        "this test moves threads between two CPUs; this process may run on {cpus:?}"
    );
    let (_dir, bin) = program("cpu_hopper", CPU_HOPPER);
    let r = run(
        rtrace()
            .args(["-e", "close", "--"])
            .arg(&bin)
            .args([cpus[0].to_string(), cpus[1].to_string()]),
        Duration::from_secs(30),
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let mut per_thread: std::collections::BTreeMap<u32, Vec<u64>> = Default::default();
    for l in r.stderr.lines().filter_map(parse_line) {
        if l.name != "close" {
            continue;
        }
        let fd: u64 = l
            .args
            .strip_prefix("fd: ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("close's argument: {:?}{r}", l.args));
        if fd >= 10000 {
            per_thread.entry(l.tid).or_default().push(fd);
        }
    }
    assert_eq!(per_thread.len(), 2, "{r}");
    for (tid, fds) in &per_thread {
        let base = fds[0] - fds[0] % 10000;
        let want: Vec<u64> = (base..base + 2000).collect();
        assert!(
            fds == &want,
            "thread {tid}: its calls out of order or missing{r}"
        );
    }
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is an empty set, which sched_getaffinity fills.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) } == 0;
    assert!(ok, "sched_getaffinity: {}", std::io::Error::last_os_error());
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: cpu is below CPU_SETSIZE.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// A worker named by its main thread (`pthread_setname_np` writes the worker's
/// `/proc/.../comm`) first with the longest name a task can have, then with a short
/// one, then renaming itself (`prctl`), calls getppid once under each name.
const RENAMED_WORKER: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
static volatile int step;
static void wait_for(int s) {
    struct timespec ts = {0, 1000000};
    while (step != s) nanosleep(&ts, 0);
}
static void *worker(void *arg) {
    wait_for(1);
    getppid();
    step = 2;
    wait_for(3);
    getppid();
    prctl(PR_SET_NAME, "xyz", 0, 0, 0);
    getppid();
    return 0;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    pthread_setname_np(t, "abcdefghijklmno");
    step = 1;
    wait_for(2);
    pthread_setname_np(t, "ab");
    step = 3;
    pthread_join(t, 0);
    return 0;
}
"#;

#[test]
fn each_line_has_the_name_its_thread_had_then() {
    if !bpf_ready("each_line_has_the_name_its_thread_had_then") {
        return;
    }
    // The kernel side loads the name from the task itself; a short name after a long
    // one must not show what the long one left after its end.
    let (_dir, bin) = program("renames", RENAMED_WORKER);
    let r = traced(None, &["-e", "getppid"], &bin);
    assert_eq!(r.code(), Some(0), "{r}");
    let names: Vec<&str> = r
        .stderr
        .lines()
        .filter_map(parse_line)
        .filter(|l| l.name == "getppid")
        .map(|l| l.comm)
        .collect();
    // perf's line shows a name's first 14 bytes (`%.14s`); the JSON has all 15.
    assert_eq!(names, ["abcdefghijklmn", "ab", "xyz"], "{r}");
    let j = traced(None, &["--json", "-e", "getppid"], &bin);
    assert_eq!(j.code(), Some(0), "{j}");
    let names: Vec<String> = j
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["syscall"] == "getppid")
        .filter_map(|v| v["comm"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names, ["abcdefghijklmno", "ab", "xyz"], "{j}");
}
