//! Whether a task sees the file system as rtrace does: the same mount namespace and
//! the same root directory. The reader shows an open's path canonical (symbolic links
//! resolved, as /proc names the fd) only then, and it needs the answer as it was when
//! the call was made: a short-lived child is gone long before its records are read,
//! and /proc can no longer say.
//!
//! rtrace's own view is learnt once: `learn_view` reads the current task's
//! `nsproxy->mnt_ns` and `fs->root` pointers into `RTRACE_VIEW`, and rtrace runs it
//! itself (BPF_PROG_TEST_RUN runs a raw-tracepoint program in the caller's task). At
//! a `CLASS_PATH_VIEW` call's exit the same pointers of the calling task are compared
//! with those: equal pointers are the same namespace and the same directory on the
//! same mount, nothing guessed. Each step is a probe read at the offset the loader
//! found in the kernel's BTF.

use aya_ebpf::{
    helpers::{bpf_get_current_task, bpf_probe_read_kernel},
    macros::{map, raw_tracepoint},
    maps::Array,
    programs::RawTracePointContext,
};
use trace_common::{
    maps::{CLASS_PATH_VIEW, VIEW_SLOTS},
    record::{REC_SAME_VIEW, REC_VIEW_KNOWN},
};

use crate::maps::{
    FS_ROOT_DENTRY_OFF, FS_ROOT_MNT_OFF, NSPROXY_MNT_NS_OFF, TASK_FS_OFF, TASK_NSPROXY_OFF,
};

/// `trace_common::maps::RTRACE_VIEW`.
#[map(name = "rtrace_view")]
static RTRACE_VIEW: Array<u64> = Array::with_max_entries(VIEW_SLOTS, 0);

/// The kernel word at `base + off`.
#[inline(always)]
fn word_at(base: u64, off: u32) -> Option<u64> {
    // SAFETY: a probe read; a bad address makes the helper fail, never fault.
    unsafe { bpf_probe_read_kernel((base + off as u64) as *const u64) }.ok()
}

/// The current task's mount namespace, root mount and root dentry; None when a read
/// fails or the offsets are unknown.
#[inline(always)]
fn current_view() -> Option<[u64; 3]> {
    if TASK_FS_OFF.load() == 0 {
        return None;
    }
    // SAFETY: the helper has no preconditions.
    let task = unsafe { bpf_get_current_task() };
    let nsproxy = word_at(task, TASK_NSPROXY_OFF.load())?;
    let fs = word_at(task, TASK_FS_OFF.load())?;
    // A task on its way out has neither.
    if nsproxy == 0 || fs == 0 {
        return None;
    }
    Some([
        word_at(nsproxy, NSPROXY_MNT_NS_OFF.load())?,
        word_at(fs, FS_ROOT_MNT_OFF.load())?,
        word_at(fs, FS_ROOT_DENTRY_OFF.load())?,
    ])
}

/// Run by rtrace itself, once, never attached: its own view, into `RTRACE_VIEW`.
#[raw_tracepoint(tracepoint = "sys_enter")]
pub fn learn_view(_ctx: RawTracePointContext) -> i32 {
    let Some(view) = current_view() else {
        return 1;
    };
    for (slot, word) in (0..VIEW_SLOTS).zip(view) {
        if let Some(p) = RTRACE_VIEW.get_ptr_mut(slot) {
            // SAFETY: a live map value.
            unsafe { *p = word };
        }
    }
    0
}

/// For a successful `CLASS_PATH_VIEW` call: `REC_VIEW_KNOWN`, with `REC_SAME_VIEW` when
/// the task's view is rtrace's; 0 when it could not be told. A call of its own: its
/// locals must stay out of sys_exit's frame, which 6.1's 512-byte limit on a call
/// chain's stack (sys_exit, a call chain's emit, memset) leaves no room in.
#[inline(never)]
pub fn mark(class: u32) -> u16 {
    if class & CLASS_PATH_VIEW == 0 {
        return 0;
    }
    let learnt = |slot| RTRACE_VIEW.get(slot).copied().unwrap_or(0);
    let mine = [learnt(0), learnt(1), learnt(2)];
    if mine[0] == 0 {
        return 0;
    }
    let Some(view) = current_view() else {
        return 0;
    };
    // Word by word: comparing the arrays is a call to the object's byte-at-a-time
    // memcmp.
    if view[0] == mine[0] && view[1] == mine[1] && view[2] == mine[2] {
        REC_VIEW_KNOWN | REC_SAME_VIEW
    } else {
        REC_VIEW_KNOWN
    }
}
