//! rtrace's pid namespace. In the initial one the kernel's pids are the user's; in any
//! other (a container with its own pid namespace) the programs must ask the kernel for
//! each task's pid as this namespace numbers it, naming the namespace by the device
//! and inode of /proc/self/ns/pid (read with procfs).

use procfs::{ProcError, ProcResult, process::Process};

/// The inode number the kernel gives the initial pid namespace (PROC_PID_INIT_INO).
const INIT_PID_NS_INO: u64 = 0xEFFF_FFFC;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PidNs {
    pub dev: u64,
    pub ino: u64,
}

impl PidNs {
    pub fn current() -> ProcResult<Self> {
        let all = Process::myself()?.namespaces()?;
        let pid = all
            .0
            .get(std::ffi::OsStr::new("pid"))
            .ok_or(ProcError::NotFound(None))?;
        Ok(Self {
            dev: pid.device_id,
            ino: pid.identifier,
        })
    }

    pub fn is_initial(&self) -> bool {
        self.ino == INIT_PID_NS_INO
    }
}
