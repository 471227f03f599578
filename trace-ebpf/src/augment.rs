//! Copying user memory next to a record, as `aug_plan` says for each syscall.
//!
//! Pointers are read when the syscall returns: by then the kernel has copied the
//! argument itself, so a page that was never touched before the call (a literal in the
//! .rodata of a binary just exec'd) is present and the read succeeds. execve's
//! arguments are the exception, read at entry (once it succeeds they are gone) and sent
//! in a record of their own that user space joins to the call.
//! A read that fails is marked, and the argument is shown as the pointer it is.

use aya_ebpf::{
    helpers::generated::{bpf_probe_read_user, bpf_probe_read_user_str},
    macros::map,
    maps::{Array, PerCpuArray},
};
use trace_common::{
    SyscallRecord,
    augment::{
        AUG_ARGV, AUG_AT_ENTRY, AUG_BUF, AUG_FAILED, AUG_FIXED, AUG_NO_ARG, AUG_NONE,
        AUG_PLAN_ENTRIES, AUG_SLOT_BYTES, AUG_SLOTS, AUG_STR, AugPlan, AugSlot,
    },
    record::SYSCALL_RECORD_SIZE,
};

#[map(name = "aug_plan")]
static AUG_PLAN: Array<AugPlan> = Array::with_max_entries(AUG_PLAN_ENTRIES, 0);

const RECORD_MAX: usize = SYSCALL_RECORD_SIZE + AUG_SLOTS * AUG_SLOT_BYTES;

/// The slack after the last slot lets the verifier accept the argv reads, whose
/// offset and size it cannot relate to each other (offset ≤ 255, size ≤ 256).
#[repr(C, align(8))]
pub struct Scratch {
    buf: [u8; RECORD_MAX + AUG_SLOT_BYTES],
}

/// Where an augmented record is assembled (too big for the 512-byte BPF stack).
#[map(name = "aug_scratch")]
static SCRATCH: PerCpuArray<Scratch> = PerCpuArray::with_max_entries(1, 0);

/// The plan for syscall `nr`, if it reads anything.
#[inline(always)]
pub fn plan(nr: u32) -> Option<AugPlan> {
    let p = *AUG_PLAN.get(nr)?;
    (p.slots[0].kind != AUG_NONE || p.slots[1].kind != AUG_NONE).then_some(p)
}

#[inline(always)]
pub fn has_entry_reads(p: &AugPlan) -> bool {
    p.slots[0].when == AUG_AT_ENTRY || p.slots[1].when == AUG_AT_ENTRY
}

/// Reads `slot` into `dst` (AUG_SLOT_BYTES long); the bytes kept, or AUG_FAILED.
#[inline(always)]
fn read_slot(slot: &AugSlot, args: &[u64; 6], dst: *mut u8) -> u16 {
    let src = args[(slot.arg & 7) as usize % 6];
    if src == 0 {
        return AUG_FAILED;
    }
    match slot.kind {
        AUG_STR => {
            // SAFETY: dst has AUG_SLOT_BYTES bytes; the helper checks the user read.
            let n = unsafe {
                bpf_probe_read_user_str(dst.cast(), AUG_SLOT_BYTES as u32, src as *const _)
            };
            if n <= 0 { AUG_FAILED } else { (n - 1) as u16 }
        }
        AUG_BUF | AUG_FIXED => {
            let mut n = if slot.kind == AUG_BUF {
                args[(slot.len_arg & 7) as usize % 6]
            } else {
                u64::from(slot.max)
            };
            if n > u64::from(slot.max) {
                n = u64::from(slot.max);
            }
            if n > AUG_SLOT_BYTES as u64 {
                n = AUG_SLOT_BYTES as u64;
            }
            if n == 0 {
                return 0;
            }
            // SAFETY: n is at most the slot's size.
            let rc = unsafe { bpf_probe_read_user(dst.cast(), n as u32, src as *const _) };
            if rc != 0 { AUG_FAILED } else { n as u16 }
        }
        AUG_ARGV => read_argv(src, dst),
        _ => AUG_FAILED,
    }
}

/// argv: up to 8 strings, NUL-separated, within the slot.
#[inline(always)]
fn read_argv(argv: u64, dst: *mut u8) -> u16 {
    let mut off: u32 = 0;
    for k in 0..8u64 {
        let mut ptr: u64 = 0;
        // SAFETY: reading one user pointer into a local.
        let rc = unsafe {
            bpf_probe_read_user((&mut ptr as *mut u64).cast(), 8, (argv + 8 * k) as *const _)
        };
        if rc != 0 {
            return if k == 0 { AUG_FAILED } else { off as u16 };
        }
        if ptr == 0 || off >= AUG_SLOT_BYTES as u32 - 1 {
            break;
        }
        // Masked so that the verifier bounds the offset and the size from one value (a
        // volatile read keeps LLVM from dropping the mask as redundant).
        // SAFETY: reading a local.
        let o = unsafe { core::ptr::read_volatile(&off) } & (AUG_SLOT_BYTES as u32 - 1);
        let room = AUG_SLOT_BYTES as u32 - o;
        // SAFETY: o < AUG_SLOT_BYTES and room keeps the write inside the slot.
        let n =
            unsafe { bpf_probe_read_user_str(dst.add(o as usize).cast(), room, ptr as *const _) };
        if n <= 0 {
            break;
        }
        off += n as u32;
    }
    off as u16
}

/// Assembles `rec` and the slots that `plan` reads at time `when` (entry or exit) in
/// the scratch buffer; returns the bytes to send.
#[inline(always)]
pub fn assemble(
    rec: &mut SyscallRecord,
    plan: &AugPlan,
    args: &[u64; 6],
    when: u8,
) -> Option<&'static [u8]> {
    let scratch = SCRATCH.get_ptr_mut(0)?;
    // SAFETY: the per-CPU scratch value; only this program uses it while it runs.
    let buf = unsafe { (*scratch).buf.as_mut_ptr() };
    let mut used = 0usize;
    for i in 0..AUG_SLOTS {
        let slot = plan.slots[i];
        if slot.kind == AUG_NONE || slot.when != when {
            rec.aug_arg[i] = AUG_NO_ARG;
            rec.aug_len[i] = 0;
            continue;
        }
        // SAFETY: slot i lies inside the scratch buffer.
        let dst = unsafe { buf.add(SYSCALL_RECORD_SIZE + i * AUG_SLOT_BYTES) };
        let len = read_slot(&slot, args, dst);
        rec.aug_arg[i] = slot.arg;
        rec.aug_len[i] = len;
        let kept = if len == AUG_FAILED {
            0
        } else {
            (len as usize).min(AUG_SLOT_BYTES)
        };
        used = i * AUG_SLOT_BYTES + kept;
    }
    // SAFETY: the header fits at the start of the buffer.
    unsafe { core::ptr::write_unaligned(buf.cast::<SyscallRecord>(), *rec) };
    let total = (SYSCALL_RECORD_SIZE + used).min(RECORD_MAX);
    // SAFETY: total is within the buffer, which lives as long as the map.
    Some(unsafe { core::slice::from_raw_parts(buf, total) })
}
