//! What the programs are told about each syscall before they run: its class bits,
//! `-C`'s CPUs, and what to copy from user memory (each call's argument plan, from
//! the catalog of tracefs formats the printer then decodes with).

use trace_common::{maps::CLASS_EXEC, stats::SUMMARY_RECORDS};

use crate::{
    config::Config,
    decode::{Catalog, classes, syscall_table},
    kernel::{
        loader::{self, Settings},
        tracefs::Tracefs,
    },
};

use super::{SessionError, probes::Probes};
use crate::output::show::shows_unfinished;

/// The calls whose entries show as unfinished, and the class bits of each call.
fn classes(cfg: &Config) -> Vec<(u32, u32)> {
    // The timeline cuts a call still running at the end where tracing ended: the
    // kernel sends blocking calls' entries for it, whatever the lines show.
    let entries = shows_unfinished(cfg) || cfg.timeline.is_some();
    classes::syscall_classes(cfg.selection.as_deref(), entries)
}

/// What the programs are told, read before they can be: made by [`read`], written by
/// [`write`].
pub(super) struct Tables {
    /// Each call's class bits.
    classes: Vec<(u32, u32)>,
    /// The catalog of formats, with the plans the programs need already read; the
    /// printer decodes with it.
    pub catalog: Catalog<Tracefs>,
}

/// The tables: pure reading of tracefs (~370 files for a full trace), so it runs while
/// the verifier checks the programs.
pub(super) fn read(cfg: &Config, settings: &Settings, tracefs: Tracefs) -> Tables {
    let classes = classes(cfg);
    let mut catalog = Catalog::new(tracefs);
    // The calls whose entry events are chosen: their plans are read with the events,
    // whatever the syscalls' records (the syscall programs read a plan only where
    // records are wanted).
    let entry_events: Vec<u32> = settings.events.iter().filter_map(|e| e.syscall).collect();
    let records = settings.summary_flags & SUMMARY_RECORDS != 0;
    if records || !entry_events.is_empty() {
        // Only what can be recorded needs a plan: the selection, and execve, which
        // starts a held workload whatever -e says.
        match &cfg.selection {
            _ if !records => catalog.preload(entry_events),
            Some(nrs) => {
                let exec = classes
                    .iter()
                    .filter(|(_, c)| c & CLASS_EXEC != 0)
                    .map(|(i, _)| *i);
                catalog.preload(nrs.iter().copied().chain(exec).chain(entry_events));
            }
            None => catalog.preload(0..syscall_table::MAX_NR),
        }
    }
    Tables { classes, catalog }
}

/// Writes the tables: the class bits, `-C`'s CPUs, and the plans the catalog read.
pub(super) fn write(
    probes: &mut Probes,
    cfg: &Config,
    tables: &Tables,
) -> Result<(), SessionError> {
    loader::write_classes(&mut probes.bpf, &tables.classes)?;
    if let Some(cpus) = &cfg.cpus {
        loader::write_cpus(&mut probes.bpf, cpus)?;
    }
    loader::write_aug_plans(
        &mut probes.bpf,
        tables
            .catalog
            .described()
            .map(|(nr, i)| (nr, i.plan_with_limit(cfg.string_limit))),
    )?;
    Ok(())
}
