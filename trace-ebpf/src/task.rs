//! Who the current task is, in rtrace's pid namespace, and whether it is a target.

use aya_ebpf::{
    bindings::bpf_pidns_info,
    helpers::{
        bpf_get_current_pid_tgid, bpf_get_current_uid_gid, generated,
        generated::{bpf_get_current_ancestor_cgroup_id, bpf_get_current_task_btf},
    },
};
use trace_common::{
    maps::TRACE_ON,
    record::{InflightCall, comm_words_padded},
};

use crate::maps::{
    CGROUP_ID, CGROUP_LEVEL, FILTER_UID, INFLIGHT, KEY_BY_TID, PIDNS_DEV, PIDNS_INO, PIDS_FILTERED,
    PIDS_TO_TRACE, TASK_COMM_OFF, TASK_START_OFF, TRACE_ALL, pid_maps_gen,
};

/// When the current task started (`task_struct.start_boottime`, ns since boot), or 0
/// where it cannot be read. The summaries key a thread by it with its tid.
#[inline(always)]
pub fn current_start_ns() -> u64 {
    // SAFETY: the current task is live while its program runs; the probe read of a
    // u64 at the offset the kernel's BTF gave fails cleanly on a bad address.
    unsafe {
        let task = aya_ebpf::helpers::bpf_get_current_task() as *const u8;
        aya_ebpf::helpers::bpf_probe_read_kernel(
            task.add(TASK_START_OFF.load() as usize).cast::<u64>(),
        )
        .unwrap_or(0)
    }
}

/// As `current_start_ns`, from the task's storage where it was read before: the read
/// is a helper call, about 7 % of a getppid storm's time under `-s` on an AMD host.
#[inline(always)]
pub fn kept_start_ns(storage: Option<&mut InflightCall>) -> u64 {
    match storage {
        Some(s) if s.start_ns != 0 => s.start_ns,
        Some(s) => {
            s.start_ns = current_start_ns();
            s.start_ns
        }
        None => current_start_ns(),
    }
}

/// The current task's name (`comm`), zero after its NUL (see `write_current_comm`).
#[inline(always)]
pub fn current_comm() -> [u8; 16] {
    let mut comm = [0u64; 2];
    // SAFETY: 16 writable bytes.
    unsafe { write_current_comm(comm.as_mut_ptr().cast()) };
    // SAFETY: 16 bytes of plain integers.
    unsafe { core::mem::transmute::<[u64; 2], [u8; 16]>(comm) }
}

/// Writes the current task's name into the 16 bytes at `dst` (a ring-buffer
/// reservation, or a local), with zeros after its NUL (`comm_words_padded`).
///
/// The name is two loads from the task, through the kernel's BTF-typed pointer to it:
/// the verifier knows the offset (a frozen `.rodata` value) and checks it against
/// `task_struct`, where `comm` is a 16-byte array, and the JIT makes the loads fault-safe.
/// `bpf_get_current_comm`, which copied it before, took the name's bytes one by one and
/// then padded them: about 30 ns a record on an AMD EPYC host, where a getppid takes 200.
/// A rename racing with the loads may be seen half done, as it could with the helper,
/// which takes no lock either.
///
/// # Safety
/// `dst` must point to 16 writable bytes, 8-byte aligned.
#[inline(always)]
pub unsafe fn write_current_comm(dst: *mut u8) {
    // SAFETY: the current task is live while its program runs; the offset is that of
    // its `comm`, 16 bytes; the writes are as the caller promises.
    unsafe {
        let task = bpf_get_current_task_btf() as *const u8;
        let comm = task.add(TASK_COMM_OFF.load() as usize).cast::<u64>();
        let [lo, hi] = comm_words_padded(
            core::ptr::read_volatile(comm),
            core::ptr::read_volatile(comm.add(1)),
        );
        core::ptr::write_volatile(dst.cast::<u64>(), lo);
        core::ptr::write_volatile(dst.cast::<u64>().add(1), hi);
    }
}

/// Thread id and process id as rtrace's pid namespace numbers them.
#[derive(Clone, Copy)]
pub struct Ids {
    pub tid: u32,
    pub pid: u32,
}

impl Ids {
    /// The key of this task in `pids_to_trace`.
    #[inline(always)]
    pub fn trace_key(&self) -> u32 {
        if KEY_BY_TID.load() != 0 {
            self.tid
        } else {
            self.pid
        }
    }
}

/// The current task's ids. In the initial namespace these are the kernel's own; in
/// another (rtrace in a container) the namespace's, and `None` for a task the
/// namespace cannot see.
#[inline(always)]
pub fn current_ids() -> Option<Ids> {
    let ino = PIDNS_INO.load();
    if ino == 0 {
        let v = bpf_get_current_pid_tgid();
        return Some(Ids {
            tid: v as u32,
            pid: (v >> 32) as u32,
        });
    }
    let mut info = bpf_pidns_info { pid: 0, tgid: 0 };
    // SAFETY: info is a valid, correctly sized out-parameter.
    let err = unsafe {
        generated::bpf_get_ns_current_pid_tgid(
            PIDNS_DEV.load(),
            ino,
            &mut info,
            core::mem::size_of::<bpf_pidns_info>() as u32,
        )
    };
    (err == 0).then_some(Ids {
        tid: info.pid,
        pid: info.tgid,
    })
}

/// The `pids_to_trace` flags of a task to report, or `None`: not a target, or filtered.
#[inline(always)]
pub fn target_flags(ids: &Ids) -> Option<u32> {
    let flags = listed(ids)?;
    passes_live_filters().then_some(flags)
}

/// As `target_flags`, for a task whose syscall storage may hold what the pid maps said
/// of it: asked again only when the maps have changed since, which saves two hash
/// lookups on every call of a traced task. `storage` is the task's, if it
/// has one; a task without one gets one when it is a target, so that its next call
/// finds the answer there.
#[inline(always)]
pub fn target_flags_kept(
    ids: &Ids,
    storage: &mut Option<&'static mut InflightCall>,
) -> Option<u32> {
    // Read before the maps: a change made after this read moves the count, and the
    // answer kept under the old count is not used again.
    let now = pid_maps_gen();
    // Every value set on every path: 6.1's verifier follows paths newer ones know to
    // be dead (a failed array lookup), and refuses a register left undefined on them.
    let mut is_listed = false;
    let mut flags = 0u32;
    let mut kept = false;
    if now != 0
        && let Some(s) = storage.as_deref()
        && s.listed_gen == now
    {
        is_listed = s.listed != 0;
        flags = s.listed_flags;
        kept = true;
    }
    if !kept {
        if let Some(f) = listed(ids) {
            is_listed = true;
            flags = f;
            if lacks(storage) {
                *storage = INFLIGHT.current(true);
            }
        }
        if now != 0
            && let Some(s) = storage.as_deref_mut()
        {
            s.listed_gen = now;
            s.listed = is_listed as u32;
            s.listed_flags = flags;
        }
    }
    (is_listed && passes_live_filters()).then_some(flags)
}

/// Whether the task has no storage yet, asked so that the compiler cannot fold the test
/// into `listed`'s test of its map value: it made the two null tests one `or` of the
/// two pointers, which the verifier refuses ("pointer |= pointer prohibited"), once the
/// entry looked the storage up before the maps. The `asm` hides what the value
/// is (a comment, no instruction), and it cannot be moved before the branch it is in.
#[inline(always)]
fn lacks(storage: &Option<&'static mut InflightCall>) -> bool {
    let mut p = storage
        .as_deref()
        .map_or(core::ptr::null(), core::ptr::from_ref);
    // SAFETY: a template that is only a comment: no instruction, the register
    // unchanged.
    unsafe { core::arch::asm!("/* {0} */", inout(reg) p) };
    p.is_null()
}

/// What the pid maps say of a task: its flags, or `None`.
#[inline(always)]
fn listed(ids: &Ids) -> Option<u32> {
    let flags = if TRACE_ALL.load() != 0 {
        TRACE_ON
    } else {
        // SAFETY: u32 values are read whole; a racing delete can only make us read a
        // stale copy, never a torn one.
        *unsafe { PIDS_TO_TRACE.get(ids.trace_key()) }?
    };
    // SAFETY: as above.
    if unsafe { PIDS_FILTERED.get(ids.pid) }.is_some() {
        return None;
    }
    Some(flags)
}

/// `-u` and `--cgroup`: asked at every call, as a task's uid and cgroup can change
/// without the pid maps knowing.
#[inline(always)]
fn passes_live_filters() -> bool {
    if TRACE_ALL.load() != 0 {
        let uid = FILTER_UID.load();
        if uid != u32::MAX && bpf_get_current_uid_gid() as u32 != uid {
            return false;
        }
    }
    let cgroup = CGROUP_ID.load();
    // SAFETY: the helper has no preconditions; a level below the task's own gives 0.
    cgroup == 0
        || unsafe { bpf_get_current_ancestor_cgroup_id(CGROUP_LEVEL.load() as i32) } == cgroup
}
