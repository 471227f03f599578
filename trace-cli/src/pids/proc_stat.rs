//! Is a task alive? From `/proc/<pid>/stat`.
//!
//! The command name in that file is written unescaped and may hold `)`, `(`, spaces and
//! newlines, so the whole file is read (a line could stop inside the name) and the state
//! is the field after the last `)`. When in doubt the task counts as alive: dropping a
//! live task from a pid map loses it for the whole session, while keeping a dead one
//! only costs a map entry until rtrace ends.

use std::io;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Gone,
}

/// The one-letter state after the last `)`, if the content has one.
pub fn parse_state(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = stat.get(close + 1..)?;
    let rest = rest.strip_prefix(b" ")?;
    rest.first().copied().filter(|b| b.is_ascii_alphabetic())
}

/// Liveness from the outcome of reading the stat file.
pub fn liveness_of(read: io::Result<Vec<u8>>) -> Liveness {
    match read {
        Ok(content) => match parse_state(&content) {
            Some(b'Z' | b'X') => Liveness::Gone,
            _ => Liveness::Alive,
        },
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH)) => Liveness::Gone,
        Err(_) => Liveness::Alive,
    }
}

/// Reads `/proc/<pid>/stat` (threads too: `/proc/<tid>` resolves for any tid).
pub fn task_liveness(pid: u32) -> Liveness {
    liveness_of(std::fs::read(format!("/proc/{pid}/stat")))
}

/// A whole process: alive while any of its threads is. Its own stat file shows only the
/// leader, which stays a zombie while the other threads run on after it exited.
pub fn process_liveness(tgid: u32) -> Liveness {
    if task_liveness(tgid) == Liveness::Alive {
        return Liveness::Alive;
    }
    let tids = match std::fs::read_dir(format!("/proc/{tgid}/task")) {
        Ok(dir) => dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()),
        Err(e) => return liveness_of(Err(e)),
    };
    for tid in tids {
        let stat = std::fs::read(format!("/proc/{tgid}/task/{tid}/stat"));
        if liveness_of(stat) == Liveness::Alive {
            return Liveness::Alive;
        }
    }
    Liveness::Gone
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(comm: &[u8], state: &str) -> Vec<u8> {
        let mut v = b"1234 (".to_vec();
        v.extend_from_slice(comm);
        v.extend_from_slice(format!(") {state} 1 1234 1234 0 -1 4194560 100 0").as_bytes());
        v
    }

    #[test]
    fn plain_and_tricky_names() {
        assert_eq!(parse_state(&stat(b"cat", "R")), Some(b'R'));
        assert_eq!(parse_state(&stat(b"a) Z\n(b", "S")), Some(b'S'));
        assert_eq!(parse_state(&stat(b"x)) (y", "D")), Some(b'D'));
        assert_eq!(parse_state(&stat(b"sp ace", "T")), Some(b'T'));
        assert_eq!(parse_state(&stat(b"((", "I")), Some(b'I'));
        assert_eq!(parse_state(&stat(b"\xff\xfe)", "S")), Some(b'S'));
    }

    #[test]
    fn zombies_and_dead_are_gone() {
        assert_eq!(liveness_of(Ok(stat(b"z", "Z"))), Liveness::Gone);
        assert_eq!(liveness_of(Ok(stat(b"x", "X"))), Liveness::Gone);
        assert_eq!(liveness_of(Ok(stat(b"a) Z\n(b", "S"))), Liveness::Alive);
    }

    #[test]
    fn unreadable_or_odd_content_is_alive() {
        assert_eq!(parse_state(b""), None);
        assert_eq!(parse_state(b"1234 (cat"), None);
        assert_eq!(parse_state(b"1234 (cat)"), None);
        assert_eq!(parse_state(b"1234 (cat) "), None);
        assert_eq!(liveness_of(Ok(Vec::new())), Liveness::Alive);
        assert_eq!(liveness_of(Ok(b"1234 (ca".to_vec())), Liveness::Alive);
        for errno in [libc::EMFILE, libc::ENOMEM, libc::EACCES] {
            assert_eq!(
                liveness_of(Err(io::Error::from_raw_os_error(errno))),
                Liveness::Alive
            );
        }
        for errno in [libc::ENOENT, libc::ESRCH] {
            assert_eq!(
                liveness_of(Err(io::Error::from_raw_os_error(errno))),
                Liveness::Gone
            );
        }
    }

    #[test]
    fn own_task_is_alive() {
        assert_eq!(task_liveness(std::process::id()), Liveness::Alive);
        assert_eq!(process_liveness(std::process::id()), Liveness::Alive);
    }
}
