//! Can this process load and attach tracing programs? Checked up front so that the
//! user gets one plain sentence, naming the capabilities that are missing, instead of a
//! verifier or EPERM dump. Root in a container often lacks them: the sentence says so.

use thiserror::Error;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The effective capability set, as /proc/self/status shows it (`CapEff`).
#[derive(Clone, Copy, Debug)]
pub struct Caps(pub u64);

impl Caps {
    pub fn current() -> Self {
        let eff = procfs::process::Process::myself().and_then(|p| p.status());
        Self(eff.map(|s| s.capeff).unwrap_or(0))
    }

    fn has(self, cap: u32) -> bool {
        self.0 & (1u64 << cap) != 0
    }

    /// Loading and attaching tracing programs: CAP_BPF with CAP_PERFMON, or (on every
    /// kernel, and the only way before 5.8) CAP_SYS_ADMIN.
    pub fn allow_tracing(self) -> bool {
        (self.has(CAP_BPF) && self.has(CAP_PERFMON)) || self.has(CAP_SYS_ADMIN)
    }

    /// Mounting tracefs.
    pub fn allow_mount(self) -> bool {
        self.has(CAP_SYS_ADMIN)
    }

    /// The tracing capabilities this set lacks, by name.
    fn missing(self) -> Vec<&'static str> {
        [(CAP_BPF, "CAP_BPF"), (CAP_PERFMON, "CAP_PERFMON")]
            .into_iter()
            .filter(|&(cap, _)| !self.has(cap))
            .map(|(_, name)| name)
            .collect()
    }
}

#[derive(Debug, Error)]
#[error(
    "permission denied: tracing needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, and this process lacks {} and CAP_SYS_ADMIN — {}",
    missing.join(", "),
    if *as_root {
        "it runs as root without them: in a container, add them (see the README's \"In a container\")"
    } else {
        "run it with sudo"
    }
)]
pub struct NotPrivileged {
    missing: Vec<&'static str>,
    as_root: bool,
}

pub fn check_caps(caps: Caps, as_root: bool) -> Result<(), NotPrivileged> {
    if caps.allow_tracing() {
        return Ok(());
    }
    Err(NotPrivileged {
        missing: caps.missing(),
        as_root,
    })
}

pub fn check() -> Result<(), NotPrivileged> {
    check_caps(Caps::current(), nix::unistd::geteuid().is_root())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_that_allow_tracing() {
        assert!(Caps(0x1ff_ffff_ffff).allow_tracing());
        assert!(!Caps(0).allow_tracing());
        assert!(Caps((1 << CAP_BPF) | (1 << CAP_PERFMON)).allow_tracing());
        assert!(!Caps(1 << CAP_BPF).allow_tracing());
        assert!(Caps(1 << CAP_SYS_ADMIN).allow_tracing());
        assert!(!Caps((1 << CAP_BPF) | (1 << CAP_PERFMON)).allow_mount());
    }

    #[test]
    fn the_refusal_names_what_is_missing() {
        // Docker's default set for root in a container.
        let e = check_caps(Caps(0xa80425fb), true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "permission denied: tracing needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, and this process lacks CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN — it runs as root without them: in a container, add them (see the README's \"In a container\")"
        );
        let e = check_caps(Caps(1 << CAP_BPF), false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "permission denied: tracing needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, and this process lacks CAP_PERFMON and CAP_SYS_ADMIN — run it with sudo"
        );
    }
}
