//! Who the current task is, in rtrace's pid namespace, and whether it is a target.

use aya_ebpf::{
    bindings::bpf_pidns_info,
    helpers::{
        bpf_get_current_pid_tgid, bpf_get_current_uid_gid, generated,
        generated::bpf_get_current_ancestor_cgroup_id,
    },
};
use trace_common::maps::TRACE_ON;

use crate::maps::{
    CGROUP_ID, CGROUP_LEVEL, FILTER_UID, KEY_BY_TID, PIDNS_DEV, PIDNS_INO, PIDS_FILTERED,
    PIDS_TO_TRACE, TASK_START_OFF, TRACE_ALL,
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
    let flags = if TRACE_ALL.load() != 0 {
        let uid = FILTER_UID.load();
        if uid != u32::MAX && bpf_get_current_uid_gid() as u32 != uid {
            return None;
        }
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
    let cgroup = CGROUP_ID.load();
    // SAFETY: the helper has no preconditions; a level below the task's own gives 0.
    if cgroup != 0
        && unsafe { bpf_get_current_ancestor_cgroup_id(CGROUP_LEVEL.load() as i32) } != cgroup
    {
        return None;
    }
    Some(flags)
}
