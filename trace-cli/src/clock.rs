//! The clock the records' times are taken on.

/// CLOCK_MONOTONIC in nanoseconds, the clock of the records' times (the kernel side
/// stamps them with `bpf_ktime_get_ns`, which reads it too).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn never_goes_back() {
        let a = super::monotonic_ns();
        let b = super::monotonic_ns();
        assert!(a > 0 && b >= a);
    }
}
