//! The rings' records, oldest first.
//!
//! Each CPU writes its own ring (`kernel::rings`), so one ring holds its CPU's records
//! in the order they were sent, and the rings together hold them in no order at all: a
//! thread that blocks in a call on one CPU and returns on another sends its entry and
//! its exit to different rings. The merge keeps the first unread record of each ring
//! and hands on the oldest, by the time it was sent, as perf orders its per-CPU
//! buffers. A ring found empty is looked at again before a record sent after that look
//! is handed on, and a ring whose first record is still being written (by a CPU that
//! shares it; finished records of others may wait behind it) is waited for, so each
//! thread's records come out in the order it sent them. Records of different threads
//! may still cross by as long as a record takes to write (one begun before a look and
//! finished after it: microseconds, with user memory or a call chain to read), as in
//! perf's per-CPU buffers without its sorting window.
//!
//! A ring's records are read in place while they come first; only a record that must
//! wait for another ring's is copied (into a buffer kept for its ring).

use trace_common::record::SyscallRecord;

use super::event_loop::Drained;

/// A ring the merge reads.
pub(super) trait Ring {
    /// Passes the next record to `f` and consumes it; `None` when there is none.
    fn with_next<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R>;
    /// Whether the ring holds bytes not consumed, once `with_next` found no record: a
    /// record still being written, which hides any finished behind it.
    fn unread(&self) -> bool;
}

/// Where the merged records go.
pub(super) trait Taker {
    /// Nothing more is wanted (`--max-events`).
    fn done(&self) -> bool;
    /// Takes one record; true when the output failed.
    fn take(&mut self, item: &[u8]) -> bool;
}

/// Records read from one ring in a row, at most, before every empty ring is looked at
/// again.
const RUN_MAX: usize = 256;

/// How long the merge waits for a record being written that may hide an older one of
/// the same thread (a ring shared by several CPUs) before it hands on what it holds:
/// far longer than a program takes to write a record, short enough that a writer
/// preempted mid-record (PREEMPT_RT) costs only order, never the reader's progress.
const BLOCKED_WAIT_NS: u64 = 200_000;

/// When a record was sent: the later of its two times (a returned call's exit, an
/// entry's or an event's own time); 0 for bytes too short to carry them, which go
/// first (the consumer throws them away).
pub(super) fn sent_ns(item: &[u8]) -> u64 {
    let at = |offset: usize| {
        item.get(offset..offset + 8)
            .map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
    };
    at(core::mem::offset_of!(SyscallRecord, enter_ns))
        .max(at(core::mem::offset_of!(SyscallRecord, exit_ns)))
}

/// Per ring, the record read from it that waits for an older one of another ring.
pub(super) struct Merge {
    held: Vec<Held>,
}

#[derive(Default)]
struct Held {
    bytes: Vec<u8>,
    sent_ns: u64,
    full: bool,
    /// When empty: the clock read before the ring was last found so.
    empty_at: u64,
}

impl Held {
    fn keep(&mut self, item: &[u8], sent_ns: u64) {
        self.bytes.clear();
        self.bytes.extend_from_slice(item);
        self.sent_ns = sent_ns;
        self.full = true;
    }
}

impl Merge {
    pub fn new(rings: usize) -> Merge {
        Merge {
            held: (0..rings).map(|_| Held::default()).collect(),
        }
    }

    /// Hands up to `budget` records to `taker`, oldest first.
    pub fn drain<R: Ring>(
        &mut self,
        rings: &mut [R],
        budget: usize,
        taker: &mut impl Taker,
        mut now: impl FnMut() -> u64,
    ) -> Drained {
        let mut left = budget;
        let mut looked_again = false;
        let mut blocked_since = None;
        loop {
            if taker.done() {
                return Drained::Stop;
            }
            if left == 0 {
                return Drained::Behind;
            }
            // Read before the looks: a ring found empty holds nothing sent before it
            // but what is still being written. One ring has no other to wait for.
            let before = if self.held.len() > 1 && self.held.iter().any(|h| !h.full) {
                now()
            } else {
                0
            };
            let mut blocked = false;
            for (ring, held) in rings.iter_mut().zip(&mut self.held) {
                if !held.full
                    && ring
                        .with_next(|item| held.keep(item, sent_ns(item)))
                        .is_none()
                {
                    // A ring whose first record is still being written is not empty: it
                    // keeps the time it last was.
                    if ring.unread() {
                        blocked = true;
                    } else {
                        held.empty_at = before;
                    }
                }
            }
            let Some(i) = self.oldest() else {
                return Drained::Empty;
            };
            // A ring found empty before this record was sent may have got one of the same
            // thread's since, older than it (sent on the CPU the thread left): look again
            // first. Once is enough for an empty ring (the record was sent before the new
            // look, so the look settles it, whatever else comes meanwhile); a blocked one
            // is looked at until its record is written, for `BLOCKED_WAIT_NS` at most.
            if self.held[i].sent_ns > self.bound(i) {
                if blocked {
                    let since = *blocked_since.get_or_insert(before);
                    if before.saturating_sub(since) < BLOCKED_WAIT_NS {
                        continue;
                    }
                } else if !looked_again {
                    looked_again = true;
                    continue;
                }
            }
            looked_again = false;
            blocked_since = None;
            left -= 1;
            self.held[i].full = false;
            if taker.take(&self.held[i].bytes) {
                return Drained::Stop;
            }
            // Then the same ring's next records, read in place while they come before
            // everything the other rings hold or may yet get.
            let others = self.bound(i);
            let held = &mut self.held[i];
            for _ in 0..RUN_MAX {
                if left == 0 || taker.done() {
                    break;
                }
                let took = rings[i].with_next(|item| {
                    let sent = sent_ns(item);
                    if sent <= others {
                        Some(taker.take(item))
                    } else {
                        held.keep(item, sent);
                        None
                    }
                });
                match took {
                    Some(Some(failed)) => {
                        left -= 1;
                        if failed {
                            return Drained::Stop;
                        }
                    }
                    // Empty, or its next record waits.
                    Some(None) | None => break,
                }
            }
        }
    }

    /// Throws away what the rings and the merge still hold; how many records.
    pub fn discard<R: Ring>(&mut self, rings: &mut [R]) -> u64 {
        let mut n = 0;
        for held in &mut self.held {
            n += u64::from(held.full);
            held.full = false;
        }
        for ring in rings {
            while ring.with_next(|_| ()).is_some() {
                n += 1;
            }
        }
        n
    }

    /// The ring whose held record is the oldest.
    fn oldest(&self) -> Option<usize> {
        self.held
            .iter()
            .enumerate()
            .filter(|(_, h)| h.full)
            .min_by_key(|(_, h)| h.sent_ns)
            .map(|(i, _)| i)
    }

    /// How late a record of ring `i` may have been sent and still go before everything
    /// the other rings hold or may yet get: the oldest they hold, and for a ring found
    /// empty, the time before that look. A thread's records go out in the order it sent
    /// them, whatever CPUs it moved between: its record on another ring was written
    /// before the later one was begun, so before a look taken after the later was sent.
    fn bound(&self, i: usize) -> u64 {
        self.held
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, h)| if h.full { h.sent_ns } else { h.empty_at })
            .min()
            .unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use std::{cell::Cell, collections::VecDeque, rc::Rc};

    use super::*;

    /// A ring of records that are their time and a tag.
    #[derive(Default)]
    struct TestRing(VecDeque<Vec<u8>>);

    impl Ring for TestRing {
        fn with_next<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
            self.0.pop_front().map(|item| f(&item))
        }
        fn unread(&self) -> bool {
            !self.0.is_empty()
        }
    }

    /// An exit record sent at `ns`, tagged in `nr`.
    fn record(ns: u64, tag: u32) -> Vec<u8> {
        let mut rec = vec![0u8; trace_common::record::SYSCALL_RECORD_SIZE];
        rec[4..8].copy_from_slice(&tag.to_ne_bytes());
        rec[24..32].copy_from_slice(&ns.to_ne_bytes());
        rec
    }

    fn rings(each: &[&[u64]]) -> Vec<TestRing> {
        each.iter()
            .map(|times| TestRing(times.iter().map(|&ns| record(ns, ns as u32)).collect()))
            .collect()
    }

    #[derive(Default)]
    struct Taken {
        tags: Vec<u32>,
        max: Option<usize>,
        fail_at: Option<usize>,
    }

    /// A clock later than every record: a ring found empty has nothing older to come.
    fn after_all() -> u64 {
        u64::MAX
    }

    impl Taker for Taken {
        fn done(&self) -> bool {
            self.max.is_some_and(|m| self.tags.len() >= m)
        }
        fn take(&mut self, item: &[u8]) -> bool {
            self.tags
                .push(u32::from_ne_bytes(item[4..8].try_into().unwrap()));
            self.fail_at == Some(self.tags.len())
        }
    }

    #[test]
    fn records_of_several_rings_come_out_oldest_first() {
        let mut r = rings(&[&[1, 4, 5, 9], &[2, 3, 8], &[], &[6, 7]]);
        let mut m = Merge::new(r.len());
        let mut t = Taken::default();
        assert_eq!(
            m.drain(&mut r, usize::MAX, &mut t, after_all),
            Drained::Empty
        );
        assert_eq!(t.tags, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn one_ring_keeps_its_own_order() {
        // Times out of order within a ring (a program interrupted by another) stay as
        // the ring has them.
        let mut r = rings(&[&[3, 1, 2]]);
        let mut m = Merge::new(1);
        let mut t = Taken::default();
        m.drain(&mut r, usize::MAX, &mut t, after_all);
        assert_eq!(t.tags, [3, 1, 2]);
    }

    #[test]
    fn a_batch_stops_at_its_budget_and_the_next_goes_on_in_order() {
        let mut r = rings(&[&[1, 3, 5, 7], &[2, 4, 6, 8]]);
        let mut m = Merge::new(2);
        let mut t = Taken::default();
        assert_eq!(m.drain(&mut r, 3, &mut t, after_all), Drained::Behind);
        assert_eq!(t.tags, [1, 2, 3]);
        // A record that came meanwhile, to the ring that was behind.
        r[1].0.push_back(record(9, 9));
        assert_eq!(
            m.drain(&mut r, usize::MAX, &mut t, after_all),
            Drained::Empty
        );
        assert_eq!(t.tags, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn a_long_run_of_one_ring_is_read_in_place_and_interleaves_with_the_other() {
        let a: Vec<u64> = (0..1000).map(|i| 2 * i).collect();
        let b: Vec<u64> = (0..1000).map(|i| 2 * i + 1).collect();
        let mut r = rings(&[&a, &b]);
        let mut m = Merge::new(2);
        let mut t = Taken::default();
        m.drain(&mut r, usize::MAX, &mut t, after_all);
        assert_eq!(t.tags, (0..2000).collect::<Vec<u32>>());
    }

    #[test]
    fn max_events_and_a_failed_output_stop_the_merge() {
        let mut r = rings(&[&[1, 3], &[2, 4]]);
        let mut m = Merge::new(2);
        let mut t = Taken {
            max: Some(2),
            ..Taken::default()
        };
        assert_eq!(
            m.drain(&mut r, usize::MAX, &mut t, after_all),
            Drained::Stop
        );
        assert_eq!(t.tags, [1, 2]);
        let mut t = Taken {
            fail_at: Some(1),
            ..Taken::default()
        };
        assert_eq!(
            m.drain(&mut r, usize::MAX, &mut t, after_all),
            Drained::Stop
        );
        assert_eq!(t.tags, [3]);
        // What is left, held or in the rings, is counted when thrown away.
        assert_eq!(m.discard(&mut r), 1);
    }

    /// A ring whose records show once the reader's clock reaches their commit time, in
    /// the ring's order (one being written hides those behind it); each look at any ring
    /// takes the clock on by `STEP`.
    struct TimedRing {
        items: VecDeque<(u64, Vec<u8>)>,
        now: Rc<Cell<u64>>,
    }

    const STEP: u64 = 10;

    impl Ring for TimedRing {
        fn with_next<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
            self.now.set(self.now.get() + STEP);
            if self.items.front()?.0 > self.now.get() {
                return None;
            }
            self.items.pop_front().map(|(_, item)| f(&item))
        }
        fn unread(&self) -> bool {
            // Reserved once its time was taken.
            self.items
                .front()
                .is_some_and(|(_, item)| sent_ns(item) <= self.now.get())
        }
    }

    /// Timed rings sharing one clock: per ring, (commit time, record time) pairs.
    fn timed_rings(each: &[&[(u64, u64)]]) -> (Vec<TimedRing>, Rc<Cell<u64>>) {
        let now = Rc::new(Cell::new(0));
        let rings = each
            .iter()
            .map(|items| TimedRing {
                items: items
                    .iter()
                    .map(|&(at, ns)| (at, record(ns, ns as u32)))
                    .collect(),
                now: now.clone(),
            })
            .collect();
        (rings, now)
    }

    /// Drains until `n` records came out; fails once the clock passes `limit`.
    fn drain_until(rings: &mut [TimedRing], now: &Rc<Cell<u64>>, n: usize, limit: u64) -> Vec<u32> {
        let mut m = Merge::new(rings.len());
        let mut t = Taken::default();
        while t.tags.len() < n {
            m.drain(rings, usize::MAX, &mut t, || now.get());
            assert!(now.get() < limit, "stuck: {:?}", t.tags);
        }
        assert_eq!(
            m.drain(rings, usize::MAX, &mut t, || now.get()),
            Drained::Empty
        );
        t.tags
    }

    #[test]
    fn a_thread_that_moved_ring_keeps_its_order() {
        // A thread sends A (at 40) to ring 0 just after the reader found ring 0 empty,
        // moves CPU and sends B (at 50) to ring 1, behind nine older records there.
        // B must not come out before A.
        let mut ring1: Vec<(u64, u64)> = (1..10).map(|ns| (0, ns)).collect();
        ring1.push((50, 50));
        let (mut r, now) = timed_rings(&[&[(45, 40)], &ring1]);
        assert_eq!(
            drain_until(&mut r, &now, 11, 10_000),
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 40, 50]
        );
    }

    #[test]
    fn a_record_being_written_in_a_shared_ring_holds_back_later_ones() {
        // Ring 0 is shared by two CPUs: another thread's record Z (sent at 30) is being
        // written until 200 while thread T's X (35) is finished behind it; T moves CPU
        // and sends Y (50) to ring 1. X must come before Y.
        let (mut r, now) = timed_rings(&[&[(200, 30), (40, 35)], &[(50, 50)]]);
        assert_eq!(drain_until(&mut r, &now, 3, 10_000), [30, 35, 50]);
    }

    #[test]
    fn a_ring_blocked_too_long_lets_the_others_go_on() {
        // A record being written for longer than the merge waits (a preempted writer):
        // the other ring's records go on, and the blocked one comes when written.
        let (mut r, now) = timed_rings(&[&[(BLOCKED_WAIT_NS * 3, 5)], &[(0, 10), (0, 20)]]);
        assert_eq!(
            drain_until(&mut r, &now, 3, BLOCKED_WAIT_NS * 10),
            [10, 20, 5]
        );
    }

    #[test]
    fn short_bytes_have_no_time_and_go_first() {
        assert_eq!(sent_ns(b"short"), 0);
        assert_eq!(sent_ns(&record(7, 0)), 7);
        let mut entry = record(0, 0);
        entry[16..24].copy_from_slice(&5u64.to_ne_bytes());
        assert_eq!(sent_ns(&entry), 5);
    }
}
