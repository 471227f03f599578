//! Record and replay: `rtrace record [options] -- cmd` writes the ring buffer's records
//! and what decoding them needs to a file (`rtrace.data` unless `-o`); `rtrace -i FILE`
//! prints them with the output options (`-s`, `--json`, `-e`, `-p`, `--filter-pids`,
//! `--failure`, `--duration`…), on this machine or another: no BPF, no root. perf's
//! `perf trace record` / `perf trace -i` are the model.

pub mod file;
pub mod recorder;
pub mod replay;
pub mod tally;

use std::collections::BTreeMap;

pub use recorder::Recorder;

use crate::decode::{FormatSource, syscall_table};

/// The syscall formats a record carries: every syscall's `sys_enter` format that this
/// kernel has, by event name.
pub fn syscall_formats(source: &mut impl FormatSource) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for nr in 0..syscall_table::MAX_NR {
        let Some(name) = syscall_table::name(nr) else {
            continue;
        };
        let event = syscall_table::event_name(name);
        if out.contains_key(event) {
            continue;
        }
        if let Some(text) = source.sys_enter_format(event) {
            out.insert(event.to_string(), text);
        }
    }
    out
}

/// The formats of a record, for the catalog that decodes its syscalls.
pub struct SavedFormats(pub BTreeMap<String, String>);

impl FormatSource for SavedFormats {
    fn sys_enter_format(&mut self, event: &str) -> Option<String> {
        self.0.get(event).cloned()
    }
}
