//! The loaded eBPF object and the links of its programs, owned together: attached in
//! the order the session needs, the programs that write records detached first at the
//! end, and everything detached when the owner goes, however the session ends.

use std::io;

use aya::Ebpf;
use aya_log::EbpfLogger;

use crate::{
    config::Config,
    kernel::{
        bpf_log::{self, StderrLines},
        loader::{self, EventLinks, LoadError, Settings, SyscallHooks},
    },
};

use super::SessionError;

pub(super) struct Probes {
    pub bpf: Ebpf,
    /// The syscall programs' links on the chosen calls' events, dropped all at once.
    links: EventLinks,
}

impl Probes {
    pub fn load(settings: &Settings, pending: loader::PendingLoader) -> Result<Probes, LoadError> {
        let (bpf, functions) = loader::load(settings, pending)?;
        Ok(Probes {
            bpf,
            links: EventLinks::with_functions(functions),
        })
    }

    /// The programs' log, when `-v` asked for it.
    pub fn open_log(
        &mut self,
        verbose: u8,
    ) -> Result<Option<EbpfLogger<StderrLines>>, SessionError> {
        bpf_log::open(&mut self.bpf, verbose).map_err(|e| SessionError::Io {
            what: "opening the programs' log".into(),
            source: io::Error::other(e),
        })
    }

    /// The fork/exit upkeep, and the tracepoint events between the exec and the exit
    /// programs (see `loader::attach_lifecycle`). Nothing is a target yet, so they send
    /// nothing until the maps are written.
    pub fn attach_upkeep(&mut self, events: &[loader::EventHook]) -> Result<(), LoadError> {
        loader::attach_lifecycle(&mut self.bpf, &["sched_process_exec"])?;
        loader::attach_events(&mut self.bpf, events, &mut self.links)?;
        loader::attach_lifecycle(&mut self.bpf, &["sched_process_fork", "sched_process_exit"])
    }

    /// The syscall programs and `-F`'s fault programs: attached last, once the pid maps
    /// are written and swept.
    pub fn attach_syscalls(&mut self, hooks: &SyscallHooks, cfg: &Config) -> Result<(), LoadError> {
        loader::attach_syscalls(&mut self.bpf, hooks, &mut self.links, cfg.verbose)?;
        loader::attach_faults(&mut self.bpf, cfg.faults, cfg.cpus.as_deref())
    }

    /// Stops the programs that write records; the maps stay readable.
    pub fn stop_records(&mut self) {
        loader::detach_syscalls(&mut self.bpf, &mut self.links);
    }
}

impl Drop for Probes {
    fn drop(&mut self) {
        loader::detach_all(&mut self.bpf, &mut self.links);
    }
}
