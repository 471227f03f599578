//! What this kernel offers, asked before anything is loaded: the features rtrace cannot
//! do without (one line naming the missing one, nothing attached), and the choices
//! where it has more than one way (said at `-v`).

use aya::{
    maps::MapType,
    programs::ProgramType,
    sys::{BpfHelper, is_helper_supported, is_map_supported, is_program_supported},
};
use thiserror::Error;
use trace_common::maps::{GROUP_EXIT_FIELD, GROUP_EXIT_LEADER, GROUP_EXIT_LIVE};

use super::btf::GroupLiveOffsets;

/// The oldest kernel with everything rtrace needs (task-local storage for tracing
/// programs came last).
pub const MIN_KERNEL: &str = "5.12";

#[derive(Debug, Error)]
#[error(
    "this kernel lacks {what} (rtrace needs Linux {MIN_KERNEL} or later, with BPF and BTF enabled)"
)]
pub struct Missing {
    what: &'static str,
}

/// One required feature: its name for the user, and the probe.
struct Required {
    what: &'static str,
    /// Only needed when rtrace runs in a pid namespace other than the initial one.
    only_in_pidns: bool,
    probe: fn() -> bool,
}

const REQUIRED: [Required; 6] = [
    Required {
        what: "raw tracepoint BPF programs",
        only_in_pidns: false,
        probe: || is_program_supported(ProgramType::RawTracePoint).unwrap_or(false),
    },
    Required {
        what: "the BPF ring buffer",
        only_in_pidns: false,
        probe: || is_map_supported(MapType::RingBuf).unwrap_or(false),
    },
    Required {
        what: "the bpf_probe_read_kernel helper",
        only_in_pidns: false,
        probe: || {
            is_helper_supported(
                ProgramType::TracePoint,
                BpfHelper::BPF_FUNC_probe_read_kernel,
            )
            .unwrap_or(false)
        },
    },
    Required {
        what: "BTF (/sys/kernel/btf/vmlinux)",
        only_in_pidns: false,
        probe: || std::path::Path::new("/sys/kernel/btf/vmlinux").exists(),
    },
    Required {
        what: "task-local storage for tracing programs (BPF_MAP_TYPE_TASK_STORAGE)",
        only_in_pidns: false,
        // The helper alone: the map type came with it, and probing the map would cost a
        // grace period (~30 ms) when the kernel frees the probe's map.
        probe: || {
            is_helper_supported(
                ProgramType::RawTracePoint,
                BpfHelper::BPF_FUNC_task_storage_get,
            )
            .unwrap_or(false)
        },
    },
    Required {
        what: "the bpf_get_ns_current_pid_tgid helper (needed inside a pid namespace)",
        only_in_pidns: true,
        probe: || {
            is_helper_supported(
                ProgramType::TracePoint,
                BpfHelper::BPF_FUNC_get_ns_current_pid_tgid,
            )
            .unwrap_or(false)
        },
    },
];

/// What `rtrace --version` says of this kernel: its release, then each feature rtrace
/// uses and whether it is there (`unknown` when the kernel would not be asked: probing
/// loads tiny programs, which needs root or CAP_BPF).
pub fn report() -> String {
    let release = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into());
    let mut out = format!("kernel {release}:");
    for r in &REQUIRED {
        let found = if (r.probe)() {
            "yes"
        } else if nix::unistd::geteuid().is_root() {
            "no"
        } else {
            "unknown (needs root)"
        };
        let what = r.what.split(" (").next().unwrap_or(r.what);
        out.push_str(&format!("\n  {what}: {found}"));
    }
    out
}

/// Fails with the first missing feature.
pub fn require(in_pidns: bool) -> Result<(), Missing> {
    for r in REQUIRED.iter().filter(|r| in_pidns || !r.only_in_pidns) {
        if !(r.probe)() {
            return Err(Missing { what: r.what });
        }
    }
    Ok(())
}

/// How the exit program tells that a thread group has ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupExit {
    /// `sched_process_exit`'s own `group_dead` argument.
    Field,
    /// The group's live-thread count, read through offsets from the kernel's BTF.
    Live(GroupLiveOffsets),
    /// The leader's exit taken for the group's: wrong when the leader goes first.
    Leader,
}

impl GroupExit {
    /// `trace_common::maps::GROUP_EXIT_*`.
    pub fn mode(&self) -> u32 {
        match self {
            GroupExit::Field => GROUP_EXIT_FIELD,
            GroupExit::Live(_) => GROUP_EXIT_LIVE,
            GroupExit::Leader => GROUP_EXIT_LEADER,
        }
    }

    pub fn describe(&self) -> &'static str {
        match self {
            GroupExit::Field => "the group_dead argument of sched_process_exit",
            GroupExit::Live(_) => "the thread group's live count (signal->live, via BTF)",
            GroupExit::Leader => {
                "the group leader's exit (no group_dead field, no BTF): threads that outlive their leader are lost"
            }
        }
    }
}

/// Picks the best way the kernel offers: the tracepoint's argument (`field`: its format
/// has it), else the live count from BTF, else the leader. `forced` (the `RTRACE_GROUP_EXIT` variable: `field`,
/// `live` or `leader`) asks for one, so that each path can be tested on any kernel;
/// a forced way the kernel lacks falls back as usual.
pub fn choose_group_exit(
    field: bool,
    live: impl FnOnce() -> Option<GroupLiveOffsets>,
    forced: Option<&str>,
) -> GroupExit {
    match (forced, field) {
        (Some("leader"), _) => return GroupExit::Leader,
        (Some("live"), _) => {}
        (_, true) => return GroupExit::Field,
        (_, false) => {}
    }
    match (live(), field) {
        (Some(o), _) => GroupExit::Live(o),
        (None, true) => GroupExit::Field,
        (None, false) => GroupExit::Leader,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIVE: GroupLiveOffsets = GroupLiveOffsets {
        task_signal: 2000,
        signal_live: 4,
    };

    #[test]
    fn prefers_the_field_then_btf_then_the_leader() {
        assert_eq!(
            choose_group_exit(true, || Some(LIVE), None),
            GroupExit::Field
        );
        assert_eq!(
            choose_group_exit(false, || Some(LIVE), None),
            GroupExit::Live(LIVE)
        );
        assert_eq!(choose_group_exit(false, || None, None), GroupExit::Leader);
    }

    #[test]
    fn forced_choices_fall_back_when_missing() {
        assert_eq!(
            choose_group_exit(true, || Some(LIVE), Some("live")),
            GroupExit::Live(LIVE)
        );
        assert_eq!(
            choose_group_exit(true, || None, Some("live")),
            GroupExit::Field
        );
        assert_eq!(
            choose_group_exit(true, || Some(LIVE), Some("leader")),
            GroupExit::Leader
        );
        assert_eq!(
            choose_group_exit(false, || Some(LIVE), Some("field")),
            GroupExit::Live(LIVE)
        );
    }

    #[test]
    fn this_kernel_has_what_rtrace_needs() {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if !crate::kernel::can_run(
            "this_kernel_has_what_rtrace_needs",
            (!root).then(|| "not root".to_string()),
        ) {
            return;
        }
        require(true).unwrap();
    }
}
