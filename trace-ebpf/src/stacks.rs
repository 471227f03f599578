//! Call chains (`--call-graph fp`): before a record goes out, the same task's kernel
//! and user frames, walked by the kernel (`bpf_get_stack`, frame pointers), go out as
//! a record of their own; user space joins it to the next record of that task. A
//! subprogram of its own, so that its stack and instructions are not added to the
//! callers' (sys_exit is close to what old verifiers allow).

use aya_ebpf::{
    EbpfContext, Global, bindings::BPF_F_USER_STACK, helpers::generated::bpf_get_stack,
    macros::map, maps::PerCpuArray,
};
use trace_common::{
    augment::AUG_NO_ARG,
    maps::COUNTER_DROPPED,
    record::{KIND_STACK, STACK_FRAMES, SYSCALL_RECORD_SIZE, SyscallRecord},
};

use crate::{maps::bump, task::Ids};

#[unsafe(no_mangle)]
static CALL_GRAPH: Global<u32> = Global::new(0);

/// The `record::STACK_*` bits asked for (0: no call chains).
#[inline(always)]
pub fn wanted() -> u32 {
    CALL_GRAPH.load()
}

/// Where the frames are gathered (too big for the BPF stack): the record, then the
/// kernel's frames and right after them the user's, so that only the frames found go
/// out (a chain is mostly a few frames: 2 KiB per record would fill the ring).
#[repr(C)]
struct StackItem {
    head: SyscallRecord,
    frames: [u64; 2 * STACK_FRAMES],
}

#[map(name = "stack_scratch")]
static SCRATCH: PerCpuArray<StackItem> = PerCpuArray::with_max_entries(1, 0);

/// Sends the current task's frames: the kernel's when `kernel`, the user's always.
/// `stamp` is the time the record they belong to carries (its exit's, its event's),
/// so that frames whose record was lost are never shown with another.
#[inline(never)]
pub fn emit<C: EbpfContext>(ctx: &C, ids: &Ids, kernel: bool, stamp: u64) {
    let Some(item) = SCRATCH.get_ptr_mut(0) else {
        return;
    };
    const BYTES: u32 = (STACK_FRAMES * 8) as u32;
    const MASK: usize = STACK_FRAMES; // 127: a frame count below 128, masked
    // SAFETY: `item` is this CPU's scratch value, used by this program alone while it
    // runs; the helper writes at most BYTES from `frames[k]`, k < 128, and the array
    // holds 254 frames.
    unsafe {
        let frames = (*item).frames.as_mut_ptr();
        let k = if kernel {
            bpf_get_stack(ctx.as_ptr(), frames.cast(), BYTES, 0)
        } else {
            0
        };
        let k = ((k.max(0) / 8) as usize).min(STACK_FRAMES) & MASK;
        let u = bpf_get_stack(
            ctx.as_ptr(),
            frames.add(k).cast(),
            BYTES,
            BPF_F_USER_STACK as u64,
        );
        let u = ((u.max(0) / 8) as usize).min(STACK_FRAMES) & MASK;
        (*item).head = SyscallRecord {
            kind: KIND_STACK,
            flags: 0,
            nr: 0,
            tid: ids.tid,
            pid: ids.pid,
            enter_ns: stamp,
            exit_ns: 0,
            args: [k as u64, u as u64, 0, 0, 0, 0],
            ret: 0,
            comm: [0; 16],
            aug_len: [0; 2],
            aug_arg: [AUG_NO_ARG; 2],
            aug_cut: [0; 2],
        };
        let len = SYSCALL_RECORD_SIZE + (k + u) * 8;
        let bytes = core::slice::from_raw_parts(item.cast::<u8>(), len);
        // Woken by the same rule as every record (`wakeup.rs`), not left to the record
        // that follows: that one may find no room (a chain can fill a small ring), and
        // then nothing woke the reader until its timer.
        if !crate::rings::output(bytes) {
            bump(COUNTER_DROPPED);
        }
    }
}
