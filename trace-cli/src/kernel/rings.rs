//! How many ring buffers the programs write, and how big each is.
//!
//! One ring per CPU, up to `MAX_RINGS` (CPUs beyond share them, by `cpu % count`):
//! writers on two CPUs sharing one ring wait for its lock and pull its positions'
//! cache lines back and forth, which on a multi-threaded program cost more than the
//! record. `-m` sizes each ring, as perf's sizes each CPU's buffer. Without it, 8 MiB
//! is divided among the rings (by their count rounded down to a power of two), each
//! at least 2 MiB: 8 MiB for one, 4 MiB each for two or three, 2 MiB each for four to
//! eight. A thread writes to one ring at a time, and must find room there while the
//! reader is away.

use trace_common::maps::MAX_RINGS;

/// What the rings take without `-m`, shared among them.
pub const DEFAULT_TOTAL_BYTES: u32 = 8 << 20;
/// The least a ring gets without `-m`.
const DEFAULT_MIN_BYTES: u32 = 2 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingLayout {
    /// Rings written (1 to `MAX_RINGS`).
    pub count: u32,
    /// Bytes of each (a power of two, whole pages).
    pub bytes: u32,
}

/// The rings for `cpus` CPUs (`online_cpus`), each `requested` bytes (`-m`) or the default;
/// `count` (`RTRACE_RINGS`) forces how many.
pub fn layout(requested: Option<u32>, count: Option<u32>, cpus: usize) -> RingLayout {
    let count = count.map_or(cpus, |n| n as usize).clamp(1, MAX_RINGS) as u32;
    let bytes = requested.unwrap_or_else(|| {
        // Both are powers of two, and so is the count rounded down.
        let share = DEFAULT_TOTAL_BYTES >> count.ilog2();
        share.max(DEFAULT_MIN_BYTES)
    });
    RingLayout { count, bytes }
}

/// The CPUs to give a ring each: ids up to the highest online one. Not the possible
/// CPUs, which a VM may count in the hundreds with two online: a CPU brought online
/// later shares a ring (`cpu % count`), which costs it speed, never records.
pub fn online_cpus() -> usize {
    aya::util::online_cpus()
        .ok()
        .and_then(|cpus| cpus.into_iter().max())
        .map_or(1, |highest| highest as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_ring_per_cpu_up_to_the_most() {
        assert_eq!(layout(None, None, 1).count, 1);
        assert_eq!(layout(None, None, 2).count, 2);
        assert_eq!(layout(None, None, 6).count, 6);
        assert_eq!(layout(None, None, 64).count, MAX_RINGS as u32);
        assert_eq!(layout(None, None, 0).count, 1);
    }

    #[test]
    fn the_default_shares_eight_mib_with_two_mib_the_least() {
        assert_eq!(layout(None, None, 1).bytes, 8 << 20);
        assert_eq!(layout(None, None, 2).bytes, 4 << 20);
        assert_eq!(layout(None, None, 3).bytes, 4 << 20);
        assert_eq!(layout(None, None, 4).bytes, 2 << 20);
        assert_eq!(layout(None, None, 64).bytes, 2 << 20);
    }

    #[test]
    fn rtrace_rings_forces_the_count_and_the_default_share() {
        assert_eq!(
            layout(None, Some(1), 64),
            RingLayout {
                count: 1,
                bytes: 8 << 20
            }
        );
        assert_eq!(layout(None, Some(4), 2).count, 4);
    }

    #[test]
    fn m_sizes_each_ring() {
        assert_eq!(
            layout(Some(4096), None, 64),
            RingLayout {
                count: MAX_RINGS as u32,
                bytes: 4096
            }
        );
        assert_eq!(layout(Some(1 << 20), None, 1).bytes, 1 << 20);
    }
}
