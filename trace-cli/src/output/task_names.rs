//! The name each thread had when rtrace last saw it, for the ` (comm)` after a pid (a
//! fork's return, a `kill`'s pid, an event's pid field). Bounded: a system-wide trace
//! that runs for hours sees every pid of a 4M `pid_max` come and go, and one entry per
//! thread ever seen would grow without end. So names are kept in two generations: when
//! the newer one is full it becomes the older and the older is dropped. A name looked
//! up is the newest known; a thread not named for two generations' worth of other
//! threads is forgotten, and its pid is then shown without a name (not with a guess).
//! Each name keeps when it was seen: a fork's child is named after its parent unless
//! its own records, since the fork, named it already; an older name was a dead
//! task's whose pid the kernel gave again.

use rustc_hash::FxHashMap;
use trace_common::TASK_COMM_LEN;

type Comm = [u8; TASK_COMM_LEN];

/// A name, and the time of the record that showed it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Seen {
    comm: Comm,
    at_ns: u64,
}

/// Threads named in one generation.
const GENERATION: usize = 1 << 14;

#[derive(Default)]
pub struct TaskNames {
    newer: FxHashMap<u32, Seen>,
    older: FxHashMap<u32, Seen>,
}

impl TaskNames {
    /// `tid` is called `comm` at `at_ns`.
    pub fn set(&mut self, tid: u32, comm: Comm, at_ns: u64) {
        if self.newer.len() >= GENERATION && !self.newer.contains_key(&tid) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(tid, Seen { comm, at_ns });
    }

    /// `tid` was forked at `forked_ns` by a task called `comm`: it is called so too,
    /// unless its own records named it since (they may come before its parent's
    /// return). A name from before the fork was a dead task's.
    pub fn forked(&mut self, tid: u32, comm: Comm, forked_ns: u64) {
        if self.seen(tid).is_none_or(|s| s.at_ns < forked_ns) {
            self.set(tid, comm, forked_ns);
        }
    }

    fn seen(&self, tid: u32) -> Option<&Seen> {
        self.newer.get(&tid).or_else(|| self.older.get(&tid))
    }

    pub fn get(&self, tid: u32) -> Option<&Comm> {
        self.seen(tid).map(|s| &s.comm)
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
            names.set(tid, comm(tid), 1);
            assert!(names.len() <= 2 * GENERATION);
        }
        for tid in seen - GENERATION as u32..seen {
            assert_eq!(names.get(tid), Some(&comm(tid)), "{tid}");
        }
        assert_eq!(names.get(0), None);
    }

    /// Renaming a thread (exec, prctl) is seen at once, even when its old name is in
    /// the older generation.
    #[test]
    fn the_newest_name_wins() {
        let mut names = TaskNames::default();
        names.set(1, comm(100), 10);
        for tid in 2..GENERATION as u32 + 2 {
            names.set(tid, comm(tid), 20);
        }
        assert_eq!(names.get(1), Some(&comm(100)));
        names.set(1, comm(200), 30);
        assert_eq!(names.get(1), Some(&comm(200)));
    }

    /// A fork names its child after the parent, but for a name the child's own
    /// records gave since the fork; a name from before it was a dead task's.
    #[test]
    fn a_fork_names_its_child_unless_the_child_said_since() {
        let mut names = TaskNames::default();
        names.set(7, comm(1), 300);
        names.forked(7, comm(2), 250);
        assert_eq!(names.get(7), Some(&comm(1)));
        names.forked(8, comm(2), 250);
        assert_eq!(names.get(8), Some(&comm(2)));
        // Pid 9's task died (killed: nothing says so); the kernel gives 9 again.
        names.set(9, comm(3), 100);
        names.forked(9, comm(2), 400);
        assert_eq!(names.get(9), Some(&comm(2)));
    }

    /// Naming a thread already in the newer generation again never rotates it out.
    #[test]
    fn a_thread_named_again_keeps_the_generation() {
        let mut names = TaskNames::default();
        for tid in 0..GENERATION as u32 {
            names.set(tid, comm(tid), 1);
        }
        names.set(0, comm(1), 2);
        assert_eq!((names.newer.len(), names.older.len()), (GENERATION, 0));
    }
}
