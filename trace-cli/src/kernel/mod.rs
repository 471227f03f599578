//! The modules that touch the kernel: loading and attaching, bpf(2) map calls, tracefs,
//! privileges and the pid namespace.

pub mod bpf_log;
pub mod btf;
pub mod cgroup;
pub mod cookie_link;
pub mod event_release;
pub mod features;
pub mod function_hooks;
pub mod loader;
pub mod map_ops;
pub mod pidns;
pub mod privilege;
pub mod resources;
pub mod ring_positions;
pub mod rings;
pub mod sideband;
pub mod stats_maps;
pub mod sys_bpf;
pub mod tracefs;
pub mod view;

/// For the unit tests that read the running kernel: whether `test` can run here. Where
/// it cannot (`why`), it says it skipped, or fails where CI asks that the kernel be
/// there (`RTRACE_REQUIRE_BPF=1`), so that no such test passes by not running.
#[cfg(test)]
pub fn can_run(test: &str, why_not: Option<String>) -> bool {
    match why_not {
        None => true,
        Some(why) if std::env::var_os("RTRACE_REQUIRE_BPF").is_some_and(|v| v == "1") => {
            panic!("{test}: RTRACE_REQUIRE_BPF=1 but {why}")
        }
        Some(why) => {
            eprintln!("SKIPPED {test}: {why}");
            false
        }
    }
}
