//! In-kernel aggregation for the summaries: what perf trace -s computes in user space
//! from every record, done here so that a summary costs no ring-buffer traffic.

use aya_ebpf::{
    Global,
    bindings::BPF_NOEXIST,
    macros::map,
    maps::{Array, HashMap, PerCpuHashMap},
};
use trace_common::{
    maps::COUNTER_STATS_LOST,
    record::InflightCall,
    stats::{
        ERRNO_ENTRIES, ErrnoKey, HIST_BUCKETS, STATS_ENTRIES, STATS_NR_FAULTS, STATS_TOTAL_ENTRIES,
        SUMMARY_AGGREGATE, SUMMARY_ERRNO, SUMMARY_HIST, SUMMARY_RECORDS, SUMMARY_TOTAL, StatsKey,
        SyscallHist, SyscallStats, TaskKey, hist_bucket,
    },
};

use crate::{
    maps::bump,
    task::{Ids, kept_start_ns},
};

#[map(name = "syscall_stats")]
static SYSCALL_STATS: HashMap<StatsKey, SyscallStats> = HashMap::with_max_entries(STATS_ENTRIES, 0);

/// Total mode: every thread adds to the same keys, so each CPU keeps its own copy.
#[map(name = "syscall_stats_total")]
static SYSCALL_STATS_TOTAL: PerCpuHashMap<StatsKey, SyscallStats> =
    PerCpuHashMap::with_max_entries(STATS_TOTAL_ENTRIES, 0);

/// `--hist`: each call's log2 bucket, under `syscall_stats`' keys. User space makes
/// these one entry big when no histogram is asked for.
#[map(name = "syscall_hist")]
static SYSCALL_HIST: HashMap<StatsKey, SyscallHist> = HashMap::with_max_entries(STATS_ENTRIES, 0);

#[map(name = "syscall_hist_total")]
static SYSCALL_HIST_TOTAL: PerCpuHashMap<StatsKey, SyscallHist> =
    PerCpuHashMap::with_max_entries(STATS_TOTAL_ENTRIES, 0);

/// Never written: a new histogram is inserted from it, not from the stack.
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
    storage: Option<&mut InflightCall>,
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
            task_key(ids, storage)
        },
        nr,
        _pad: 0,
    };
    let failed = returned && (-4095..0).contains(&ret);
    let map_ptr = if total {
        SYSCALL_STATS_TOTAL.get_ptr_mut(key)
    } else {
        SYSCALL_STATS.get_ptr_mut(key)
    };
    match map_ptr {
        Some(p) => {
            // SAFETY: a live value; only this thread (per-thread map) or this CPU
            // (per-CPU map) writes it.
            let s = unsafe { &mut *p };
            if returned {
                s.add_call(dur_ns, failed, entry_seen);
            } else {
                s.enter_only += 1;
            }
        }
        None => {
            let mut s = SyscallStats::default();
            if returned {
                s.add_call(dur_ns, failed, entry_seen);
            } else {
                s.enter_only = 1;
            }
            let inserted = if total {
                SYSCALL_STATS_TOTAL.insert(key, s, BPF_NOEXIST as u64)
            } else {
                SYSCALL_STATS.insert(key, s, BPF_NOEXIST as u64)
            };
            if inserted.is_err() {
                bump(COUNTER_STATS_LOST);
                return;
            }
            if !total {
                let _ = TASK_COMM.insert(key.task, crate::task::current_comm(), 0);
            }
        }
    }
    if returned && flags & SUMMARY_HIST != 0 {
        count_hist(key, dur_ns, total);
    }
    if failed && flags & SUMMARY_ERRNO != 0 {
        count_errno(ErrnoKey {
            task: key.task,
            nr,
            errno: (-ret) as u32,
        });
    }
}

/// One page fault of `kind` (`record::FAULT_MIN`/`FAULT_MAJ`), counted in the thread's
/// entry of `syscall_stats` under a number no syscall has. Not in total mode: perf's
/// total summary counts syscalls only.
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
    if let Some(p) = SYSCALL_STATS.get_ptr_mut(key) {
        // SAFETY: a live value that only this thread writes.
        unsafe { (*p).calls += 1 };
        return;
    }
    let s = SyscallStats {
        calls: 1,
        ..SyscallStats::default()
    };
    if SYSCALL_STATS.insert(key, s, BPF_NOEXIST as u64).is_err() {
        bump(COUNTER_STATS_LOST);
        return;
    }
    let _ = TASK_COMM.insert(key.task, crate::task::current_comm(), 0);
}

/// Counts one call of `dur_ns` in its (thread, syscall)'s histogram. Only this thread
/// (per-thread map) or this CPU (per-CPU map) writes an entry, as for the stats.
#[inline(always)]
fn count_hist(key: StatsKey, dur_ns: u64, total: bool) {
    let map_ptr = if total {
        SYSCALL_HIST_TOTAL.get_ptr_mut(key)
    } else {
        SYSCALL_HIST.get_ptr_mut(key)
    };
    let p = match map_ptr {
        Some(p) => p,
        None => {
            let Some(zero) = HIST_ZERO.get(0) else {
                return;
            };
            let inserted = if total {
                SYSCALL_HIST_TOTAL.insert(key, zero, BPF_NOEXIST as u64)
            } else {
                SYSCALL_HIST.insert(key, zero, BPF_NOEXIST as u64)
            };
            let again = if total {
                SYSCALL_HIST_TOTAL.get_ptr_mut(key)
            } else {
                SYSCALL_HIST.get_ptr_mut(key)
            };
            match (inserted, again) {
                (_, Some(p)) => p,
                _ => {
                    bump(COUNTER_STATS_LOST);
                    return;
                }
            }
        }
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
