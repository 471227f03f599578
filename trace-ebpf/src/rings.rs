//! Which ring a record goes to: the one of the CPU it is written on (`cpu %
//! RING_COUNT`). Each ring has its own lock and positions, so writers on different
//! CPUs never wait for each other; the reader merges the rings by time.
//!
//! Each arm names its ring as a constant: the verifier checks a helper call against
//! the map its register holds on each path, and the map pointer never outlives the
//! arm, so the paths meet again right after it.

use aya_ebpf::{helpers::bpf_get_smp_processor_id, maps::RingBuf, maps::ring_buf::RingBufEntry};

use crate::{
    maps::{
        EVENTS, EVENTS_1, EVENTS_2, EVENTS_3, EVENTS_4, EVENTS_5, EVENTS_6, EVENTS_7, RING_COUNT,
    },
    wakeup,
};

/// A record's room in this CPU's ring, and the flag to submit it with.
#[inline(always)]
pub(crate) fn reserve<T: 'static>() -> Option<(RingBufEntry<T>, u64)> {
    with_ring(|ring| {
        let slot = ring.reserve::<T>(0)?;
        Some((slot, wakeup::flag(ring)))
    })
}

/// Copies `bytes` into this CPU's ring as one record; false when it was full.
#[inline(always)]
pub(crate) fn output(bytes: &[u8]) -> bool {
    with_ring(|ring| ring.output::<[u8]>(bytes, wakeup::flag(ring)).is_ok())
}

/// Runs `f` on this CPU's ring, named as a constant in each arm (see above).
#[inline(always)]
fn with_ring<R>(f: impl Fn(&RingBuf) -> R) -> R {
    match index() {
        1 => f(&EVENTS_1),
        2 => f(&EVENTS_2),
        3 => f(&EVENTS_3),
        4 => f(&EVENTS_4),
        5 => f(&EVENTS_5),
        6 => f(&EVENTS_6),
        7 => f(&EVENTS_7),
        _ => f(&EVENTS),
    }
}

/// This CPU's ring. BPF programs run with migration disabled: a program's records all
/// go to one ring.
#[inline(always)]
fn index() -> u32 {
    // SAFETY: a helper without arguments.
    let cpu = unsafe { bpf_get_smp_processor_id() };
    match RING_COUNT.load() {
        0 | 1 => 0,
        n => cpu % n,
    }
}
