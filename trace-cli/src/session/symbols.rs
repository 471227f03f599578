//! `-F` and `--call-graph`: the memory maps that name addresses, followed from before
//! the first fault (and the command's exec) on.

use trace_common::stats::SUMMARY_RECORDS;

use crate::{
    config::{Config, Targets},
    kernel::loader::Settings,
    symbols::resolve::Symbols,
    workload::Workload,
};

use super::{SessionError, io_err, seed::processes_to_seed};

/// Starts following the targets' mappings, when anything shown has addresses to name.
pub(super) fn start(
    cfg: &Config,
    settings: &Settings,
    workload: Option<&Workload>,
) -> Result<Option<Symbols>, SessionError> {
    if !(cfg.faults.any() || cfg.call_graph.is_some())
        || settings.summary_flags & SUMMARY_RECORDS == 0
    {
        return Ok(None);
    }
    let cpus = aya::util::online_cpus()
        .map_err(|(_, e)| e)
        .map_err(io_err("listing the online CPUs"))?;
    let symbols = Symbols::start(
        &cpus,
        processes_to_seed(cfg, workload),
        matches!(cfg.targets, Targets::System { .. }),
    )
    .map_err(io_err("opening the memory-map records (perf_event_open)"))?;
    Ok(Some(symbols))
}
