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

pub fn caps_allow_tracing(caps: u64) -> bool {
    let has = |cap: u32| caps & (1u64 << cap) != 0;
    (has(CAP_BPF) && has(CAP_PERFMON)) || has(CAP_SYS_ADMIN)
}

/// From the effective capability set in /proc/self/status.
pub fn check() -> Result<(), NotPrivileged> {
    let caps = procfs::process::Process::myself().and_then(|p| p.status());
    match caps {
        Ok(status) if caps_allow_tracing(status.capeff) => Ok(()),
        _ => Err(NotPrivileged),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_that_allow_tracing() {
        assert!(caps_allow_tracing(0x1ff_ffff_ffff));
        assert!(!caps_allow_tracing(0));
        assert!(caps_allow_tracing((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!caps_allow_tracing(1 << CAP_BPF));
    }
}
