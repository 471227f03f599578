//! In-kernel syscall statistics for the summaries (`-s`, `-S`): one entry per
//! (thread, syscall), or per syscall in total mode, read once by user space at the end.

/// `SUMMARY_FLAGS` global bits.
pub const SUMMARY_RECORDS: u32 = 1;
/// Aggregate into the stats maps.
pub const SUMMARY_AGGREGATE: u32 = 2;
/// Aggregate per syscall for all threads together (per-CPU map) instead of per thread.
pub const SUMMARY_TOTAL: u32 = 4;
/// Also count each errno per syscall.
pub const SUMMARY_ERRNO: u32 = 8;
/// Also count each call's duration in its log2 bucket ([`SyscallHist`], `--hist`).
pub const SUMMARY_HIST: u32 = 16;

/// `StatsKey::nr` of a thread's page-fault counts (`-F` with a summary), indexed by
/// `record::FAULT_MIN`/`FAULT_MAJ`: only `calls` is used. No syscall has these numbers.
pub const STATS_NR_FAULTS: [u32; 2] = [0xffff_fff0, 0xffff_fff1];

/// Per thread: hash map [`StatsKey`] -> the entry's slot (u32) in [`SYSCALL_STATS`].
pub const STATS_SLOT: &str = "stats_slot";
/// Per thread: array of [`SyscallStats`], one per slot. A thread's calls find their
/// slot in the thread's own `InflightCall` (its last few), or else in [`STATS_SLOT`].
pub const SYSCALL_STATS: &str = "syscall_stats";
/// Queue of the slots user space has emptied (the numbers of threads that ended,
/// moved out and zeroed): a new entry takes one of them before a slot never used.
pub const STATS_FREE: &str = "stats_free";
/// Array of one u64: the next slot never used (taken with an atomic add).
pub const STATS_NEXT: &str = "stats_next";
/// How many of a thread's entries its `InflightCall` keeps.
pub const STATS_CACHE: usize = 4;
/// Total mode: per-CPU hash map of [`SyscallStats`].
pub const SYSCALL_STATS_TOTAL: &str = "syscall_stats_total";
/// Per thread: array of [`SyscallHist`], in the rows' slots of [`SYSCALL_STATS`]; total
/// mode: per-CPU hash map of them under `syscall_stats_total`'s keys. User space makes
/// them one entry big unless `--hist`.
pub const SYSCALL_HIST: &str = "syscall_hist";
pub const SYSCALL_HIST_TOTAL: &str = "syscall_hist_total";
/// Array of one [`SyscallHist`] that stays zero: what a new histogram entry is copied
/// from (a 320-byte value would not fit the programs' stack next to the rest).
pub const HIST_ZERO: &str = "hist_zero";
/// Hash map [`ErrnoKey`] -> u64 count.
pub const ERRNO_STATS: &str = "errno_stats";
/// Hash map [`TaskKey`] -> comm, written each time a new stats entry of the thread is
/// made (so the name it had then).
pub const TASK_COMM: &str = "task_comm";

/// The default size of the per-thread maps (`stats_slot`, `syscall_stats`,
/// `stats_free`, `errno_stats`, `task_comm`) when a summary is asked for; user space
/// sets them to 1 entry otherwise.
pub const STATS_ENTRIES: u32 = 65536;
pub const STATS_TOTAL_ENTRIES: u32 = 1024;
pub const ERRNO_ENTRIES: u32 = STATS_ENTRIES;

/// One thread's life: its id and when it started. A tid is reused once its thread has
/// exited (within seconds where processes churn and pid_max is small): the start time
/// keeps the new thread's numbers apart from the old one's.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskKey {
    /// Thread id in rtrace's pid namespace; 0 in total mode.
    pub tid: u32,
    pub _pad: u32,
    /// `task_struct.start_boottime` (ns since boot, what /proc's start time counts in
    /// clock ticks); 0 in total mode.
    pub start_ns: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StatsKey {
    pub task: TaskKey,
    pub nr: u32,
    pub _pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ErrnoKey {
    pub task: TaskKey,
    pub nr: u32,
    pub errno: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyscallStats {
    /// Returns seen (with or without their entry).
    pub calls: u64,
    pub errors: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Sum of squared durations, as a 128-bit number (lo, hi) so that it cannot
    /// overflow; the variance comes from it and `total_ns` at the end.
    pub sq_lo: u64,
    pub sq_hi: u64,
    /// Returns whose entry was not seen (counted with a duration of 0, as perf does).
    pub exit_only: u64,
    /// Entries that never return (exit, exit_group).
    pub enter_only: u64,
}

/// Buckets of a [`SyscallHist`]: 0 ns, then [2^(i-1), 2^i) ns for bucket i, the last
/// one open-ended (from 2^38 ns, about 275 s).
pub const HIST_BUCKETS: usize = 40;

/// How many calls of a (thread, syscall) took each power of two of nanoseconds
/// (bpftrace's `hist()`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyscallHist {
    pub buckets: [u64; HIST_BUCKETS],
}

impl Default for SyscallHist {
    fn default() -> Self {
        Self {
            buckets: [0; HIST_BUCKETS],
        }
    }
}

/// The bucket of a call of `ns`: its bit length (64 - leading zeros, so 0 for 0 and
/// i for [2^(i-1), 2^i)), at most the last bucket. Halving by compare and shift, as
/// bpftrace's `hist()` does, because BPF has no count-leading-zeros instruction; the
/// kernel side and the replay both count with it.
#[inline(always)]
pub fn hist_bucket(ns: u64) -> usize {
    let mut v = ns;
    let mut bits = 0usize;
    if v >> 32 != 0 {
        v >>= 32;
        bits += 32;
    }
    if v >> 16 != 0 {
        v >>= 16;
        bits += 16;
    }
    if v >> 8 != 0 {
        v >>= 8;
        bits += 8;
    }
    if v >> 4 != 0 {
        v >>= 4;
        bits += 4;
    }
    if v >> 2 != 0 {
        v >>= 2;
        bits += 2;
    }
    if v >> 1 != 0 {
        v >>= 1;
        bits += 1;
    }
    // v is now 0 (ns was 0) or 1.
    bits += v as usize;
    if bits < HIST_BUCKETS {
        bits
    } else {
        HIST_BUCKETS - 1
    }
}

impl SyscallHist {
    /// Counts one call of `ns`.
    #[inline(always)]
    pub fn add(&mut self, ns: u64) {
        let b = hist_bucket(ns);
        if let Some(c) = self.buckets.get_mut(b) {
            *c += 1;
        }
    }

    /// Folds another CPU's (or thread's) counts into these.
    pub fn merge(&mut self, o: &SyscallHist) {
        for (a, b) in self.buckets.iter_mut().zip(o.buckets.iter()) {
            *a += b;
        }
    }

    pub fn calls(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

const _: () = assert!(core::mem::size_of::<SyscallHist>() == 8 * HIST_BUCKETS);
const _: () = assert!(core::mem::size_of::<TaskKey>() == 16);
const _: () = assert!(core::mem::size_of::<StatsKey>() == 24);
const _: () = assert!(core::mem::size_of::<ErrnoKey>() == 24);
const _: () = assert!(core::mem::size_of::<SyscallStats>() == 72);

impl SyscallStats {
    /// Adds one returned call of `dur_ns` (0 when its entry was not seen).
    #[inline(always)]
    pub fn add_call(&mut self, dur_ns: u64, failed: bool, entry_seen: bool) {
        if self.calls == 0 || dur_ns < self.min_ns {
            self.min_ns = dur_ns;
        }
        if dur_ns > self.max_ns {
            self.max_ns = dur_ns;
        }
        self.calls += 1;
        self.errors += failed as u64;
        self.exit_only += !entry_seen as u64;
        self.total_ns += dur_ns;
        // d = hi·2^32 + lo; d² = hi²·2^64 + hi·lo·2^33 + lo², each part within u64.
        let hi = dur_ns >> 32;
        let lo = dur_ns & 0xffff_ffff;
        let lo2 = lo * lo;
        let mid = hi * lo;
        let (s, c1) = self.sq_lo.overflowing_add(lo2);
        let (s, c2) = s.overflowing_add(mid << 33);
        self.sq_lo = s;
        self.sq_hi = self
            .sq_hi
            .wrapping_add(hi * hi)
            .wrapping_add(mid >> 31)
            .wrapping_add(c1 as u64)
            .wrapping_add(c2 as u64);
    }

    pub fn sum_sq(&self) -> u128 {
        (u128::from(self.sq_hi) << 64) | u128::from(self.sq_lo)
    }

    /// Folds another CPU's (or thread's) numbers into these.
    pub fn merge(&mut self, o: &SyscallStats) {
        if o.calls > 0 && (self.calls == 0 || o.min_ns < self.min_ns) {
            self.min_ns = o.min_ns;
        }
        self.max_ns = self.max_ns.max(o.max_ns);
        self.calls += o.calls;
        self.errors += o.errors;
        self.total_ns += o.total_ns;
        self.exit_only += o.exit_only;
        self.enter_only += o.enter_only;
        let sum = self.sum_sq().wrapping_add(o.sum_sq());
        self.sq_lo = sum as u64;
        self.sq_hi = (sum >> 64) as u64;
    }

    /// perf's event count: an entry and an exit event per call, one for a call seen
    /// only at one end.
    pub fn events(&self) -> u64 {
        2 * self.calls - self.exit_only + self.enter_only
    }
}

// SAFETY: plain #[repr(C)] integers without padding holes; any bit pattern is valid.
#[cfg(feature = "user")]
unsafe impl aya::Pod for TaskKey {}
// SAFETY: as above.
#[cfg(feature = "user")]
unsafe impl aya::Pod for StatsKey {}
// SAFETY: as above.
#[cfg(feature = "user")]
unsafe impl aya::Pod for ErrnoKey {}
// SAFETY: as above.
#[cfg(feature = "user")]
unsafe impl aya::Pod for SyscallStats {}
// SAFETY: as above.
#[cfg(feature = "user")]
unsafe impl aya::Pod for SyscallHist {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squares_do_not_overflow() {
        let mut s = SyscallStats::default();
        let big = 5_000_000_000u64; // 5 s: its square is past u64
        for _ in 0..1000 {
            s.add_call(big, false, true);
        }
        assert_eq!(s.sum_sq(), 1000 * u128::from(big) * u128::from(big));
        assert_eq!((s.calls, s.min_ns, s.max_ns), (1000, big, big));
    }

    #[test]
    fn hist_bucket_is_the_bit_length_capped() {
        assert_eq!(hist_bucket(0), 0);
        assert_eq!(hist_bucket(1), 1);
        assert_eq!(hist_bucket(2), 2);
        assert_eq!(hist_bucket(3), 2);
        assert_eq!(hist_bucket(1023), 10);
        assert_eq!(hist_bucket(1024), 11);
        assert_eq!(hist_bucket(1_000_000), 20);
        assert_eq!(hist_bucket(1 << 20), 21);
        assert_eq!(hist_bucket(u64::MAX), HIST_BUCKETS - 1);
        // Every power of two and its neighbours, against the instruction's answer.
        for shift in 0..64 {
            for ns in [(1u64 << shift) - 1, 1u64 << shift, (1u64 << shift) + 1] {
                let want = ((64 - ns.leading_zeros()) as usize).min(HIST_BUCKETS - 1);
                assert_eq!(hist_bucket(ns), want, "{ns}");
            }
        }
    }

    #[test]
    fn hist_counts_and_merges() {
        let mut a = SyscallHist::default();
        a.add(0);
        a.add(1500);
        a.add(1900);
        let mut b = SyscallHist::default();
        b.add(1 << 50);
        a.merge(&b);
        assert_eq!(a.calls(), 4);
        assert_eq!(
            (a.buckets[0], a.buckets[11], a.buckets[HIST_BUCKETS - 1]),
            (1, 2, 1)
        );
    }

    #[test]
    fn small_values_and_merge() {
        let mut a = SyscallStats::default();
        a.add_call(3, true, true);
        a.add_call(0, false, false);
        let mut b = SyscallStats::default();
        b.add_call(7, false, true);
        a.merge(&b);
        assert_eq!(a.sum_sq(), 9 + 49);
        assert_eq!(
            (a.calls, a.errors, a.min_ns, a.max_ns, a.total_ns),
            (3, 1, 0, 7, 10)
        );
        assert_eq!(a.events(), 2 * 3 - 1);
    }
}
