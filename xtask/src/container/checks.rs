//! What the smoke test runs inside a container and what it expects to see. Each check is
//! a busybox shell script and a verdict on its output; the pids it expects are the ones
//! the container's own shell reports (`$$`, `getpid()`), so a trace that showed the
//! host's numbers fails.

use std::process::Output;

/// One line of perf's shape: `  0.977 ( 0.030 ms): cat/6 openat(…) = 3`.
#[derive(Debug, PartialEq)]
pub struct Call<'a> {
    pub comm: &'a str,
    pub tid: u32,
    pub name: &'a str,
    pub line: &'a str,
}

pub fn calls(text: &str) -> Vec<Call<'_>> {
    text.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once("): ")?;
            let (task, call) = rest.split_once(' ')?;
            let (comm, tid) = task.rsplit_once('/')?;
            let name = call.split('(').next()?;
            Some(Call {
                comm,
                tid: tid.parse().ok()?,
                name,
                line,
            })
        })
        .collect()
}

/// A finished run of a check's script.
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Outcome {
    fn from(o: Output) -> Self {
        Self {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Outcome {
    /// The first line of stdout as a pid (what the scripts print first).
    fn pid(&self) -> Result<u32, String> {
        self.stdout
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| "the script printed no pid first".into())
    }

    pub fn status(&self, want: i32) -> Result<(), String> {
        match self.code {
            Some(c) if c == want => Ok(()),
            other => Err(format!("exit status {other:?}, expected {want}")),
        }
    }

    /// rtrace refused with exactly one line, `rtrace: …`, containing each of `words`.
    fn refused(&self, words: &[&str]) -> Result<(), String> {
        self.status(1)?;
        let lines: Vec<&str> = self.stderr.lines().collect();
        match lines.as_slice() {
            [one] if one.starts_with("rtrace: ") => {
                match words.iter().find(|w| !one.contains(*w)) {
                    Some(w) => Err(format!("the refusal does not name {w}")),
                    None => Ok(()),
                }
            }
            _ => Err("expected one line, `rtrace: …`".into()),
        }
    }
}

pub type Verdict = Box<dyn Fn(&Outcome) -> Result<(), String>>;

pub struct Check {
    pub name: String,
    pub script: String,
    pub verify: Verdict,
}

pub fn check(name: &str, script: &str, verify: Verdict) -> Check {
    Check {
        name: name.into(),
        script: script.into(),
        verify,
    }
}

pub fn need(ok: bool, what: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what.into()) }
}

/// `-- cmd`: the command's calls under the pid its own shell sees.
fn traced_command() -> Check {
    check(
        "a traced command shows the pids the container sees",
        "rtrace -- sh -c 'echo $$; exec cat /etc/hostname'",
        Box::new(|o| {
            o.status(0)?;
            let pid = o.pid()?;
            need(
                calls(&o.stderr).iter().any(|c| {
                    c.comm == "cat"
                        && c.tid == pid
                        && c.name == "openat"
                        && c.line.contains("/etc/hostname")
                }),
                &format!("no `cat/{pid} openat(… /etc/hostname …)` line"),
            )
        }),
    )
}

fn exit_status() -> Check {
    check(
        "rtrace exits with the command's status",
        "rtrace -- sh -c 'exit 7'",
        Box::new(|o| o.status(7)),
    )
}

/// `-p 1`: the container's first process (the loop), then stopped by SIGINT.
fn attach_to_pid_1() -> Check {
    check(
        "-p attaches to the container's pid 1",
        "timeout -s INT 2 rtrace -p 1",
        Box::new(|o| {
            o.status(0)?;
            need(
                calls(&o.stderr).iter().any(|c| c.tid == 1),
                "no line of task 1",
            )
        }),
    )
}

fn summary() -> Check {
    check(
        "-s sums the command's calls under its pid",
        "rtrace -s -- sh -c 'echo $$; exec cat /etc/hostname'",
        Box::new(|o| {
            o.status(0)?;
            let pid = o.pid()?;
            need(
                o.stderr.contains(&format!(" cat ({pid}), ")),
                &format!("no ` cat ({pid}), … events` in the summary"),
            )?;
            need(
                o.stderr
                    .lines()
                    .any(|l| l.trim_start().starts_with("openat ")),
                "no openat row in the summary",
            )
        }),
    )
}

/// System-wide with pid 1 filtered out: its `cat` children show, pid 1 does not.
fn filter_pids() -> Check {
    check(
        "-a --filter-pids 1 leaves out pid 1 and keeps the rest",
        "rtrace -a --filter-pids 1 -- sleep 0.5",
        Box::new(|o| {
            o.status(0)?;
            let all = calls(&o.stderr);
            need(
                all.iter().any(|c| c.comm == "cat" && c.tid != 1),
                "no line of the loop's cat children",
            )?;
            need(all.iter().all(|c| c.tid != 1), "a line of pid 1")
        }),
    )
}

/// A thread that is not the leader execs: the new program runs under the leader's pid.
fn thread_exec() -> Check {
    check(
        "a thread that execs continues under the leader's pid",
        "rtrace -- /bin/thread-exec",
        Box::new(|o| {
            o.status(0)?;
            let pid = o.pid()?;
            let all = calls(&o.stderr);
            let after = all
                .iter()
                .filter(|c| c.tid == pid && c.name == "getppid")
                .count();
            need(
                after == 20,
                &format!("{after} getppid lines of {pid}, expected 20"),
            )?;
            need(
                all.iter().any(|c| c.tid != pid && c.comm == "thread-exec"),
                "no line of the second thread",
            )?;
            // The exec returns in the leader's pid, as perf shows it.
            need(
                all.iter()
                    .any(|c| c.name == "execve" && c.tid == pid && c.line.contains("\"child\"")),
                &format!("no `thread-exec/{pid} execve(… \"child\" …)` line"),
            )
        }),
    )
}

/// The checks for a container with its own pid namespace and enough privilege.
pub fn in_own_pid_namespace() -> Vec<Check> {
    vec![
        traced_command(),
        exit_status(),
        attach_to_pid_1(),
        summary(),
        filter_pids(),
        thread_exec(),
    ]
}

/// With the host's pid namespace (`--pid=host`): host pids, and a host process by `-p`.
pub fn in_host_pid_namespace(host_pid: u32) -> Vec<Check> {
    vec![
        traced_command(),
        exit_status(),
        check(
            "-p attaches to a host process",
            &format!("timeout -s INT 2 rtrace -p {host_pid}"),
            Box::new(move |o| {
                o.status(0)?;
                need(
                    calls(&o.stderr).iter().any(|c| c.tid == host_pid),
                    &format!("no line of task {host_pid}"),
                )
            }),
        ),
    ]
}

/// Without CAP_BPF, CAP_PERFMON or CAP_SYS_ADMIN: one line naming them.
pub fn refused_without_capabilities() -> Check {
    check(
        "without the capabilities rtrace refuses and names them",
        "rtrace -- true",
        Box::new(|o| o.refused(&["CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN"])),
    )
}

/// With CAP_BPF and CAP_PERFMON but neither tracefs nor the right to mount it.
pub fn refused_without_tracefs() -> Check {
    check(
        "without tracefs rtrace says how to mount or bind it",
        "rtrace -- true",
        Box::new(|o| o.refused(&["tracefs", "CAP_SYS_ADMIN", "/sys/kernel/tracing"])),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(code: i32, stdout: &str, stderr: &str) -> Outcome {
        Outcome {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn lines_in_perfs_shape_parse() {
        let text = "     0.977 ( 0.030 ms): cat/6 openat(dfd: CWD, filename: \"/etc/hostname\") = 3\n     1.020 (         ): cat/6 exit_group()   = ?\nsmoke\n";
        let all = calls(text);
        assert_eq!(all.len(), 2);
        assert_eq!((all[0].comm, all[0].tid, all[0].name), ("cat", 6, "openat"));
        assert_eq!(all[1].name, "exit_group");
    }

    #[test]
    fn a_trace_with_other_pids_fails() {
        let c = traced_command();
        let line = "  0.1 ( 0.002 ms): cat/9 openat(dfd: CWD, filename: \"/etc/hostname\") = 3\n";
        assert!((c.verify)(&outcome(0, "9\n", line)).is_ok());
        // The host's number for the same task is not the container's.
        assert!((c.verify)(&outcome(0, "9\n", &line.replace("/9 ", "/24512 "))).is_err());
    }

    #[test]
    fn a_refusal_is_one_line_naming_the_capabilities() {
        let c = refused_without_capabilities();
        let good =
            "rtrace: permission denied: … lacks CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN — …\n";
        assert!((c.verify)(&outcome(1, "", good)).is_ok());
        assert!((c.verify)(&outcome(1, "", "rtrace: permission denied\n")).is_err());
        assert!((c.verify)(&outcome(1, "", &format!("{good}{good}"))).is_err());
        assert!((c.verify)(&outcome(0, "", good)).is_err());
    }
}
