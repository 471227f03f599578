//! The name each thread had when rtrace last saw it, for the ` (comm)` after a pid (a
//! fork's return, a `kill`'s pid, an event's pid field). Bounded: a system-wide trace
//! that runs for hours sees every pid of a 4M `pid_max` come and go, and one entry per
//! thread ever seen would grow without end. So names are kept in two generations: when
//! the newer one is full it becomes the older and the older is dropped. A name looked
//! up is the newest known; a thread not named for two generations' worth of other
//! threads is forgotten, and its pid is then shown without a name (not with a guess).

use rustc_hash::FxHashMap;
use trace_common::TASK_COMM_LEN;

type Comm = [u8; TASK_COMM_LEN];

/// Threads named in one generation.
const GENERATION: usize = 1 << 14;

#[derive(Default)]
pub struct TaskNames {
    newer: FxHashMap<u32, Comm>,
    older: FxHashMap<u32, Comm>,
}

impl TaskNames {
    /// `tid` is called `comm` now.
    pub fn set(&mut self, tid: u32, comm: Comm) {
        if self.newer.len() >= GENERATION && !self.newer.contains_key(&tid) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(tid, comm);
    }

    /// `tid` is called `comm` unless a name is known for it already (a new child's own
    /// records, when they came before its parent's fork returned, know better).
    pub fn set_if_unknown(&mut self, tid: u32, comm: Comm) {
        if self.get(tid).is_none() {
            self.set(tid, comm);
        }
    }

    pub fn get(&self, tid: u32) -> Option<&Comm> {
        self.newer.get(&tid).or_else(|| self.older.get(&tid))
    }

    /// Threads whose names are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(n: u32) -> Comm {
        let mut c = [0; TASK_COMM_LEN];
        c[..4].copy_from_slice(&n.to_le_bytes());
        c
    }

    /// A trace that goes through many pid ranges keeps at most two generations, and
    /// the threads named last are the ones known.
    #[test]
    fn the_table_stays_bounded_and_keeps_the_newest() {
        let mut names = TaskNames::default();
        let seen = 5 * GENERATION as u32 + 7;
        for tid in 0..seen {
            names.set(tid, comm(tid));
            assert!(names.len() <= 2 * GENERATION);
        }
        for tid in seen - GENERATION as u32..seen {
            assert_eq!(names.get(tid), Some(&comm(tid)), "{tid}");
        }
        assert_eq!(names.get(0), None);
    }

    /// Renaming a thread (exec, prctl) is seen at once, even when its old name is in
    /// the older generation; a fork's guess never replaces a name the child has.
    #[test]
    fn the_newest_name_wins_and_a_guess_does_not_overwrite() {
        let mut names = TaskNames::default();
        names.set(1, comm(100));
        for tid in 2..GENERATION as u32 + 2 {
            names.set(tid, comm(tid));
        }
        assert_eq!(names.get(1), Some(&comm(100)));
        names.set(1, comm(200));
        assert_eq!(names.get(1), Some(&comm(200)));
        names.set_if_unknown(1, comm(300));
        assert_eq!(names.get(1), Some(&comm(200)));
        names.set_if_unknown(u32::MAX, comm(300));
        assert_eq!(names.get(u32::MAX), Some(&comm(300)));
    }

    /// Naming a thread already in the newer generation again never rotates it out.
    #[test]
    fn a_thread_named_again_keeps_the_generation() {
        let mut names = TaskNames::default();
        for tid in 0..GENERATION as u32 {
            names.set(tid, comm(tid));
        }
        names.set(0, comm(1));
        assert_eq!((names.newer.len(), names.older.len()), (GENERATION, 0));
    }
}
