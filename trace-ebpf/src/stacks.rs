//! Call chains (`--call-graph fp`): before a record goes out, the same task's kernel
//! and user frames, walked by the kernel (`bpf_get_stack`, frame pointers), go out as
//! a record of their own; user space joins it to the next record of that task. A
//! subprogram of its own, so that its stack and instructions are not added to the
//! callers' (sys_exit is close to what old verifiers allow).

use aya_ebpf::{
    EbpfContext, Global, bindings::BPF_F_USER_STACK, helpers::generated::bpf_get_stack,
};
use trace_common::{
    augment::AUG_NO_ARG,
    maps::COUNTER_DROPPED,
    record::{KIND_STACK, STACK_FRAMES, SyscallRecord},
};

use crate::{
    maps::{EVENTS, bump},
    task::Ids,
};

#[unsafe(no_mangle)]
static CALL_GRAPH: Global<u32> = Global::new(0);

/// The `record::STACK_*` bits asked for (0: no call chains).
#[inline(always)]
pub fn wanted() -> u32 {
    CALL_GRAPH.load()
}

#[repr(C)]
struct StackItem {
    head: SyscallRecord,
    kernel: [u64; STACK_FRAMES],
    user: [u64; STACK_FRAMES],
}

/// Sends the current task's frames: the kernel's when `kernel`, the user's always.
/// `stamp` is the time the record they belong to carries (its exit's, its event's),
/// so that frames whose record was lost are never shown with another.
#[inline(never)]
pub fn emit<C: EbpfContext>(ctx: &C, ids: &Ids, kernel: bool, stamp: u64) {
    let Some(mut slot) = EVENTS.reserve::<StackItem>(0) else {
        bump(COUNTER_DROPPED);
        return;
    };
    let item = slot.as_mut_ptr();
    const BYTES: u32 = (STACK_FRAMES * 8) as u32;
    // SAFETY: `item` is the reserved, writable slot of StackItem's size; the helper
    // writes at most BYTES into each array, which are that long.
    unsafe {
        let k = if kernel {
            bpf_get_stack(ctx.as_ptr(), (*item).kernel.as_mut_ptr().cast(), BYTES, 0)
        } else {
            0
        };
        let u = bpf_get_stack(
            ctx.as_ptr(),
            (*item).user.as_mut_ptr().cast(),
            BYTES,
            BPF_F_USER_STACK as u64,
        );
        (*item).head = SyscallRecord {
            kind: KIND_STACK,
            flags: 0,
            nr: 0,
            tid: ids.tid,
            pid: ids.pid,
            enter_ns: stamp,
            exit_ns: 0,
            args: [(k.max(0) / 8) as u64, (u.max(0) / 8) as u64, 0, 0, 0, 0],
            ret: 0,
            comm: [0; 16],
            aug_len: [0; 2],
            aug_arg: [AUG_NO_ARG; 2],
            aug_cut: [0; 2],
        };
    }
    slot.submit(0);
}
