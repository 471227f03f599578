//! `rtrace -i FILE -s`: the summary counted from the recorded records, by the rules the
//! kernel side counts with live (see trace-ebpf's `summary.rs`): a return with its
//! entry is a call with its duration, a return without it a call of 0 ms (but a new
//! child's return from a fork, which is no call of its own), an entry that never
//! returns (exit, exit_group) an event without a row.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use trace_common::{
    SyscallRecord,
    record::{KIND_SYSCALL, REC_PENDING},
    stats::{StatsKey, SyscallHist, SyscallStats, TaskKey},
};

use crate::{
    decode::{classes, syscall_table},
    output::summary::Section,
};

#[derive(Default)]
pub struct Tally {
    total: bool,
    per_key: BTreeMap<StatsKey, SyscallStats>,
    errnos: BTreeMap<(TaskKey, u32), BTreeMap<u32, u64>>,
    comms: FxHashMap<u32, [u8; 16]>,
    /// With --hist: each call's duration in its bucket, as the kernel counts live.
    hists: Option<BTreeMap<StatsKey, SyscallHist>>,
}

impl Tally {
    pub fn new(total: bool, hist: bool) -> Self {
        Self {
            total,
            hists: hist.then(BTreeMap::new),
            ..Self::default()
        }
    }

    /// Counts one record; a duration that would carry its row's total past 2^64 ns
    /// (584 years: only a damaged file has it) is refused, with what it is, and the
    /// row keeps what was true before it.
    pub fn add(&mut self, rec: &SyscallRecord) -> Result<(), String> {
        if rec.kind != KIND_SYSCALL || rec.flags & REC_PENDING != 0 {
            return Ok(());
        }
        // A record carries no start time: a tid reused within one recording shares
        // its section.
        let key = StatsKey {
            task: TaskKey {
                tid: if self.total { 0 } else { rec.tid },
                ..TaskKey::default()
            },
            nr: rec.nr,
            _pad: 0,
        };
        let failed = rec.has_exit() && (-4095..0).contains(&rec.ret);
        match (rec.has_entry(), rec.has_exit()) {
            (true, true) => {
                let dur = rec.exit_ns.saturating_sub(rec.enter_ns);
                let stats = self.stats(key, rec);
                if stats.total_ns.checked_add(dur).is_none() {
                    let name = syscall_table::name(rec.nr).unwrap_or("a call");
                    return Err(format!(
                        "{name} of tid {} lasts {dur} ns, which with the others' adds up past 2^64 ns",
                        rec.tid
                    ));
                }
                stats.add_call(dur, failed, true);
                self.hist(key, dur);
            }
            (false, true) => {
                let fork = syscall_table::name(rec.nr).is_some_and(classes::is_fork);
                if rec.ret == 0 && fork {
                    return Ok(());
                }
                self.stats(key, rec).add_call(0, failed, false);
                self.hist(key, 0);
            }
            (true, false) => self.stats(key, rec).enter_only += 1,
            (false, false) => return Ok(()),
        }
        if failed {
            *self
                .errnos
                .entry((key.task, key.nr))
                .or_default()
                .entry((-rec.ret) as u32)
                .or_default() += 1;
        }
        Ok(())
    }

    fn stats(&mut self, key: StatsKey, rec: &SyscallRecord) -> &mut SyscallStats {
        self.comms.entry(rec.tid).or_insert(rec.comm);
        self.per_key.entry(key).or_default()
    }

    fn hist(&mut self, key: StatsKey, dur_ns: u64) {
        if let Some(h) = &mut self.hists {
            h.entry(key).or_default().add(dur_ns);
        }
    }

    pub fn sections(self) -> Vec<Section> {
        let errnos = self
            .errnos
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .collect();
        let comms = self.comms;
        crate::output::summary::sections_with_hists(
            self.per_key,
            errnos,
            self.hists,
            self.total,
            |task| comms.get(&task.tid).copied().unwrap_or([0; 16]),
        )
    }
}

#[cfg(test)]
mod tests {
    use trace_common::record::{REC_HAS_ENTRY, REC_HAS_EXIT};

    use super::*;

    fn rec(nr: u32, flags: u16, enter_ns: u64, exit_ns: u64, ret: i64) -> SyscallRecord {
        SyscallRecord {
            kind: KIND_SYSCALL,
            flags,
            nr,
            tid: 10,
            pid: 10,
            enter_ns,
            exit_ns,
            args: [0; 6],
            ret,
            comm: *b"t\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            aug_len: [0; 2],
            aug_arg: [trace_common::augment::AUG_NO_ARG; 2],
            aug_cut: [0; 2],
        }
    }

    #[test]
    fn counted_as_the_kernel_counts() {
        let openat = syscall_table::number("openat").unwrap();
        let clone = syscall_table::number("clone").unwrap();
        let exit_group = syscall_table::number("exit_group").unwrap();
        let both = REC_HAS_ENTRY | REC_HAS_EXIT;
        let mut t = Tally::new(false, true);
        t.add(&rec(openat, both, 100, 300, 3)).unwrap();
        t.add(&rec(openat, both, 400, 500, -2)).unwrap();
        t.add(&rec(openat, REC_HAS_EXIT, 0, 900, 3)).unwrap();
        t.add(&rec(openat, REC_HAS_ENTRY | REC_PENDING, 1000, 0, 0))
            .unwrap();
        t.add(&rec(clone, REC_HAS_EXIT, 0, 950, 0)).unwrap();
        t.add(&rec(exit_group, REC_HAS_ENTRY, 990, 0, 0)).unwrap();
        let s = t.sections();
        assert_eq!(s.len(), 1);
        let open = s[0].rows.iter().find(|r| r.name == "openat").unwrap();
        assert_eq!(
            (
                open.stats.calls,
                open.stats.errors,
                open.stats.total_ns,
                open.stats.exit_only
            ),
            (3, 1, 300, 1)
        );
        assert_eq!(open.errnos, [("ENOENT".to_string(), 1)]);
        // The histogram holds every call: 200 ns, 100 ns, and 0 for the exit alone.
        let h = open.hist.unwrap();
        assert_eq!(h.calls(), open.stats.calls);
        assert_eq!((h.buckets[0], h.buckets[7], h.buckets[8]), (1, 1, 1));
        assert!(s[0].rows.iter().all(|r| r.name != "clone"));
        // openat: 2 + 2 + 1 events, exit_group 1.
        assert_eq!(s[0].events(), 6);
    }

    #[test]
    fn durations_that_add_past_u64_are_refused_not_wrapped() {
        // A damaged record file: two calls of about 2^63 ns each (the fuzzer's find:
        // `attempt to add with overflow` in add_call).
        let openat = syscall_table::number("openat").unwrap();
        let both = REC_HAS_ENTRY | REC_HAS_EXIT;
        let mut t = Tally::new(false, false);
        assert!(t.add(&rec(openat, both, 0, 1 << 63, 3)).is_ok());
        let err = t.add(&rec(openat, both, 0, 1 << 63, 3)).unwrap_err();
        assert!(err.contains("openat"), "{err}");
        // The row keeps what was true before the record that could not be added.
        let s = t.sections();
        let open = s[0].rows.iter().find(|r| r.name == "openat").unwrap();
        assert_eq!((open.stats.calls, open.stats.total_ns), (1, 1 << 63));
    }
}
