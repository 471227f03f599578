//! The in-kernel summary statistics. While tracing, the numbers of threads that have
//! exited move out of the kernel's maps into rtrace's (a sweep every second), so
//! that the maps hold the live threads' however long a system-wide summary runs; at the
//! end, what is left is read and joined to what was moved.

use std::collections::BTreeMap;

use aya::{
    Ebpf,
    maps::{Array, HashMap, Map, MapData, PerCpuHashMap, Queue},
};
use rustc_hash::{FxHashMap, FxHashSet};
use trace_common::stats::{
    ERRNO_STATS, ErrnoKey, STATS_FREE, STATS_SLOT, SYSCALL_HIST, SYSCALL_HIST_TOTAL, SYSCALL_STATS,
    SYSCALL_STATS_TOTAL, StatsKey, SyscallHist, SyscallStats, TASK_COMM, TaskKey,
};

use crate::{kernel::loader::LoadError, output::summary::Section};

fn map<'a>(bpf: &'a Ebpf, name: &'static str) -> Result<&'a aya::maps::Map, LoadError> {
    bpf.map(name).ok_or(LoadError::MissingMap(name))
}

fn bad_map(name: &'static str) -> impl FnOnce(aya::maps::MapError) -> LoadError {
    move |_| LoadError::MissingMap(name)
}

/// A map of its own (a second descriptor), so that entries can be changed while the
/// session holds the programs' maps; `typed` makes it aya's map of that kind.
fn own_map<M>(
    bpf: &Ebpf,
    name: &'static str,
    typed: impl FnOnce(MapData) -> Result<M, aya::maps::MapError>,
) -> Result<M, LoadError> {
    let (Map::HashMap(data) | Map::Array(data) | Map::Queue(data)) = map(bpf, name)? else {
        return Err(LoadError::MissingMap(name));
    };
    let fd = std::os::fd::AsFd::as_fd(data.fd())
        .try_clone_to_owned()
        .map_err(|_| LoadError::MissingMap(name))?;
    typed(MapData::from_fd(fd).map_err(bad_map(name))?).map_err(bad_map(name))
}

fn own_hash_map<K: aya::Pod, V: aya::Pod>(
    bpf: &Ebpf,
    name: &'static str,
) -> Result<HashMap<MapData, K, V>, LoadError> {
    own_map(bpf, name, |d| HashMap::try_from(Map::HashMap(d)))
}

/// The rows of exited threads rtrace keeps at most (about 100 bytes each): past it, an
/// exited thread's numbers are added to one section of their own, summed per syscall
/// ("N more threads, together"; a thread whose rows straddle the bound has some in its
/// own section and the rest there).
pub const KEPT_ROWS_MAX: usize = 1 << 20;

/// The task the folded rows are kept under: tid 0 with a mark no thread has.
const FOLDED: TaskKey = TaskKey {
    tid: 0,
    _pad: 1,
    start_ns: 0,
};

/// The per-thread statistics: the kernel's maps, and what was moved out of them.
pub struct ThreadStats {
    /// Each row's slot in `stats`.
    slots: HashMap<MapData, StatsKey, u32>,
    stats: Array<MapData, SyscallStats>,
    /// The slots a sweep emptied, for the programs to take again.
    free: Queue<MapData, u32>,
    errnos: HashMap<MapData, ErrnoKey, u64>,
    comms: HashMap<MapData, TaskKey, [u8; 16]>,
    /// With --hist: in the rows' slots, as `stats`.
    hists: Option<Array<MapData, SyscallHist>>,
    kept: Kept,
}

/// What sweeps moved out of the kernel's maps.
#[derive(Default)]
pub struct Kept {
    pub rows: BTreeMap<StatsKey, SyscallStats>,
    pub errnos: BTreeMap<(TaskKey, u32), BTreeMap<u32, u64>>,
    pub comms: FxHashMap<TaskKey, [u8; 16]>,
    /// With --hist: the rows' histograms, kept (or folded) as their rows are.
    pub hists: Option<BTreeMap<StatsKey, SyscallHist>>,
    /// Threads whose numbers were all folded into [`FOLDED`]'s section.
    pub folded_threads: u64,
    /// Whether a thread had rows kept apart and rows folded (the one whose rows were
    /// taken as the bound was reached): counted among the folded section's threads.
    pub straddled: bool,
}

impl Kept {
    /// Joins one row, as the kernel would have had it had it kept counting; past the
    /// bound, into the folded section's row of its syscall.
    pub fn add_row(&mut self, key: StatsKey, stats: &SyscallStats) {
        if let Some(row) = self.rows.get_mut(&key) {
            row.merge(stats);
        } else if self.rows.len() < KEPT_ROWS_MAX {
            self.rows.insert(key, *stats);
        } else {
            let folded = StatsKey {
                task: FOLDED,
                ..key
            };
            self.rows.entry(folded).or_default().merge(stats);
            if !self.straddled && self.has_rows(key.task) {
                self.straddled = true;
            }
        }
    }

    /// Joins an errno count to its row's: the folded one where the row was folded
    /// (the rows go first).
    pub fn add_errno(&mut self, key: ErrnoKey, count: u64) {
        let row = StatsKey {
            task: key.task,
            nr: key.nr,
            _pad: 0,
        };
        let task = if self.rows.contains_key(&row) {
            key.task
        } else {
            FOLDED
        };
        *self
            .errnos
            .entry((task, key.nr))
            .or_default()
            .entry(key.errno)
            .or_default() += count;
    }

    /// Joins a histogram to its row's: the folded one where the row was folded (the
    /// rows go first).
    pub fn add_hist(&mut self, key: StatsKey, hist: &SyscallHist) {
        let key = if self.rows.contains_key(&key) {
            key
        } else {
            StatsKey {
                task: FOLDED,
                ..key
            }
        };
        self.hists
            .get_or_insert_with(BTreeMap::new)
            .entry(key)
            .or_default()
            .merge(hist);
    }

    fn has_rows(&self, task: TaskKey) -> bool {
        let first = StatsKey {
            task,
            nr: 0,
            _pad: 0,
        };
        let last = StatsKey {
            task,
            nr: u32::MAX,
            _pad: u32::MAX,
        };
        self.rows.range(first..=last).next().is_some()
    }

    /// Keeps a thread's name, or counts it among the folded threads when none of its
    /// rows was kept.
    pub fn add_comm(&mut self, task: TaskKey, comm: [u8; 16]) {
        if self.has_rows(task) {
            self.comms.insert(task, comm);
        } else {
            self.folded_threads += 1;
        }
    }
}

impl Kept {
    /// The sections: a thread's own, then the folded one.
    pub fn into_sections(self) -> (Vec<Section>, u64) {
        let Kept {
            mut rows,
            errnos,
            comms,
            hists,
            folded_threads,
            straddled,
        } = self;
        let (folded_hists, hists) = match hists {
            Some(h) => {
                let (folded, own): (BTreeMap<_, _>, BTreeMap<_, _>) =
                    h.into_iter().partition(|(k, _)| k.task == FOLDED);
                (Some(folded), Some(own))
            }
            None => (None, None),
        };
        let folded_threads = folded_threads + u64::from(straddled);
        let (mut folded_errnos, errnos): (BTreeMap<_, Vec<_>>, BTreeMap<_, Vec<_>>) = errnos
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .partition(|((task, _), _)| *task == FOLDED);
        let folded_rows: BTreeMap<StatsKey, SyscallStats> = {
            let folded: Vec<StatsKey> = rows.keys().filter(|k| k.task == FOLDED).copied().collect();
            folded
                .into_iter()
                .filter_map(|k| Some((k, rows.remove(&k)?)))
                .collect()
        };
        let mut sections =
            crate::output::summary::sections_with_hists(rows, errnos, hists, false, |task| {
                comms.get(&task).copied().unwrap_or([0; 16])
            });
        if !folded_rows.is_empty() {
            let folded = crate::output::summary::sections_with_hists(
                folded_rows,
                std::mem::take(&mut folded_errnos),
                folded_hists,
                false,
                |_| [0; 16],
            );
            sections.extend(folded.into_iter().map(|mut s| {
                s.title = crate::output::summary::Title::Folded {
                    threads: folded_threads,
                };
                s
            }));
        }
        (sections, folded_threads)
    }
}

impl ThreadStats {
    /// The maps; `hist` with --hist.
    pub fn open(bpf: &Ebpf, hist: bool) -> Result<Self, LoadError> {
        Ok(Self {
            slots: own_hash_map(bpf, STATS_SLOT)?,
            stats: own_map(bpf, SYSCALL_STATS, |d| Array::try_from(Map::Array(d)))?,
            free: own_map(bpf, STATS_FREE, |d| Queue::try_from(Map::Queue(d)))?,
            errnos: own_hash_map(bpf, ERRNO_STATS)?,
            comms: own_hash_map(bpf, TASK_COMM)?,
            hists: hist
                .then(|| own_map(bpf, SYSCALL_HIST, |d| Array::try_from(Map::Array(d))))
                .transpose()?,
            kept: Kept {
                hists: hist.then(BTreeMap::new),
                ..Kept::default()
            },
        })
    }

    /// Moves the numbers of the threads `alive` says are gone out of the kernel's maps;
    /// how many threads that was.
    pub fn sweep(&mut self, alive: impl Fn(TaskKey) -> bool) -> usize {
        let gone: FxHashSet<TaskKey> = self
            .comms
            .keys()
            .filter_map(Result::ok)
            .filter(|&t| !alive(t))
            .collect();
        if gone.is_empty() {
            return 0;
        }
        let rows: Vec<StatsKey> = self
            .slots
            .keys()
            .filter_map(Result::ok)
            .filter(|k| gone.contains(&k.task))
            .collect();
        for key in rows {
            if let Ok(slot) = self.slots.get(&key, 0)
                && let Ok(stats) = self.stats.get(&slot, 0)
            {
                self.kept.add_row(key, &stats);
                let hists = self.hists.as_mut();
                if let Some(hist) = hists.as_ref().and_then(|h| h.get(&slot, 0).ok()) {
                    self.kept.add_hist(key, &hist);
                }
                // The slot goes back zeroed: no thread writes it now (its thread
                // ended), and the next that takes it starts from nothing.
                if self.slots.remove(&key).is_ok()
                    && self.stats.set(slot, SyscallStats::default(), 0).is_ok()
                    && hists.is_none_or(|h| h.set(slot, SyscallHist::default(), 0).is_ok())
                {
                    let _ = self.free.push(slot, 0);
                }
            }
        }
        let errnos: Vec<ErrnoKey> = self
            .errnos
            .keys()
            .filter_map(Result::ok)
            .filter(|k| gone.contains(&k.task))
            .collect();
        for key in errnos {
            if let Ok(count) = self.errnos.get(&key, 0) {
                self.kept.add_errno(key, count);
                let _ = self.errnos.remove(&key);
            }
        }
        for task in &gone {
            if let Ok(comm) = self.comms.get(task, 0) {
                self.kept.add_comm(*task, comm);
                let _ = self.comms.remove(task);
            }
        }
        gone.len()
    }

    /// Everything: what is still in the kernel's maps joined to what was moved; and
    /// how many threads were folded into one section.
    pub fn finish(mut self) -> (Vec<Section>, u64) {
        for (key, slot) in self.slots.iter().filter_map(Result::ok) {
            if let Ok(stats) = self.stats.get(&slot, 0) {
                self.kept.add_row(key, &stats);
            }
            if let Some(hist) = self.hists.as_ref().and_then(|h| h.get(&slot, 0).ok()) {
                self.kept.add_hist(key, &hist);
            }
        }
        for (key, count) in self.errnos.iter().filter_map(Result::ok) {
            self.kept.add_errno(key, count);
        }
        for (task, comm) in self.comms.iter().filter_map(Result::ok) {
            self.kept.add_comm(task, comm);
        }
        self.kept.into_sections()
    }
}

/// The one section of a total summary (`-S`), summed over the CPUs; the histograms
/// with `hist` (--hist).
pub fn total_sections(bpf: &Ebpf, hist: bool) -> Result<Vec<Section>, LoadError> {
    let mut per_key: BTreeMap<StatsKey, SyscallStats> = BTreeMap::new();
    let m: PerCpuHashMap<&MapData, StatsKey, SyscallStats> =
        PerCpuHashMap::try_from(map(bpf, SYSCALL_STATS_TOTAL)?)
            .map_err(bad_map(SYSCALL_STATS_TOTAL))?;
    for (key, values) in m.iter().filter_map(Result::ok) {
        let merged = per_key.entry(key).or_default();
        for v in values.iter() {
            merged.merge(v);
        }
    }
    let hists = if hist {
        let m: PerCpuHashMap<&MapData, StatsKey, SyscallHist> =
            PerCpuHashMap::try_from(map(bpf, SYSCALL_HIST_TOTAL)?)
                .map_err(bad_map(SYSCALL_HIST_TOTAL))?;
        let mut hists: BTreeMap<StatsKey, SyscallHist> = BTreeMap::new();
        for (key, values) in m.iter().filter_map(Result::ok) {
            let merged = hists.entry(key).or_default();
            for v in values.iter() {
                merged.merge(v);
            }
        }
        Some(hists)
    } else {
        None
    };
    let errnos: HashMap<&MapData, ErrnoKey, u64> =
        HashMap::try_from(map(bpf, ERRNO_STATS)?).map_err(bad_map(ERRNO_STATS))?;
    let mut errno_rows: BTreeMap<(TaskKey, u32), Vec<(u32, u64)>> = BTreeMap::new();
    for (k, count) in errnos.iter().filter_map(Result::ok) {
        errno_rows
            .entry((k.task, k.nr))
            .or_default()
            .push((k.errno, count));
    }
    Ok(crate::output::summary::sections_with_hists(
        per_key,
        errno_rows,
        hists,
        true,
        |_| [0; 16],
    ))
}

/// Whether the thread `task` names is still the one running under its tid: its
/// /proc start time (clock ticks since boot) is the same. A tid that is gone, or taken
/// by a newer thread, is not. When in doubt, running: a live thread's row taken out
/// while the kernel writes it would lose that write (and the kernel's pointer to the
/// freed entry may then count into another thread's row).
pub fn still_running(task: TaskKey, ticks_per_sec: u64) -> bool {
    if task.start_ns == 0 {
        // The kernel could not read its start: nothing to compare with.
        return true;
    }
    match procfs::process::Process::new(task.tid as i32).and_then(|p| p.stat()) {
        Ok(stat) if matches!(stat.state, 'Z' | 'X') => false,
        Ok(stat) => same_start(stat.starttime, task.start_ns, ticks_per_sec),
        Err(procfs::ProcError::NotFound(_)) => false,
        Err(_) => true,
    }
}

/// Whether /proc's start times are the kernel's own here: rtrace is in the initial
/// time namespace (whose inode number the kernel fixes, PROC_TIME_INIT_INO), not one
/// of its own whose boot-time offset /proc adds (rtrace's pid namespace being the
/// initial one is the caller's to check). Where they are not, nothing is swept.
pub fn sweep_allowed() -> bool {
    const INITIAL: &str = "time:[4026531834]";
    match std::fs::read_link("/proc/self/ns/time") {
        Ok(link) => link.as_os_str() == INITIAL,
        // No time namespaces (before 5.6): /proc adds nothing.
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// /proc's start time counts the kernel's in ticks, rounded down.
fn same_start(proc_ticks: u64, start_ns: u64, ticks_per_sec: u64) -> bool {
    let ns_per_tick = 1_000_000_000 / ticks_per_sec.max(1);
    proc_ticks == start_ns / ns_per_tick
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_straddling_the_bound_counts_among_the_folded() {
        let task = |tid| TaskKey {
            tid,
            _pad: 0,
            start_ns: 5,
        };
        let row = |tid, nr| StatsKey {
            task: task(tid),
            nr,
            _pad: 0,
        };
        let mut s = SyscallStats::default();
        s.add_call(10, false, true);
        let mut kept = Kept::default();
        for tid in 0..(KEPT_ROWS_MAX as u32 - 1) {
            kept.add_row(row(tid + 100, 0), &s);
        }
        // Thread 7's first row is the last kept apart, its second is folded.
        kept.add_row(row(7, 0), &s);
        kept.add_row(row(7, 1), &s);
        kept.add_comm(task(7), [0; 16]);
        assert!(kept.straddled);
        let (_, folded) = kept.into_sections();
        assert_eq!(folded, 1);
    }

    #[test]
    fn kept_histograms_join_their_rows() {
        let key = StatsKey {
            task: TaskKey {
                tid: 7,
                _pad: 0,
                start_ns: 5,
            },
            nr: 39,
            _pad: 0,
        };
        let mut s = SyscallStats::default();
        s.add_call(1500, false, true);
        let mut h = SyscallHist::default();
        h.add(1500);
        let mut kept = Kept {
            hists: Some(BTreeMap::new()),
            ..Kept::default()
        };
        // Two sweeps of the same thread's row (its numbers moved twice) add up.
        for _ in 0..2 {
            kept.add_row(key, &s);
            kept.add_hist(key, &h);
        }
        kept.add_comm(key.task, [0; 16]);
        let (sections, _) = kept.into_sections();
        let hist = sections[0].rows[0].hist.unwrap();
        assert_eq!((hist.calls(), sections[0].rows[0].stats.calls), (2, 2));
        assert_eq!(hist.buckets[trace_common::stats::hist_bucket(1500)], 2);
    }

    #[test]
    fn start_times_compare_in_ticks() {
        assert!(same_start(123, 1_234_567_890, 100));
        assert!(!same_start(124, 1_234_567_890, 100));
        assert!(same_start(1234, 1_234_567_890, 1000));
    }

    #[test]
    fn kept_rows_merge_and_stop_at_their_bound() {
        let mut kept = Kept::default();
        let key = StatsKey {
            task: TaskKey {
                tid: 7,
                _pad: 0,
                start_ns: 5,
            },
            nr: 0,
            _pad: 0,
        };
        let mut s = SyscallStats::default();
        s.add_call(10, false, true);
        kept.add_row(key, &s);
        kept.add_row(key, &s);
        assert_eq!(kept.rows[&key].calls, 2);
        for tid in 8..(8 + KEPT_ROWS_MAX as u32) {
            kept.add_row(
                StatsKey {
                    task: TaskKey { tid, ..key.task },
                    ..key
                },
                &s,
            );
        }
        // The row past the bound is folded: its own section's, the calls all there.
        assert_eq!(kept.rows.len(), KEPT_ROWS_MAX + 1);
        let folded = StatsKey {
            task: FOLDED,
            ..key
        };
        assert_eq!(kept.rows[&folded].calls, 1);
        let over = TaskKey {
            tid: 8 + KEPT_ROWS_MAX as u32 - 1,
            ..key.task
        };
        kept.add_comm(over, *b"true\0\0\0\0\0\0\0\0\0\0\0\0");
        assert_eq!(kept.folded_threads, 1);
        kept.add_comm(key.task, *b"sh\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
        assert_eq!((kept.folded_threads, kept.comms.len()), (1, 1));
        let (sections, folded) = kept.into_sections();
        assert_eq!(folded, 1);
        let mut text = String::new();
        crate::output::summary::render(&mut text, sections, &Default::default());
        assert!(
            text.contains("\n 1 more threads, together, 2 events, "),
            "{text}"
        );
        assert!(text.contains("\n sh (7), 4 events, "), "{text}");
    }
}
