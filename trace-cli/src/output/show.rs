//! Which records become lines: one filter, built from the configuration, used by the
//! live trace and by the replay of a record alike. Live, the kernel has already left out
//! what it could (tasks, calls, unfinished entries); a replay has no kernel, so the same
//! rules run here on every record, and both print the same lines.

use rustc_hash::FxHashSet;
use trace_common::{SyscallRecord, record::KIND_EVENT};

use crate::config::Config;

/// Which recorded tasks and calls a replay shows (live, the kernel chose them).
#[derive(Debug, Default, Clone)]
pub struct Chosen {
    /// `-e`: only these syscalls (`None`: all that were recorded).
    pub nrs: Option<FxHashSet<u32>>,
    /// `-p`: only these processes; `-t`: only these threads.
    pub pids: Option<Vec<u32>>,
    pub tids: Option<Vec<u32>>,
    /// `--filter-pids`.
    pub hidden_pids: Vec<u32>,
    /// `-e`: only these recorded events, by index (`None`: all).
    pub events: Option<FxHashSet<u32>>,
}

impl Chosen {
    pub fn task(&self, rec: &SyscallRecord) -> bool {
        self.pids.as_ref().is_none_or(|p| p.contains(&rec.pid))
            && self.tids.as_ref().is_none_or(|t| t.contains(&rec.tid))
            && !self.hidden_pids.contains(&rec.pid)
    }

    pub fn record(&self, rec: &SyscallRecord) -> bool {
        self.task(rec)
            && if rec.kind == KIND_EVENT {
                self.events.as_ref().is_none_or(|e| e.contains(&rec.nr))
            } else {
                self.nrs.as_ref().is_none_or(|n| n.contains(&rec.nr))
            }
    }
}

/// Whether a blocking call's entry is shown as `name(args) ...` before it returns, as
/// perf does: not in JSON (a call is one object), nor where only finished calls can
/// pass (`--failure`, `--duration`), nor with `-s` alone (no call lines at all).
pub fn shows_unfinished(cfg: &Config) -> bool {
    !cfg.json
        && !cfg.failure_only
        && cfg.min_duration_ns.is_none()
        && cfg.summary.as_ref().is_none_or(|s| !s.only)
}

/// The filter every record passes before it is printed, and the count of what was.
#[derive(Debug, Clone)]
pub struct Show {
    /// A replay's choice of tasks and calls (`None` live).
    chosen: Option<Chosen>,
    failure_only: bool,
    min_duration_ns: Option<u64>,
    unfinished: bool,
    /// Events before this time (ns, the programs' clock) are not shown: `-D`.
    from_ns: u64,
    max_events: Option<u64>,
    printed: u64,
}

impl Show {
    pub fn new(cfg: &Config) -> Self {
        Self {
            chosen: None,
            failure_only: cfg.failure_only,
            min_duration_ns: cfg.min_duration_ns,
            unfinished: shows_unfinished(cfg),
            from_ns: 0,
            max_events: cfg.max_events,
            printed: 0,
        }
    }

    /// Replaying: only the tasks and calls `chosen` names.
    pub fn choosing(mut self, chosen: Chosen) -> Self {
        self.chosen = Some(chosen);
        self
    }

    /// Nothing from before `ns` (`-D`: the syscall programs attach only then; the
    /// event programs were attached at the start).
    pub fn from(mut self, ns: u64) -> Self {
        self.from_ns = ns;
        self
    }

    fn chosen(&self, rec: &SyscallRecord) -> bool {
        self.chosen.as_ref().is_none_or(|c| c.record(rec))
    }

    /// A finished call's line (or one seen at one end only).
    pub fn call(&self, rec: &SyscallRecord) -> bool {
        if !self.chosen(rec) || self.max_reached() {
            return false;
        }
        if self.failure_only && !(rec.has_exit() && rec.ret < 0 && rec.ret >= -4095) {
            return false;
        }
        match self.min_duration_ns {
            Some(min) => rec.has_entry() && rec.has_exit() && rec.exit_ns - rec.enter_ns > min,
            None => true,
        }
    }

    /// A blocking call's entry, shown unfinished before it returns.
    pub fn unfinished(&self, rec: &SyscallRecord) -> bool {
        self.unfinished && self.chosen(rec) && !self.max_reached()
    }

    /// A call still running when tracing ended at `end_ns`, in the timeline: as a
    /// finished call, had it returned then (it has not failed yet).
    pub fn unreturned(&self, rec: &SyscallRecord, end_ns: u64) -> bool {
        self.chosen(rec)
            && !self.max_reached()
            && !self.failure_only
            && rec.enter_ns >= self.from_ns
            && self
                .min_duration_ns
                .is_none_or(|min| end_ns.saturating_sub(rec.enter_ns) > min)
    }

    /// A tracepoint event's or a page fault's line.
    pub fn event(&self, rec: &SyscallRecord) -> bool {
        self.chosen(rec) && !self.max_reached() && rec.enter_ns >= self.from_ns
    }

    /// One more line was printed.
    pub fn printed(&mut self) {
        self.printed += 1;
    }

    /// `--max-events` lines have been printed: nothing more is.
    pub fn max_reached(&self) -> bool {
        self.max_events.is_some_and(|max| self.printed >= max)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::{cli::Args, decode::assemble::tests::call};

    fn show(argv: &[&str]) -> Show {
        let mut all = vec!["rtrace", "-i", "f"];
        all.extend_from_slice(argv);
        Show::new(&crate::config::resolve(Args::try_parse_from(all).unwrap(), |_| false).unwrap())
    }

    fn failed(mut r: SyscallRecord) -> SyscallRecord {
        r.ret = -2;
        r
    }

    #[test]
    fn unfinished_entries_only_where_perf_shows_them() {
        let entry = call(1, 0, 1);
        assert!(show(&[]).unfinished(&entry));
        for argv in [
            &["--json"][..],
            &["--failure"],
            &["--duration", "1"],
            &["-s"],
        ] {
            assert!(!show(argv).unfinished(&entry), "{argv:?}");
        }
        // -S: the summary comes with the lines, unfinished ones included.
        assert!(show(&["-S"]).unfinished(&entry));
    }

    #[test]
    fn failure_and_duration_pass_only_finished_calls_that_qualify() {
        let ok = call(1, 0, 1);
        let mut entry_only = failed(ok);
        entry_only.flags &= !trace_common::record::REC_HAS_EXIT;
        let f = show(&["--failure"]);
        assert!(!f.call(&ok) && f.call(&failed(ok)) && !f.call(&entry_only));
        let mut slow = ok;
        slow.exit_ns = slow.enter_ns + 2_000_000;
        let d = show(&["--duration", "1"]);
        assert!(!d.call(&ok) && d.call(&slow));
    }

    #[test]
    fn a_replays_choice_applies_to_every_kind_of_line() {
        let chosen = Chosen {
            pids: Some(vec![1]),
            nrs: Some([0].into_iter().collect()),
            ..Chosen::default()
        };
        let s = show(&[]).choosing(chosen);
        assert!(s.call(&call(1, 0, 1)) && s.unfinished(&call(1, 0, 1)));
        assert!(!s.call(&call(2, 0, 1)) && !s.unfinished(&call(2, 0, 1)));
        assert!(!s.call(&call(1, 3, 1)) && !s.unfinished(&call(1, 3, 1)));
        assert!(!s.event(&call(2, 0, 1)));
    }

    #[test]
    fn max_events_ends_every_kind_of_line_and_d_only_events() {
        let mut s = show(&["--max-events", "1"]).from(5_000);
        let early = call(1, 0, 1);
        assert!(s.call(&early) && !s.event(&early));
        assert!(s.event(&call(1, 0, 9)));
        s.printed();
        assert!(s.max_reached());
        assert!(!s.call(&early) && !s.unfinished(&early) && !s.event(&call(1, 0, 9)));
    }
}
