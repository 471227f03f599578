//! Reading the in-kernel summary statistics once, at the end of the session.

use std::collections::BTreeMap;

use aya::{
    Ebpf,
    maps::{HashMap, MapData, PerCpuHashMap},
};
use trace_common::stats::{
    ERRNO_STATS, ErrnoKey, SYSCALL_STATS, SYSCALL_STATS_TOTAL, StatsKey, SyscallStats, TASK_COMM,
};

use crate::{kernel::loader::LoadError, output::summary::Section};

fn map<'a>(bpf: &'a Ebpf, name: &'static str) -> Result<&'a aya::maps::Map, LoadError> {
    bpf.map(name).ok_or(LoadError::MissingMap(name))
}

fn bad_map(name: &'static str) -> impl FnOnce(aya::maps::MapError) -> LoadError {
    move |_| LoadError::MissingMap(name)
}

/// The summary sections: one per thread, or one in total.
pub fn read_sections(bpf: &Ebpf, total: bool) -> Result<Vec<Section>, LoadError> {
    let mut per_key: BTreeMap<StatsKey, SyscallStats> = BTreeMap::new();
    if total {
        let m: PerCpuHashMap<&MapData, StatsKey, SyscallStats> =
            PerCpuHashMap::try_from(map(bpf, SYSCALL_STATS_TOTAL)?)
                .map_err(bad_map(SYSCALL_STATS_TOTAL))?;
        for (key, values) in m.iter().filter_map(Result::ok) {
            let merged = per_key.entry(key).or_default();
            for v in values.iter() {
                merged.merge(v);
            }
        }
    } else {
        let m: HashMap<&MapData, StatsKey, SyscallStats> =
            HashMap::try_from(map(bpf, SYSCALL_STATS)?).map_err(bad_map(SYSCALL_STATS))?;
        per_key.extend(m.iter().filter_map(Result::ok));
    }

    let errnos: HashMap<&MapData, ErrnoKey, u64> =
        HashMap::try_from(map(bpf, ERRNO_STATS)?).map_err(bad_map(ERRNO_STATS))?;
    let mut errno_rows: BTreeMap<(u32, u32), Vec<(u32, u64)>> = BTreeMap::new();
    for (k, count) in errnos.iter().filter_map(Result::ok) {
        errno_rows
            .entry((k.tid, k.nr))
            .or_default()
            .push((k.errno, count));
    }
    let comms: HashMap<&MapData, u32, [u8; 16]> =
        HashMap::try_from(map(bpf, TASK_COMM)?).map_err(bad_map(TASK_COMM))?;
    Ok(crate::output::summary::sections(
        per_key,
        errno_rows,
        total,
        |tid| comms.get(&tid, 0).unwrap_or([0; 16]),
    ))
}
