//! Joins the ring's records into what a line shows. A call may come in several
//! records: an exec sends what it read (path, argv, envp) ahead of its own record, a
//! blocking call sends its entry before it returns, and `--call-graph` sends a thread's
//! frames just before the record they belong to. The [`Assembler`] keeps those pieces per
//! thread and hands out one [`Record`] per line-worthy record. Pure: no I/O, no output.

use rustc_hash::FxHashMap;
use trace_common::{
    SyscallRecord,
    record::{
        Augmented, KIND_EVENT, KIND_EXEC_ENV, KIND_EXEC_READS, KIND_FAULT, KIND_STACK,
        KIND_VFORK_CHILD, REC_PENDING, STACK_FRAMES, SYSCALL_RECORD_SIZE,
    },
};

/// What one record of the ring amounts to, once joined with what came before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Record {
    /// A call that returned, or one seen at one end only (its entry before tracing
    /// started, or a call that never returns). `continued`: its entry was shown
    /// unfinished already, so its line is perf's `... [continued]: name()`.
    Call { rec: SyscallRecord, continued: bool },
    /// A tracepoint event (`-e cat:name`): its data is the record's first read.
    Event(SyscallRecord),
    /// A page fault (`-F`).
    Fault(SyscallRecord),
    /// A new process its parent waits for (`record::KIND_VFORK_CHILD`): no line, only
    /// what the child starts with.
    VforkChild { parent: u32, child: u32, at_ns: u64 },
}

/// Whether a blocking call's entry has been shown as `name(args) ...` yet.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry {
    /// Not yet: it is shown (or not) when another thread's line comes first.
    Waiting,
    Shown,
    /// The output left it out (a filter, `--json`): it stays so.
    Passed,
}

/// The entry of a blocking call that has not returned: its record as the kernel sent
/// it, with what its plan read at entry.
struct Pending {
    rec: SyscallRecord,
    entry: Entry,
    bytes: Vec<u8>,
}

/// A thread's frames as the kernel sent them, for the record stamped `stamp`.
#[derive(Default, Debug)]
pub struct Stack {
    stamp: u64,
    pub kernel: Vec<u64>,
    pub user: Vec<u64>,
    used: bool,
}

impl Stack {
    /// Takes a KIND_STACK record's frames (the buffers are kept for the next).
    fn fill(&mut self, rec: &SyscallRecord, item: &[u8]) {
        let frames = |at: usize, n: u64| {
            let n = (n as usize).min(STACK_FRAMES);
            let at = SYSCALL_RECORD_SIZE + at * 8;
            item.get(at..at + n * 8)
                .unwrap_or_default()
                .chunks_exact(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
        };
        self.stamp = rec.enter_ns;
        self.used = false;
        self.kernel.clear();
        self.kernel.extend(frames(0, rec.args[0]));
        self.user.clear();
        let kernel = (rec.args[0] as usize).min(STACK_FRAMES);
        self.user.extend(frames(kernel, rec.args[1]));
    }
}

/// Threads whose last frames are kept at most (`--call-graph`).
const MAX_STACKS_KEPT: usize = 4096;

/// Buffers kept for reuse (threads blocked at once, at most).
const SPARE_BUFFERS: usize = 64;

/// Keeps the pieces of calls until their last record comes. Bounded: one pending
/// entry, one exec read and one stack per thread, and stacks for at most
/// [`MAX_STACKS_KEPT`] threads.
#[derive(Default)]
pub struct Assembler {
    /// What a successful execve ran (path and argv), per tid, until its record comes.
    exec_reads: FxHashMap<u32, Vec<u8>>,
    /// The environment it gave the new program (`--envp`), per tid, likewise.
    exec_env: FxHashMap<u32, Vec<u8>>,
    /// What was sent ahead of the call just taken (reads, then environment).
    sent: [Vec<u8>; 2],
    /// Entries of blocking calls not yet returned, per tid.
    pending: FxHashMap<u32, Pending>,
    /// How many of them are [`Entry::Waiting`]: asked before every line, so counted
    /// rather than looked for among the threads blocked for long.
    waiting: usize,
    stacks: FxHashMap<u32, Stack>,
    /// Buffers of records gone, for the next ones (no allocation per call).
    spare: Vec<Vec<u8>>,
    /// The waiting entries in the order they are shown (kept for its buffer).
    order: Vec<u32>,
}

impl Assembler {
    fn buffer(&mut self, item: &[u8]) -> Vec<u8> {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(item);
        b
    }

    fn recycle(&mut self, gone: Option<Vec<u8>>) {
        if let Some(b) = gone
            && self.spare.len() < SPARE_BUFFERS
        {
            self.spare.push(b);
        }
    }

    /// A pending entry is gone (returned, or replaced by the thread's next).
    fn forget(&mut self, gone: Option<Pending>) {
        if let Some(p) = gone {
            self.waiting -= usize::from(p.entry == Entry::Waiting);
            self.recycle(Some(p.bytes));
        }
    }

    /// Takes one record: what it completes, or `None` when it is kept for a later one
    /// (or is not a record at all).
    pub fn take(&mut self, item: &[u8]) -> Option<Record> {
        let rec = SyscallRecord::from_bytes(item)?;
        match rec.kind {
            KIND_EXEC_READS | KIND_EXEC_ENV => {
                let b = self.buffer(item);
                let kept = match rec.kind {
                    KIND_EXEC_READS => &mut self.exec_reads,
                    _ => &mut self.exec_env,
                };
                let old = kept.insert(rec.tid, b);
                self.recycle(old);
                None
            }
            KIND_EVENT => Some(Record::Event(rec)),
            KIND_FAULT => Some(Record::Fault(rec)),
            KIND_VFORK_CHILD => Some(Record::VforkChild {
                parent: rec.args[0] as u32,
                child: rec.pid,
                at_ns: rec.enter_ns,
            }),
            KIND_STACK => {
                // Threads come and go: what is kept for them is bounded.
                if self.stacks.len() >= MAX_STACKS_KEPT && !self.stacks.contains_key(&rec.tid) {
                    self.stacks.clear();
                }
                self.stacks.entry(rec.tid).or_default().fill(&rec, item);
                None
            }
            _ if rec.flags & REC_PENDING != 0 => {
                let bytes = self.buffer(item);
                let entry = Entry::Waiting;
                let old = self.pending.insert(rec.tid, Pending { rec, entry, bytes });
                self.waiting += 1;
                self.forget(old);
                None
            }
            _ => {
                // Most calls have nothing kept for them: no lookup then.
                for (slot, kept) in [&mut self.exec_reads, &mut self.exec_env]
                    .into_iter()
                    .enumerate()
                {
                    let b = match kept.is_empty() {
                        true => None,
                        false => kept.remove(&rec.tid),
                    };
                    if b.is_none() && self.sent[slot].capacity() == 0 {
                        continue;
                    }
                    let old = std::mem::replace(&mut self.sent[slot], b.unwrap_or_default());
                    if self.spare.len() < SPARE_BUFFERS && old.capacity() > 0 {
                        self.spare.push(old);
                    }
                }
                let entry = match self.pending.is_empty() {
                    true => None,
                    false => self.pending.remove(&rec.tid),
                };
                let continued = entry
                    .as_ref()
                    .is_some_and(|p| p.entry == Entry::Shown && p.rec.nr == rec.nr);
                self.forget(entry);
                Some(Record::Call { rec, continued })
            }
        }
    }

    /// Argument `i`'s bytes for the call just taken (`item` is its record): read with
    /// the call, or else sent ahead of it by an exec.
    pub fn memory<'a>(
        &'a self,
        rec: &SyscallRecord,
        item: &'a [u8],
        i: usize,
    ) -> Option<Result<Augmented<'a>, ()>> {
        rec.augmented(item, i).or_else(|| {
            self.sent.iter().find_map(|b| {
                SyscallRecord::from_bytes(b)
                    .filter(|r| r.nr == rec.nr)?
                    .augmented(b, i)
            })
        })
    }

    /// The frames `tid` sent for the record stamped `stamp`, once: a record's frames
    /// are not another's.
    pub fn stack(&mut self, tid: u32, stamp: u64) -> Option<&Stack> {
        let st = self.stacks.get_mut(&tid)?;
        if st.stamp != stamp || st.used {
            return None;
        }
        st.used = true;
        Some(st)
    }

    /// Whether some blocking call's entry is still to be shown or passed over.
    pub fn has_waiting(&self) -> bool {
        debug_assert_eq!(
            self.waiting,
            self.pending
                .values()
                .filter(|p| p.entry == Entry::Waiting)
                .count()
        );
        self.waiting > 0
    }

    /// Every call not yet returned (its entry shown or not), oldest first, with its
    /// record's bytes: what is still running when tracing ends.
    pub fn unreturned(&self) -> Vec<(&SyscallRecord, &[u8])> {
        let mut calls: Vec<_> = self
            .pending
            .values()
            .map(|p| (&p.rec, p.bytes.as_slice()))
            .collect();
        calls.sort_unstable_by_key(|(r, _)| (r.enter_ns, r.tid));
        calls
    }

    /// The entries still waiting, but `except`'s, oldest first: each is settled by
    /// `show`, which writes it and says true, or says false to leave it out for good.
    /// Stops at the first error `show` returns.
    pub fn settle_waiting<E>(
        &mut self,
        except: Option<u32>,
        mut show: impl FnMut(&SyscallRecord, &[u8]) -> Result<bool, E>,
    ) -> Result<(), E> {
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend(
            self.pending
                .iter()
                .filter(|(tid, p)| p.entry == Entry::Waiting && Some(**tid) != except)
                .map(|(tid, _)| *tid),
        );
        order.sort_unstable_by_key(|t| self.pending[t].rec.enter_ns);
        let mut end = Ok(());
        for tid in &order {
            let Some(p) = self.pending.get_mut(tid) else {
                continue;
            };
            self.waiting -= 1;
            match show(&p.rec, &p.bytes) {
                Ok(shown) => p.entry = if shown { Entry::Shown } else { Entry::Passed },
                Err(e) => {
                    // Not written: it counts as shown, as it did before the output failed.
                    p.entry = Entry::Shown;
                    end = Err(e);
                    break;
                }
            }
        }
        self.order = order;
        end
    }
}

#[cfg(test)]
pub mod tests {
    use trace_common::{
        augment::AUG_NO_ARG,
        record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT},
    };

    use super::*;

    /// A record as the ring carries it: the fixed part, then each read's bytes in turn
    /// (argument index, bytes).
    pub fn item(rec: &SyscallRecord, reads: &[(u8, &[u8])]) -> Vec<u8> {
        let mut rec = *rec;
        for (slot, (arg, bytes)) in reads.iter().enumerate().take(2) {
            rec.aug_arg[slot] = *arg;
            rec.aug_len[slot] = bytes.len() as u16;
        }
        // SAFETY: SyscallRecord is plain integers and byte arrays without padding
        // (trace-common asserts its size), so its bytes may be read as bytes.
        let head = unsafe {
            std::slice::from_raw_parts((&raw const rec).cast::<u8>(), SYSCALL_RECORD_SIZE)
        };
        let mut out = head.to_vec();
        for (_, bytes) in reads.iter().take(2) {
            out.extend_from_slice(bytes);
        }
        out
    }

    /// A syscall record of `tid` (its own process) for call `nr`, entered at `at` µs.
    pub fn call(tid: u32, nr: u32, at: u64) -> SyscallRecord {
        SyscallRecord {
            kind: KIND_SYSCALL,
            flags: REC_HAS_ENTRY | REC_HAS_EXIT,
            nr,
            tid,
            pid: tid,
            enter_ns: at * 1000,
            exit_ns: at * 1000 + 500,
            args: [0; 6],
            ret: 0,
            comm: *b"app\0\0\0\0\0\0\0\0\0\0\0\0\0",
            aug_len: [0; 2],
            aug_arg: [AUG_NO_ARG; 2],
            aug_cut: [0; 2],
        }
    }

    /// The entry a blocking call sends before it returns.
    pub fn entry(tid: u32, nr: u32, at: u64) -> SyscallRecord {
        let mut r = call(tid, nr, at);
        r.flags = REC_HAS_ENTRY | REC_PENDING;
        r.exit_ns = 0;
        r
    }

    fn take(a: &mut Assembler, rec: &SyscallRecord) -> Option<Record> {
        a.take(&item(rec, &[]))
    }

    /// The waiting entries as (tid, nr), oldest first; each shown.
    fn show_all(a: &mut Assembler, except: Option<u32>) -> Vec<(u32, u32)> {
        let mut seen = Vec::new();
        a.settle_waiting::<()>(except, |r, _| {
            seen.push((r.tid, r.nr));
            Ok(true)
        })
        .unwrap();
        seen
    }

    const READ: u32 = 0;
    const WAIT: u32 = 61;

    #[test]
    fn a_call_in_one_record_comes_out_at_once() {
        let mut a = Assembler::default();
        let rec = call(7, READ, 1);
        assert_eq!(
            take(&mut a, &rec),
            Some(Record::Call {
                rec,
                continued: false
            })
        );
        assert!(!a.has_waiting());
        assert_eq!(a.take(b"short"), None);
    }

    #[test]
    fn blocked_entries_of_interleaved_threads_wait_their_turn_oldest_first() {
        let mut a = Assembler::default();
        assert_eq!(take(&mut a, &entry(2, WAIT, 20)), None);
        assert_eq!(take(&mut a, &entry(1, READ, 10)), None);
        assert!(a.has_waiting());
        // Thread 3's line comes: both others' entries are shown first, oldest first.
        assert_eq!(show_all(&mut a, Some(3)), [(1, READ), (2, WAIT)]);
        assert!(!a.has_waiting());
        assert!(show_all(&mut a, None).is_empty());
        // Their returns are continued lines; a later call of the same thread is not.
        let ret = call(2, WAIT, 20);
        assert_eq!(
            take(&mut a, &ret),
            Some(Record::Call {
                rec: ret,
                continued: true
            })
        );
        assert_eq!(
            take(&mut a, &ret),
            Some(Record::Call {
                rec: ret,
                continued: false
            })
        );
    }

    /// The count of waiting entries (`has_waiting`, which debug builds check against
    /// the entries) follows every way an entry ends: shown, passed over, returned, or
    /// replaced by the thread's next entry (its return lost).
    #[test]
    fn waiting_is_counted_through_every_way_an_entry_ends() {
        let mut a = Assembler::default();
        take(&mut a, &entry(1, WAIT, 10));
        take(&mut a, &entry(1, READ, 11));
        take(&mut a, &entry(2, READ, 12));
        assert!(a.has_waiting());
        assert_eq!(show_all(&mut a, Some(2)), [(1, READ)]);
        assert!(a.has_waiting());
        take(&mut a, &call(2, READ, 12));
        assert!(!a.has_waiting());
        take(&mut a, &entry(3, READ, 13));
        a.settle_waiting::<()>(None, |_, _| Ok(false)).unwrap();
        assert!(!a.has_waiting());
        take(&mut a, &entry(3, WAIT, 14));
        assert!(a.has_waiting());
    }

    #[test]
    fn a_threads_own_entry_is_not_shown_before_its_return() {
        let mut a = Assembler::default();
        take(&mut a, &entry(1, READ, 10));
        assert!(show_all(&mut a, Some(1)).is_empty());
        let ret = call(1, READ, 10);
        assert_eq!(
            take(&mut a, &ret),
            Some(Record::Call {
                rec: ret,
                continued: false
            })
        );
    }

    #[test]
    fn an_entry_passed_over_stays_passed_and_its_return_is_whole() {
        let mut a = Assembler::default();
        take(&mut a, &entry(1, READ, 10));
        a.settle_waiting::<()>(None, |_, _| Ok(false)).unwrap();
        assert!(!a.has_waiting());
        assert!(show_all(&mut a, None).is_empty());
        let ret = call(1, READ, 10);
        assert_eq!(
            take(&mut a, &ret),
            Some(Record::Call {
                rec: ret,
                continued: false
            })
        );
    }

    #[test]
    fn a_lost_return_leaves_the_next_entry_of_the_thread_in_its_place() {
        // vfork: the parent's entry waits while the child runs; when a return is lost
        // the thread's next entry replaces the old one, and the old is not shown.
        let mut a = Assembler::default();
        take(&mut a, &entry(1, 58, 10));
        take(&mut a, &entry(1, WAIT, 30));
        assert_eq!(show_all(&mut a, None), [(1, WAIT)]);
        // A return of another call than the one shown is not its continuation.
        let other = call(1, READ, 40);
        assert_eq!(
            take(&mut a, &other),
            Some(Record::Call {
                rec: other,
                continued: false
            })
        );
    }

    #[test]
    fn an_output_error_stops_the_showing() {
        let mut a = Assembler::default();
        take(&mut a, &entry(1, READ, 10));
        take(&mut a, &entry(2, READ, 20));
        let mut tried = 0;
        let end = a.settle_waiting(None, |_, _| {
            tried += 1;
            Err("full")
        });
        assert_eq!((end, tried), (Err("full"), 1));
        assert_eq!(show_all(&mut a, None), [(2, READ)]);
    }

    #[test]
    fn what_an_exec_sent_ahead_is_read_with_its_call_only() {
        let mut a = Assembler::default();
        let nr = 59;
        let mut reads = call(5, nr, 1);
        reads.kind = KIND_EXEC_READS;
        assert_eq!(a.take(&item(&reads, &[(0, b"/bin/true\0")])), None);
        let mut env = call(5, nr, 1);
        env.kind = KIND_EXEC_ENV;
        assert_eq!(a.take(&item(&env, &[(2, b"A=1\0")])), None);
        // Another thread's exec gets none of it.
        let other = item(&call(6, nr, 2), &[]);
        a.take(&other);
        assert!(a.memory(&call(6, nr, 2), &other, 0).is_none());
        let own = item(&call(5, nr, 3), &[]);
        let rec = SyscallRecord::from_bytes(&own).unwrap();
        assert!(matches!(a.take(&own), Some(Record::Call { .. })));
        let path = a.memory(&rec, &own, 0).unwrap().unwrap();
        assert_eq!(path.bytes, b"/bin/true\0");
        assert_eq!(a.memory(&rec, &own, 2).unwrap().unwrap().bytes, b"A=1\0");
        // Once taken, it is gone for the thread's next call.
        let next = item(&call(5, nr, 4), &[]);
        a.take(&next);
        assert!(a.memory(&call(5, nr, 4), &next, 0).is_none());
    }

    #[test]
    fn events_and_faults_come_out_as_they_are() {
        let mut a = Assembler::default();
        let mut ev = call(1, 3, 1);
        ev.kind = KIND_EVENT;
        assert_eq!(take(&mut a, &ev), Some(Record::Event(ev)));
        let mut f = call(1, 0, 2);
        f.kind = KIND_FAULT;
        assert_eq!(take(&mut a, &f), Some(Record::Fault(f)));
        // A vfork child, named by its waiting parent.
        let mut v = call(9, 0, 3);
        v.kind = KIND_VFORK_CHILD;
        v.args[0] = 8;
        v.enter_ns = 1234;
        assert_eq!(
            take(&mut a, &v),
            Some(Record::VforkChild {
                parent: 8,
                child: v.pid,
                at_ns: 1234
            })
        );
    }

    #[test]
    fn a_stack_belongs_to_the_record_it_was_sent_for_once() {
        let mut a = Assembler::default();
        let mut st = call(1, 0, 5);
        st.kind = KIND_STACK;
        st.args[0] = 1;
        st.args[1] = 2;
        let frames: Vec<u8> = [0xffff_ffff_8100_0000u64, 0x401000, 0x402000]
            .iter()
            .flat_map(|f| f.to_ne_bytes())
            .collect();
        let mut bytes = item(&st, &[]);
        bytes.extend_from_slice(&frames);
        assert_eq!(a.take(&bytes), None);
        assert!(a.stack(1, 6000).is_none());
        let s = a.stack(1, 5000).unwrap();
        assert_eq!(
            (s.kernel.len(), s.user.clone()),
            (1, vec![0x401000, 0x402000])
        );
        assert!(a.stack(1, 5000).is_none());
    }
}
