//! In-kernel aggregation for the summaries: what perf trace -s computes in user space
//! from every record, done here so that a summary costs no ring-buffer traffic.

use aya_ebpf::{
    Global,
    bindings::BPF_NOEXIST,
    macros::map,
    maps::{Array, HashMap, PerCpuHashMap, Queue},
};
use trace_common::{
    maps::COUNTER_STATS_LOST,
    record::InflightCall,
    stats::{
        ERRNO_ENTRIES, ErrnoKey, HIST_BUCKETS, STATS_CACHE, STATS_ENTRIES, STATS_NR_FAULTS,
        STATS_TOTAL_ENTRIES, SUMMARY_AGGREGATE, SUMMARY_ERRNO, SUMMARY_HIST, SUMMARY_RECORDS,
        SUMMARY_TOTAL, StatsKey, SyscallHist, SyscallStats, TaskKey, hist_bucket,
    },
};

use crate::{
    maps::{atomic_fetch_add, bump},
    task::{Ids, kept_start_ns},
};

/// Per thread: where each (thread, syscall)'s numbers are in `syscall_stats`.
#[map(name = "stats_slot")]
static STATS_SLOT: HashMap<StatsKey, u32> = HashMap::with_max_entries(STATS_ENTRIES, 0);

/// Per thread: the numbers, one slot each; a slot is written only by its thread.
#[map(name = "syscall_stats")]
static SYSCALL_STATS: Array<SyscallStats> = Array::with_max_entries(STATS_ENTRIES, 0);

/// Slots user space emptied and zeroed (their threads ended), taken before new ones.
#[map(name = "stats_free")]
static STATS_FREE: Queue<u32> = Queue::with_max_entries(STATS_ENTRIES, 0);

/// The next slot never used.
#[map(name = "stats_next")]
static STATS_NEXT: Array<u64> = Array::with_max_entries(1, 0);

/// Total mode: every thread adds to the same keys, so each CPU keeps its own copy.
#[map(name = "syscall_stats_total")]
static SYSCALL_STATS_TOTAL: PerCpuHashMap<StatsKey, SyscallStats> =
    PerCpuHashMap::with_max_entries(STATS_TOTAL_ENTRIES, 0);

/// `--hist`: each call's log2 bucket, in its row's slot of `syscall_stats`. User space
/// makes it one entry big when no histogram is asked for.
#[map(name = "syscall_hist")]
static SYSCALL_HIST: Array<SyscallHist> = Array::with_max_entries(STATS_ENTRIES, 0);

#[map(name = "syscall_hist_total")]
static SYSCALL_HIST_TOTAL: PerCpuHashMap<StatsKey, SyscallHist> =
    PerCpuHashMap::with_max_entries(STATS_TOTAL_ENTRIES, 0);

/// Never written: a new histogram of total mode is inserted from it, not from the
/// stack.
#[map(name = "hist_zero")]
static HIST_ZERO: Array<SyscallHist> = Array::with_max_entries(1, 0);

#[map(name = "errno_stats")]
static ERRNO_STATS: HashMap<ErrnoKey, u64> = HashMap::with_max_entries(ERRNO_ENTRIES, 0);

#[map(name = "task_comm")]
static TASK_COMM: HashMap<TaskKey, [u8; 16]> = HashMap::with_max_entries(STATS_ENTRIES, 0);

/// The current thread's key: its tid and start time (kept in `storage`, the thread's
/// own, when it has one).
#[inline(always)]
fn task_key(ids: &Ids, storage: Option<&mut InflightCall>) -> TaskKey {
    TaskKey {
        tid: ids.tid,
        _pad: 0,
        start_ns: kept_start_ns(storage),
    }
}

/// The key total mode counts every thread under: all zeros, from a zero that is read,
/// so that it is two stores and not a call to the object's byte-at-a-time `memset`
/// (which `TaskKey::default()` compiles to).
#[inline(always)]
fn no_task() -> TaskKey {
    let zero = 0u64;
    // SAFETY: a read of a live local.
    let z = unsafe { core::ptr::read_volatile(&zero) };
    TaskKey {
        tid: z as u32,
        _pad: z as u32,
        start_ns: z,
    }
}

#[unsafe(no_mangle)]
static SUMMARY_FLAGS: Global<u32> = Global::new(SUMMARY_RECORDS);

#[inline(always)]
pub fn wants_records() -> bool {
    SUMMARY_FLAGS.load() & SUMMARY_RECORDS != 0
}

/// One syscall seen: `dur_ns` 0 and `entry_seen` false for a return without its entry;
/// `returned` false for an entry that never returns (exit, exit_group). `storage` is the
/// thread's own, where it has one.
#[inline(always)]
pub fn account(
    ids: &Ids,
    mut storage: Option<&mut InflightCall>,
    nr: u32,
    dur_ns: u64,
    ret: i64,
    entry_seen: bool,
    returned: bool,
) {
    let flags = SUMMARY_FLAGS.load();
    if flags & SUMMARY_AGGREGATE == 0 {
        return;
    }
    let total = flags & SUMMARY_TOTAL != 0;
    let key = StatsKey {
        task: if total {
            no_task()
        } else {
            task_key(ids, storage.as_deref_mut())
        },
        nr,
        _pad: 0,
    };
    let failed = returned && (-4095..0).contains(&ret);
    let entry = if total {
        total_entry(&key).map(|p| (None, p))
    } else {
        thread_entry(&key, storage).map(|(slot, p)| (Some(slot), p))
    };
    let Some((slot, p)) = entry else {
        bump(COUNTER_STATS_LOST);
        return;
    };
    // SAFETY: a live value; only this thread (its slot) or this CPU (per-CPU map)
    // writes it.
    let s = unsafe { &mut *p };
    if returned {
        s.add_call(dur_ns, failed, entry_seen);
    } else {
        s.enter_only += 1;
    }
    if returned && flags & SUMMARY_HIST != 0 {
        count_hist(key, slot, dur_ns);
    }
    if failed && flags & SUMMARY_ERRNO != 0 {
        count_errno(ErrnoKey {
            task: key.task,
            nr,
            errno: (-ret) as u32,
        });
    }
}

/// The thread's slot for `key` and its numbers there: from the slots its storage
/// keeps, or else from `stats_slot` (kept in the storage after), or else a new slot.
#[inline(always)]
fn thread_entry(
    key: &StatsKey,
    storage: Option<&mut InflightCall>,
) -> Option<(u32, *mut SyscallStats)> {
    let way = key.nr as usize % STATS_CACHE;
    let tagged =
        |s: &InflightCall| s.stats_tid == key.task.tid && s.stats_start_ns == key.task.start_ns;
    if let Some(s) = storage.as_deref()
        && tagged(s)
        && s.stats_nr[way] == key.nr.wrapping_add(1)
    {
        let slot = s.stats_slot[way];
        return Some((slot, SYSCALL_STATS.get_ptr_mut(slot)?));
    }
    // SAFETY: a u32 value, copied.
    let slot = match unsafe { STATS_SLOT.get(key) } {
        Some(slot) => *slot,
        None => new_slot(key)?,
    };
    if let Some(s) = storage {
        if !tagged(s) {
            // Element by element: `[0; STATS_CACHE]` is a call to the object's memset.
            for nr in s.stats_nr.iter_mut() {
                *nr = 0;
            }
            s.stats_tid = key.task.tid;
            s.stats_start_ns = key.task.start_ns;
        }
        s.stats_nr[way] = key.nr.wrapping_add(1);
        s.stats_slot[way] = slot;
    }
    Some((slot, SYSCALL_STATS.get_ptr_mut(slot)?))
}

/// A slot for a new (thread, syscall): one user space emptied, or else the next never
/// used; none when `syscall_stats` is full.
#[inline(always)]
fn new_slot(key: &StatsKey) -> Option<u32> {
    let slot = match STATS_FREE.pop() {
        Ok(Some(slot)) => slot,
        _ => {
            let next = STATS_NEXT.get_ptr_mut(0)?;
            // SAFETY: a live u64 map value; other CPUs take slots too.
            let slot = unsafe { atomic_fetch_add(next, 1) };
            u32::try_from(slot).ok()?
        }
    };
    // Past the array's end (user space sizes it): full.
    SYSCALL_STATS.get_ptr_mut(slot)?;
    if STATS_SLOT.insert(key, slot, BPF_NOEXIST as u64).is_err() {
        let _ = STATS_FREE.push(slot, 0);
        return None;
    }
    let _ = TASK_COMM.insert(key.task, crate::task::current_comm(), 0);
    Some(slot)
}

/// Total mode: this CPU's numbers for `key`, made zero when new (by this CPU or, at
/// once, by another: the key is shared, the values are each CPU's own).
#[inline(always)]
fn total_entry(key: &StatsKey) -> Option<*mut SyscallStats> {
    if let Some(p) = SYSCALL_STATS_TOTAL.get_ptr_mut(key) {
        return Some(p);
    }
    let _ = SYSCALL_STATS_TOTAL.insert(key, SyscallStats::default(), BPF_NOEXIST as u64);
    SYSCALL_STATS_TOTAL.get_ptr_mut(key)
}

/// One page fault of `kind` (`record::FAULT_MIN`/`FAULT_MAJ`), counted in the thread's
/// numbers under a number no syscall has. Not in total mode: perf's total summary
/// counts syscalls only.
#[inline(always)]
pub fn account_fault(ids: &Ids, kind: u32) {
    let flags = SUMMARY_FLAGS.load();
    if flags & SUMMARY_AGGREGATE == 0 || flags & SUMMARY_TOTAL != 0 {
        return;
    }
    let key = StatsKey {
        task: task_key(ids, None),
        nr: STATS_NR_FAULTS[(kind & 1) as usize],
        _pad: 0,
    };
    match thread_entry(&key, None) {
        // SAFETY: a live value that only this thread writes.
        Some((_, p)) => unsafe { (*p).calls += 1 },
        None => bump(COUNTER_STATS_LOST),
    }
}

/// Counts one call of `dur_ns` in its row's histogram: the thread's `slot` (written by
/// this thread only), or in total mode (`slot` none) this CPU's entry for `key`.
#[inline(always)]
fn count_hist(key: StatsKey, slot: Option<u32>, dur_ns: u64) {
    let p = match slot {
        Some(slot) => SYSCALL_HIST.get_ptr_mut(slot),
        None => total_hist(&key),
    };
    let Some(p) = p else {
        bump(COUNTER_STATS_LOST);
        return;
    };
    // The bucket, masked in the register the access uses: 6.1's verifier follows
    // hist_bucket's steps down a path that cannot be taken, with bounds that cross
    // (umin above umax), and refuses the access ("R0 invalid mem access 'scalar'").
    let mut i = hist_bucket(dur_ns) as u64;
    // SAFETY: arithmetic on a register, nothing else.
    unsafe { core::arch::asm!("{0} &= 63", inout(reg) i) };
    if i < HIST_BUCKETS as u64 {
        // SAFETY: a live value, written by this thread or CPU only (see above); the
        // index is below the array's length.
        unsafe { (*p).buckets[i as usize] += 1 };
    }
}

/// Total mode: this CPU's histogram for `key`, made zero when new (as `total_entry`).
#[inline(always)]
fn total_hist(key: &StatsKey) -> Option<*mut SyscallHist> {
    if let Some(p) = SYSCALL_HIST_TOTAL.get_ptr_mut(key) {
        return Some(p);
    }
    let zero = HIST_ZERO.get(0)?;
    let _ = SYSCALL_HIST_TOTAL.insert(key, zero, BPF_NOEXIST as u64);
    SYSCALL_HIST_TOTAL.get_ptr_mut(key)
}

#[inline(always)]
fn count_errno(key: ErrnoKey) {
    if let Some(p) = ERRNO_STATS.get_ptr_mut(key) {
        // SAFETY: atomic add to a live value (other CPUs may add to it in total mode).
        unsafe { crate::maps::atomic_add(p, 1) };
        return;
    }
    if ERRNO_STATS.insert(key, 1u64, BPF_NOEXIST as u64).is_ok() {
        return;
    }
    // Another CPU made it first, or the map is full.
    match ERRNO_STATS.get_ptr_mut(key) {
        // SAFETY: as above.
        Some(p) => unsafe { crate::maps::atomic_add(p, 1) },
        None => bump(COUNTER_STATS_LOST),
    }
}
