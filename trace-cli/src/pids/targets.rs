//! Turning the user's targets into pid-map keys, and finding the tasks that `-a` must
//! leave out. Reads /proc; the choices themselves are pure functions.

use procfs::{ProcError, ProcResult, process::Process};

fn process(pid: u32) -> ProcResult<Process> {
    Process::new(i32::try_from(pid).map_err(|_| ProcError::NotFound(None))?)
}

/// Thread ids of a process, from /proc/<pid>/task.
pub fn threads_of(pid: u32) -> ProcResult<Vec<u32>> {
    let mut tids: Vec<u32> = process(pid)?
        .tasks()?
        .filter_map(|t| u32::try_from(t.ok()?.tid).ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

pub fn task_exists(pid: u32) -> bool {
    pid > 0 && process(pid).is_ok()
}

/// The process of a task: the number itself for a process, its leader's for a thread
/// (`/proc/<tid>` answers for any thread, though /proc does not list it; its status
/// says `Tgid:`), `None` when no such task is there.
pub fn process_of(pid: u32) -> Option<u32> {
    let status = process(pid).and_then(|p| p.status()).ok()?;
    u32::try_from(status.tgid).ok()
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

/// rtrace's ancestors, nearest first, up to pid 1 (excluded), with their names.
pub fn ancestors() -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let mut pid = std::process::id();
    for _ in 0..64 {
        let Some(ppid) = process(pid)
            .and_then(|p| p.stat())
            .ok()
            .and_then(|s| u32::try_from(s.ppid).ok())
        else {
            break;
        };
        if ppid <= 1 {
            break;
        }
        let comm = process(ppid)
            .and_then(|p| p.stat())
            .map(|s| s.comm)
            .unwrap_or_default();
        out.push((ppid, comm));
        pid = ppid;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(!task_exists(u32::MAX));
        assert_eq!(process_of(me), Some(me));
        assert_eq!(process_of(4_194_305), None);
        let parent = ancestors().first().map(|(p, _)| *p);
        // SAFETY: getppid has no preconditions.
        let ppid = unsafe { libc::getppid() } as u32;
        assert_eq!(parent, (ppid > 1).then_some(ppid));
    }

    #[test]
    fn a_thread_belongs_to_its_process() {
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
