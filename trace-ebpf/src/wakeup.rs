//! When a record wakes the reader.
//!
//! A wake-up is an interrupt raised on the writer's CPU (irq_work, a self-IPI: a trap
//! to the hypervisor on a VM). So a reader that sleeps is woken once, by the first
//! record that finds the ring a quarter full (`WAKEUP_BYTES`) and its word in
//! `READER_ASLEEP` set; it takes the word back. A reader that is awake is not woken
//! while the ring is under half full: before, every record past the quarter woke it,
//! and with several writing threads the ring stayed past it and a third of all CPU
//! went to wake-ups. Past half full the reader is behind and records are about to be
//! lost: each record wakes it again, and what that costs the writers is what holds
//! them back until it catches up. A reader that sleeps below the quarter is drained
//! by its own timer. Each ring is measured on its own: the reader waits on all of
//! them, and the word is shared.

use aya_ebpf::{
    bindings::{BPF_RB_AVAIL_DATA, BPF_RB_FORCE_WAKEUP, BPF_RB_NO_WAKEUP},
    maps::RingBuf,
};

use crate::maps::{READER_ASLEEP, WAKEUP_BYTES};

/// The flag for a record's submit to `ring`.
#[inline(always)]
pub(crate) fn flag(ring: &RingBuf) -> u64 {
    let Some(asleep) = READER_ASLEEP.get_ptr_mut(0) else {
        return BPF_RB_NO_WAKEUP as u64;
    };
    // SAFETY: a live map value. CPUs race on it harmlessly: two that find it set both
    // wake the reader, which is one wake-up too many, never one too few.
    unsafe {
        let avail = ring.query(BPF_RB_AVAIL_DATA as u64);
        if avail >= 2 * WAKEUP_BYTES.load() {
            return BPF_RB_FORCE_WAKEUP as u64;
        }
        if core::ptr::read_volatile(asleep) == 0 || avail < WAKEUP_BYTES.load() {
            return BPF_RB_NO_WAKEUP as u64;
        }
        core::ptr::write_volatile(asleep, 0);
    }
    BPF_RB_FORCE_WAKEUP as u64
}
