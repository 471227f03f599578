//! Tracepoint events chosen with `-e cat:name` (`sched:sched_switch`, `signal:*`): one
//! classic-tracepoint program, attached to each chosen event with the event's index as
//! its BPF cookie, sends a target task's raw record with that index (the record's own
//! `common_type` is not there to name it: the kernel writes its pt_regs pointer over the
//! first 8 bytes before a BPF program runs). User space decodes the fields from the
//! tracefs format. Attach cookies need Linux 5.15; the program is loaded only when
//! events are chosen.
//!
//! A syscall's entry event (`syscalls:sys_enter_openat`) has a program of its own,
//! `tp_syscall_event`: it sends the call's arguments with what they point to, read as
//! the syscall programs read them (a path, an address), so that the event is shown
//! decoded as the call is (`filename: "/etc/hostname"`, not the pointer).

use aya_ebpf::{
    EbpfContext,
    helpers::{bpf_ktime_get_ns, bpf_probe_read_kernel_buf, generated::bpf_get_attach_cookie},
    macros::tracepoint,
    programs::TracePointContext,
};
use trace_common::{
    augment::AUG_NO_ARG,
    maps::{COUNTER_DROPPED, TRACE_ARM_ON_EXEC},
    record::{EVENT_BYTES, KIND_EVENT, REC_HAS_ENTRY, SyscallRecord},
};

use crate::augment;

use crate::{
    maps::bump,
    task::{current_ids, target_flags},
};

/// The record and the raw bytes after it, as one ring-buffer item.
#[repr(C)]
struct EventItem {
    head: SyscallRecord,
    data: [u8; EVENT_BYTES],
}

#[tracepoint]
pub fn tp_event(ctx: TracePointContext) -> u32 {
    // SAFETY: the context of a tracepoint program, which the helper takes.
    let index = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
    let _ = on_event(&ctx, index);
    0
}

#[inline(always)]
fn on_event(ctx: &TracePointContext, index: u32) -> Option<()> {
    let ids = current_ids()?;
    let flags = target_flags(&ids)?;
    // A held workload is traced from its exec on (the exec event itself is seen after
    // the lifecycle program armed it).
    if flags & TRACE_ARM_ON_EXEC != 0 {
        return None;
    }
    // SAFETY: the helper has no preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    if crate::stacks::wanted() != 0 {
        crate::stacks::emit(ctx, &ids, true, now);
    }
    let Some((mut slot, wake)) = crate::rings::reserve::<EventItem>() else {
        bump(COUNTER_DROPPED);
        return None;
    };
    let item = slot.as_mut_ptr();
    // SAFETY: `item` points at the reserved, writable slot of EventItem's size.
    unsafe {
        (*item).head = SyscallRecord {
            kind: KIND_EVENT,
            flags: REC_HAS_ENTRY,
            nr: index,
            tid: ids.tid,
            pid: ids.pid,
            enter_ns: now,
            exit_ns: 0,
            args: [0; 6],
            ret: 0,
            comm: crate::task::current_comm(),
            aug_len: [EVENT_BYTES as u16, 0],
            aug_arg: [0, AUG_NO_ARG],
            aug_cut: [0; 2],
        };
        // The record lives in the per-CPU buffer the kernel built it in, which is
        // larger than EVENT_BYTES: what follows a short record is read but never
        // decoded (the format says where each field ends).
        if bpf_probe_read_kernel_buf(ctx.as_ptr() as *const u8, &mut (*item).data).is_err() {
            (*item).head.aug_len[0] = 0;
        }
    }
    slot.submit(wake);
    Some(())
}

/// `syscalls:sys_enter_<call>`: its record holds `int __syscall_nr` at 8 and the
/// arguments from 16, 8 bytes each (tracefs). Sent as a syscall's entry is, with the
/// event's index for its number: the call's arguments, and the memory its plan reads
/// (the reader shows only what the call reads at entry; what it writes is not there
/// yet). Only native tasks' calls have these events.
#[tracepoint]
pub fn tp_syscall_event(ctx: TracePointContext) -> u32 {
    // SAFETY: as in tp_event.
    let index = unsafe { bpf_get_attach_cookie(ctx.as_ptr()) } as u32;
    let _ = on_syscall_event(&ctx, index);
    0
}

#[inline(always)]
fn on_syscall_event(ctx: &TracePointContext, index: u32) -> Option<()> {
    let ids = current_ids()?;
    let flags = target_flags(&ids)?;
    if flags & TRACE_ARM_ON_EXEC != 0 {
        return None;
    }
    // SAFETY: offsets of the syscall events' records (tracefs), read with a probe read.
    let (nr, args) = unsafe {
        (
            ctx.read_at::<i32>(8).ok()?,
            ctx.read_at::<[u64; 6]>(16).ok()?,
        )
    };
    // SAFETY: the helper has no preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    if crate::stacks::wanted() != 0 {
        crate::stacks::emit(ctx, &ids, true, now);
    }
    let rec = SyscallRecord {
        kind: KIND_EVENT,
        flags: REC_HAS_ENTRY,
        nr: index,
        tid: ids.tid,
        pid: ids.pid,
        enter_ns: now,
        exit_ns: 0,
        args,
        // No return yet: nothing sized by it is read.
        ret: -1,
        comm: crate::task::current_comm(),
        aug_len: [0; 2],
        aug_arg: [AUG_NO_ARG; 2],
        aug_cut: [0; 2],
    };
    match augment::plan(nr as u32) {
        Some(plan) => crate::syscalls::output(augment::assemble(&rec, &plan)?),
        None => crate::syscalls::output_record(&rec),
    }
    Some(())
}
