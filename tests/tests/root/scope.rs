//! When and which tasks perf's wider options trace: `-D/--delay` (from a time after
//! the command starts) and `-G/--cgroup` (only a cgroup v2 and those below it).

use std::{path::PathBuf, process::Command, time::Duration};

use rtrace_tests::{Bg, bpf_ready, parse_line, rtrace, run, scratch_dir};

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn delay_starts_the_trace_later() {
    if !bpf_ready("delay_starts_the_trace_later") {
        return;
    }
    // Writes "a", sleeps 2 s, writes "b": with -D 1000 only the second write shows
    // (margins wide enough for a kernel under emulation, where starting the shell and
    // its sleep took 0.3 s), nor the shell's exec event, which came before.
    let script = "echo a; sleep 2; echo b";
    let r = run(
        rtrace().args([
            "-D",
            "1000",
            "-e",
            "write,sched:sched_process_exit",
            "--",
            "sh",
            "-c",
            script,
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let writes: Vec<_> = lines.iter().filter(|l| l.name == "write").collect();
    assert_eq!(writes.len(), 1, "{r}");
    assert!(writes[0].args.contains("\"b\\n\""), "{r}");
    // The events after the delay show: sleep's and the shell's exits.
    assert_eq!(
        r.stderr.matches(" sched:sched_process_exit(").count(),
        2,
        "{r}"
    );
    // Without the delay both writes show.
    let r = run(
        rtrace().args(["-e", "write", "--", "sh", "-c", script]),
        LIMIT,
    );
    let writes = r
        .stderr
        .lines()
        .filter_map(parse_line)
        .filter(|l| l.name == "write")
        .count();
    assert_eq!(writes, 2, "{r}");

    let r = run(rtrace().args(["-D", "-1", "--", "true"]), LIMIT);
    assert_eq!(r.code(), Some(2), "{r}");
    assert!(
        r.stderr
            .starts_with("rtrace: invalid delay '-1' for -D/--delay"),
        "{r}"
    );
}

/// A cgroup v2 directory for the test, under the mounted cgroup2 (mounting one at a
/// scratch directory where none is), removed with its mount when dropped.
struct TestCgroup {
    dir: PathBuf,
    name: String,
    mounted: Option<rtrace_tests::Scratch>,
}

impl TestCgroup {
    fn new() -> Self {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let existing = mountinfo.lines().find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            (right.split(' ').next()? == "cgroup2")
                .then(|| PathBuf::from(left.split(' ').nth(4).unwrap()))
        });
        let (root, mounted) = match existing {
            Some(root) => (root, None),
            None => {
                let dir = scratch_dir("cgroup2");
                let ok = Command::new("mount")
                    .args(["-t", "cgroup2", "none"])
                    .arg(&*dir)
                    .status()
                    .unwrap()
                    .success();
                assert!(ok, "mount cgroup2");
                (dir.to_path_buf(), Some(dir))
            }
        };
        let name = format!("rtrace-test-{}", std::process::id());
        let dir = root.join(&name);
        std::fs::create_dir(&dir).unwrap();
        Self { dir, name, mounted }
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // The loop's last short-lived child may still be leaving the cgroup.
        rtrace_tests::wait_for(Duration::from_secs(5), || {
            std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists()
        });
        if let Some(m) = &self.mounted {
            let _ = Command::new("umount").arg(&**m).status();
        }
    }
}

#[test]
fn cgroup_traces_only_its_tasks() {
    if !bpf_ready("cgroup_traces_only_its_tasks") {
        return;
    }
    let cg = TestCgroup::new();
    // One loop inside the cgroup runs /bin/true, one outside runs /bin/ls.
    let inside = Bg::spawn(
        "sh",
        &[
            "-c",
            &format!(
                "echo $$ > {}/cgroup.procs && exec sh -c 'while :; do /bin/true; sleep 0.02; done'",
                cg.dir.display()
            ),
        ],
    );
    let outside = Bg::spawn(
        "sh",
        &["-c", "while :; do /bin/ls >/dev/null; sleep 0.02; done"],
    );
    let r = run(
        rtrace().args(["-a", "-G", &cg.name, "-e", "execve", "--", "sleep", "0.5"]),
        LIMIT,
    );
    drop((inside, outside));
    assert_eq!(r.code(), Some(0), "{r}");
    let execs: Vec<_> = r
        .stderr
        .lines()
        .filter_map(parse_line)
        .filter(|l| l.name == "execve" && l.args.contains("filename:"))
        .collect();
    assert!(
        execs.iter().any(|l| l.args.contains("\"/bin/true\"")),
        "the cgroup's tasks show{r}"
    );
    assert!(
        execs.iter().all(|l| !l.args.contains("/bin/ls")),
        "no task outside it{r}"
    );

    let r = run(rtrace().args(["-G", "no/such/cgroup", "--", "true"]), LIMIT);
    assert_eq!(r.code(), Some(1), "{r}");
    assert!(
        r.stderr
            .starts_with("rtrace: no cgroup 'no/such/cgroup' under "),
        "{r}"
    );
}
