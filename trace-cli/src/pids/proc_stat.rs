//! Is a task alive? From `/proc/<pid>/stat`, read with the procfs crate.
//!
//! The command name in that file is written unescaped and may hold `)`, `(`, spaces and
//! newlines; procfs reads the whole file and takes the state from the field after the
//! last `)`. When in doubt the task counts as alive: dropping a live task from a pid map
//! loses it for the whole session, while keeping a dead one only costs a map entry until
//! rtrace ends. So only "no such task" (procfs's `NotFound`, which covers ENOENT and
//! ESRCH) or a zombie or dead state means gone; any other error means alive.

use procfs::{
    ProcError, ProcResult,
    process::{Process, Stat},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Gone,
}

/// Liveness from the outcome of reading a stat file.
pub fn liveness_of(stat: ProcResult<Stat>) -> Liveness {
    match stat {
        Ok(s) if matches!(s.state, 'Z' | 'X') => Liveness::Gone,
        Ok(_) => Liveness::Alive,
        Err(ProcError::NotFound(_)) => Liveness::Gone,
        Err(_) => Liveness::Alive,
    }
}

fn process(pid: u32) -> ProcResult<Process> {
    Process::new(i32::try_from(pid).map_err(|_| ProcError::NotFound(None))?)
}

/// Reads `/proc/<pid>/stat` (threads too: `/proc/<tid>` resolves for any tid).
pub fn task_liveness(pid: u32) -> Liveness {
    liveness_of(process(pid).and_then(|p| p.stat()))
}

/// A whole process: alive while any of its threads is. Its own stat file shows only the
/// leader, which stays a zombie while the other threads run on after it exited.
pub fn process_liveness(tgid: u32) -> Liveness {
    let p = match process(tgid) {
        Ok(p) => p,
        Err(e) => return liveness_of(Err(e)),
    };
    if liveness_of(p.stat()) == Liveness::Alive {
        return Liveness::Alive;
    }
    let tasks = match p.tasks() {
        Ok(t) => t,
        Err(e) => return liveness_of(Err(e)),
    };
    for task in tasks {
        let stat = task.and_then(|t| t.stat());
        if liveness_of(stat) == Liveness::Alive {
            return Liveness::Alive;
        }
    }
    Liveness::Gone
}

#[cfg(test)]
mod tests {
    use procfs::FromRead as _;

    use super::*;

    /// A stat line with this name and state, the other fields this task's own.
    fn stat(comm: &[u8], state: &str) -> ProcResult<Stat> {
        let own = std::fs::read("/proc/self/stat").unwrap();
        let close = own.iter().rposition(|&b| b == b')').unwrap();
        let mut v = b"1234 (".to_vec();
        v.extend_from_slice(comm);
        v.extend_from_slice(b") ");
        v.extend_from_slice(state.as_bytes());
        // Past ") S": the fields after the state.
        v.extend_from_slice(&own[close + 3..]);
        Stat::from_read(&v[..])
    }

    #[test]
    fn the_state_is_after_the_last_parenthesis() {
        for (comm, state) in [
            (&b"cat"[..], 'R'),
            (b"a) Z\n(b", 'S'),
            (b"x)) (y", 'D'),
            (b"sp ace", 'T'),
            (b"((", 'I'),
            (b"\xff\xfe)", 'S'),
        ] {
            assert_eq!(
                stat(comm, &state.to_string()).unwrap().state,
                state,
                "{comm:?}"
            );
        }
    }

    #[test]
    fn zombies_and_dead_are_gone() {
        assert_eq!(liveness_of(stat(b"z", "Z")), Liveness::Gone);
        assert_eq!(liveness_of(stat(b"x", "X")), Liveness::Gone);
        assert_eq!(liveness_of(stat(b"a) Z\n(b", "S")), Liveness::Alive);
    }

    #[test]
    fn unreadable_or_odd_content_is_alive() {
        assert_eq!(liveness_of(Stat::from_read(&b""[..])), Liveness::Alive);
        assert_eq!(
            liveness_of(Stat::from_read(&b"1234 (ca"[..])),
            Liveness::Alive
        );
        // (A line cut right after the name makes procfs-core 0.18 panic; the kernel
        // writes stat whole, so rtrace never reads one.)
        for errno in [libc::EMFILE, libc::ENOMEM] {
            let e = ProcError::from(std::io::Error::from_raw_os_error(errno));
            assert_eq!(liveness_of(Err(e)), Liveness::Alive, "{errno}");
        }
        let denied = ProcError::PermissionDenied(None);
        assert_eq!(liveness_of(Err(denied)), Liveness::Alive);
        assert_eq!(liveness_of(Err(ProcError::NotFound(None))), Liveness::Gone);
    }

    #[test]
    fn own_task_is_alive_and_a_missing_one_gone() {
        assert_eq!(task_liveness(std::process::id()), Liveness::Alive);
        assert_eq!(process_liveness(std::process::id()), Liveness::Alive);
        // Above pid_max: no such task.
        assert_eq!(task_liveness(4_194_305), Liveness::Gone);
        assert_eq!(process_liveness(4_194_305), Liveness::Gone);
    }
}
