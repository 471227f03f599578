//! `rtrace record`: the record file's header, what decoding its records needs later,
//! on any machine (the formats, the events, where each target was when tracing began).

use std::collections::BTreeMap;

use crate::{
    config::Config,
    decode::fd_table::ProcSeed,
    events::TpEvent,
    kernel::tracefs::Tracefs,
    output::Sink,
    record::{
        self,
        file::{Header, SavedEvent, SavedSeed},
    },
};

use super::{SessionError, io_err};

/// The formats the records are decoded with: the syscalls', and the chosen events'.
pub(super) struct Formats {
    syscalls: BTreeMap<String, String>,
    events: Vec<SavedEvent>,
}

/// Reads the formats, while tracefs is at hand.
pub(super) fn read_formats(tracefs: &Tracefs, tp_events: &[TpEvent]) -> Formats {
    let events: Vec<_> = tp_events
        .iter()
        .map(|e| SavedEvent {
            category: e.category.clone(),
            name: e.name.clone(),
            format: tracefs
                .event_format(&e.category, &e.name)
                .unwrap_or_default(),
        })
        .collect();
    Formats {
        syscalls: record::syscall_formats(&mut tracefs.clone()),
        events,
    }
}

/// Writes the header, first in the record file.
pub(super) fn write(
    out: &mut Sink,
    cfg: &Config,
    formats: Formats,
    proc_seeds: &[ProcSeed],
    names_pids: bool,
) -> Result<(), SessionError> {
    let header = Header {
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string(),
        machine: std::env::consts::ARCH.to_string(),
        selection: cfg.selection.clone(),
        formats: formats.syscalls,
        events: formats.events,
        seeds: proc_seeds
            .iter()
            .map(|s| SavedSeed::from_seed(s, crate::pids::fd_seed::inherited_fds()))
            .collect(),
        names_pids,
    };
    record::file::write_header(out, &header).map_err(io_err("writing the record's header"))
}
