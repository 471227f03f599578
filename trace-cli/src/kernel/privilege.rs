//! Can this process load and attach tracing programs? Checked up front so that the
//! user gets one plain sentence, naming the capabilities that are missing, instead of a
//! verifier or EPERM dump. Root in a container often lacks them: the sentence says so.

use thiserror::Error;

const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The effective capability set (what /proc/self/status shows as `CapEff`).
#[derive(Clone, Copy, Debug)]
pub struct Caps(pub u64);

/// capget(2)'s header and data, version 3: two 32-bit halves of each set.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

impl Caps {
    /// Asked of the kernel with capget(2), which needs no file descriptor: read from
    /// /proc, a process at its fd limit (`ulimit -n 4`) would seem to have none, and
    /// be told to get capabilities it has.
    pub fn current() -> std::io::Result<Self> {
        let mut header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let mut data = [CapData::default(); 2];
        // SAFETY: a valid version-3 header and the two data structs it asks for.
        let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self(
            u64::from(data[0].effective) | (u64::from(data[1].effective) << 32),
        ))
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
    // capget cannot fail for this process with the version it names; were it to, the
    // kernel's own refusals later say what is missing.
    let Ok(caps) = Caps::current() else {
        return Ok(());
    };
    check_caps(caps, nix::unistd::geteuid().is_root())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capget_reads_what_proc_shows() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
            .unwrap();
        assert_eq!(Caps::current().unwrap().0, eff);
    }

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
