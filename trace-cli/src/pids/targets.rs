//! Turning the user's targets into pid-map keys, and finding the tasks that `-a` must
//! leave out. Reads /proc; the choices themselves are pure functions.

use std::{fs, io};

use crate::pids::proc_stat::parse_state;

/// Thread ids of a process, from /proc/<pid>/task.
pub fn threads_of(pid: u32) -> io::Result<Vec<u32>> {
    let mut tids: Vec<u32> = fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

pub fn task_exists(pid: u32) -> bool {
    pid > 0 && fs::metadata(format!("/proc/{pid}")).is_ok()
}

/// The `Tgid:` line of /proc/<tid>/status: the process a thread belongs to.
pub fn parse_tgid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The process of a task: the number itself for a process, its leader's for a thread
/// (`/proc/<tid>` answers for any thread, though /proc does not list it), `None` when
/// no such task is there.
pub fn process_of(pid: u32) -> Option<u32> {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| parse_tgid(&s))
}

/// The parent pid: the second field after the state in /proc/<pid>/stat.
pub fn parse_ppid(stat: &[u8]) -> Option<u32> {
    parse_state(stat)?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// A task whose output feeds back into the trace when traced system-wide: the terminal
/// (or ssh daemon) that shows rtrace's output.
pub fn is_terminal_host(comm: &str) -> bool {
    comm == "sshd" || comm.starts_with("gnome-terminal")
}

/// Given rtrace's ancestors nearest first as (pid, comm), the one to leave out of a
/// system-wide trace, as perf does: the nearest terminal host, whose output would
/// otherwise feed back into the trace. The shells in between are the user's, and are
/// traced (perf shows them too).
pub fn ancestor_to_filter(ancestors: &[(u32, String)]) -> Option<u32> {
    ancestors
        .iter()
        .find(|(_, comm)| is_terminal_host(comm))
        .map(|(pid, _)| *pid)
}

/// rtrace's ancestors, nearest first, up to pid 1 (excluded).
pub fn ancestors() -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut pid = std::process::id();
    for _ in 0..64 {
        let Some(ppid) = fs::read(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parse_ppid(&s))
        else {
            break;
        };
        if ppid <= 1 {
            break;
        }
        let comm = fs::read_to_string(format!("/proc/{ppid}/comm")).unwrap_or_default();
        out.push((ppid, comm.trim_end_matches('\n').to_string()));
        pid = ppid;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_after_tricky_comm() {
        assert_eq!(parse_ppid(b"42 (a) R 7 (b) S 9 42 42 0"), Some(9));
        assert_eq!(parse_ppid(b"42 (cat) S 17 42 42"), Some(17));
        assert_eq!(parse_ppid(b"42 (cat"), None);
    }

    #[test]
    fn filters_only_the_terminal_host() {
        let a = |v: &[(u32, &str)]| {
            v.iter()
                .map(|(p, c)| (*p, c.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ancestor_to_filter(&a(&[(10, "bash"), (9, "sshd"), (8, "sshd"), (1, "init")])),
            Some(9)
        );
        assert_eq!(
            ancestor_to_filter(&a(&[(11, "sudo"), (10, "zsh"), (5, "gnome-terminal-")])),
            Some(5)
        );
        assert_eq!(
            ancestor_to_filter(&a(&[(10, "bash"), (3, "containerd-shim")])),
            None
        );
    }

    #[test]
    fn own_process_is_found() {
        let me = std::process::id();
        assert!(task_exists(me));
        assert!(threads_of(me).unwrap().contains(&me));
        assert!(!task_exists(0));
        assert_eq!(process_of(me), Some(me));
    }

    #[test]
    fn a_thread_belongs_to_its_process() {
        assert_eq!(
            parse_tgid("Name:\tx\nUmask:\t0022\nState:\tS\nTgid:\t812\nNgid:\t0\n"),
            Some(812)
        );
        assert_eq!(parse_tgid("Name:\tx\n"), None);
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            tx.send(unsafe { libc::gettid() } as u32).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        assert_ne!(tid, std::process::id());
        assert_eq!(process_of(tid), Some(std::process::id()));
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
