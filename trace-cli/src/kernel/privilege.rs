//! Can this process load and attach tracing programs? Checked up front so that the
//! user gets one plain sentence instead of a verifier or EPERM dump.

use thiserror::Error;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

#[derive(Debug, Error)]
#[error(
    "permission denied: tracing needs root, or the CAP_BPF and CAP_PERFMON capabilities — run it with sudo"
)]
pub struct NotPrivileged;

/// The effective capability set from the text of /proc/self/status.
pub fn effective_caps(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
}

pub fn caps_allow_tracing(caps: u64) -> bool {
    let has = |cap: u32| caps & (1u64 << cap) != 0;
    (has(CAP_BPF) && has(CAP_PERFMON)) || has(CAP_SYS_ADMIN)
}

pub fn check() -> Result<(), NotPrivileged> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    match effective_caps(&status) {
        Some(caps) if caps_allow_tracing(caps) => Ok(()),
        _ => Err(NotPrivileged),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_capabilities() {
        let status = "Name:\tcat\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(effective_caps(status), Some(0x1ff_ffff_ffff));
        assert!(caps_allow_tracing(0x1ff_ffff_ffff));
        assert!(!caps_allow_tracing(0));
        assert!(caps_allow_tracing((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!caps_allow_tracing(1 << CAP_BPF));
        assert_eq!(effective_caps("Name:\tx\n"), None);
    }
}
