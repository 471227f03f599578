//! Turning records into what perf trace prints: syscall names, argument names and kinds,
//! how each return value is shown. Pure, apart from the format source it is given.

pub mod args;
pub mod assemble;
pub mod beauty;
pub mod classes;
pub mod errno;
pub mod escape;
pub mod fd_effect;
pub mod fd_table;
pub mod format;
pub mod numbers;
pub mod selection;
pub mod strace_classes;
pub mod syscall_table;

use beauty::{Beauty, registry, shapes::On32};
use format::ArgSpec;
use trace_common::augment::AugPlan;

/// How a syscall's return value is shown (perf's rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetKind {
    Decimal,
    /// An address: hex.
    Hex,
    /// 0 means the timeout expired: `0 (Timeout)`.
    Timeout,
    /// A pid: `N (comm)` when the task's name is known.
    Pid,
    /// Never returns (exit, exit_group): `= ?`.
    NoReturn,
}

const RET_KINDS: &[(&str, RetKind)] = &[
    ("brk", RetKind::Hex),
    ("mmap", RetKind::Hex),
    ("mremap", RetKind::Hex),
    ("shmat", RetKind::Hex),
    ("poll", RetKind::Timeout),
    ("ppoll", RetKind::Timeout),
    ("select", RetKind::Timeout),
    ("_newselect", RetKind::Timeout),
    ("pselect6", RetKind::Timeout),
    ("clone", RetKind::Pid),
    ("clone3", RetKind::Pid),
    ("fork", RetKind::Pid),
    ("vfork", RetKind::Pid),
    ("getppid", RetKind::Pid),
    ("gettid", RetKind::Pid),
    ("getpgid", RetKind::Pid),
    ("set_tid_address", RetKind::Pid),
    ("wait4", RetKind::Pid),
    ("waitid", RetKind::Pid),
    ("exit", RetKind::NoReturn),
    ("exit_group", RetKind::NoReturn),
];

pub fn ret_kind(name: &str) -> RetKind {
    RET_KINDS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(RetKind::Decimal, |(_, k)| *k)
}

#[derive(Debug)]
pub struct SyscallInfo {
    pub name: String,
    /// `None` when the kernel has no format for it: arguments are shown raw.
    pub args: Option<Vec<ArgSpec>>,
    /// One per argument in `args`.
    pub beauties: Vec<Beauty>,
    /// What the kernel side copies from user memory for this call.
    pub plan: AugPlan,
    pub ret: RetKind,
    /// What it does to the process's fds and working directory.
    pub fd_effect: fd_effect::FdEffect,
    /// Some argument may be shown by the others' values (`beauty::context`).
    pub contextual: bool,
}

impl SyscallInfo {
    /// The plan with buffers read up to `limit` bytes (`--string-limit`).
    pub fn plan_with_limit(&self, limit: u16) -> AugPlan {
        let mut plan = self.plan;
        for slot in &mut plan.slots {
            let b = self.beauties.get(usize::from(slot.arg));
            if matches!(
                (slot.kind, b),
                (trace_common::augment::AUG_BUF, Some(Beauty::Buffer))
                    | (trace_common::augment::AUG_RETBUF, Some(Beauty::ReadBuffer))
            ) {
                slot.max = limit;
            }
        }
        plan
    }

    /// A 32-bit task's structs are laid out otherwise: its `struct stat`, `struct
    /// sigaction` and `struct rlimit` (but prlimit64's) are not the native ones, and
    /// are shown as pointers, as are the table-printed structs not laid out alike; its
    /// times are 32-bit but in the calls named `…time64`.
    fn without_native_structs(&mut self) {
        // clock_nanosleep_time64, timer_settime64, clock_gettime64…
        let time64 = self.name.ends_with("time64");
        let rlimit64 = self.name == "prlimit64";
        for b in &mut self.beauties {
            match b {
                Beauty::Stat | Beauty::SigAction | Beauty::SigActionOut => *b = Beauty::Hex,
                Beauty::Rlimit | Beauty::RlimitOut if !rlimit64 => *b = Beauty::Hex,
                Beauty::Timespec if !time64 => *b = Beauty::Timespec32,
                Beauty::Struct(shape) | Beauty::StructOut(shape) => match shape.on_32_bit {
                    On32::Same => {}
                    On32::SameInTime64 if time64 => {}
                    On32::Other | On32::SameInTime64 => *b = Beauty::Hex,
                },
                _ => {}
            }
        }
        self.plan = registry::plan_for(
            &self.name,
            self.args.as_deref().unwrap_or(&[]),
            &self.beauties,
        );
    }

    pub fn new(name: &str, args: Option<Vec<ArgSpec>>) -> Self {
        let beauties: Vec<Beauty> = args
            .iter()
            .flatten()
            .map(|a| registry::beauty_for(name, a))
            .collect();
        let plan = registry::plan_for(name, args.as_deref().unwrap_or(&[]), &beauties);
        let fd_effect = fd_effect::FdEffect::of(name, &beauties);
        SyscallInfo {
            name: name.to_string(),
            args,
            beauties,
            plan,
            ret: ret_kind(name),
            fd_effect,
            contextual: beauty::context::contextual(name),
        }
    }
}

/// Whether the kernel side sends rt_sigreturn's mask (a native task's, on x86_64 and
/// arm64; see its `sigreturn_mask`).
const SIGRETURN_MASK: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Where argument formats come from: tracefs on a real system, strings in tests.
pub trait FormatSource {
    /// The text of `events/syscalls/sys_enter_<event>/format`, if there is one.
    fn sys_enter_format(&mut self, event: &str) -> Option<String>;
}

/// Syscall descriptions, built the first time each number is seen.
pub struct Catalog<S> {
    /// By index, up to `syscall_table::MAX_NR`.
    infos: Vec<Option<SyscallInfo>>,
    /// The last number past the table a record named (a 32-bit task's number past the
    /// room of its indexes, such as ARM's private calls on arm64, or a damaged record
    /// file's): described in one slot, so that such a number costs no table of its size.
    stray: Option<(u32, SyscallInfo)>,
    /// Parsed formats by event name: the native and 32-bit tables share them.
    formats: std::collections::HashMap<&'static str, Option<Vec<ArgSpec>>>,
    source: S,
}

impl<S: FormatSource> Catalog<S> {
    pub fn new(source: S) -> Self {
        Self {
            infos: Vec::new(),
            stray: None,
            formats: std::collections::HashMap::new(),
            source,
        }
    }

    /// Describes these syscalls now (to plan the kernel's copies).
    pub fn preload(&mut self, indexes: impl IntoIterator<Item = u32>) {
        for nr in indexes {
            if syscall_table::name(nr).is_some() {
                self.get(nr);
            }
        }
    }

    /// (number, description) of every syscall described so far.
    pub fn described(&self) -> impl Iterator<Item = (u32, &SyscallInfo)> {
        self.infos
            .iter()
            .enumerate()
            .filter_map(|(nr, i)| Some((nr as u32, i.as_ref()?)))
    }

    pub fn get(&mut self, nr: u32) -> &SyscallInfo {
        if nr >= syscall_table::MAX_NR {
            if self.stray.as_ref().is_none_or(|(n, _)| *n != nr) {
                let info = self.describe(nr);
                self.stray = Some((nr, info));
            }
            return &self.stray.as_ref().expect("filled above").1;
        }
        let i = nr as usize;
        if self.infos.len() <= i {
            self.infos.resize_with(i + 1, || None);
        }
        if self.infos[i].is_none() {
            let info = self.describe(nr);
            self.infos[i] = Some(info);
        }
        self.infos[i].as_ref().expect("filled above")
    }

    /// The description of a syscall index: its name and its format's arguments, or
    /// `syscall_<nr>` with raw arguments for a number the tables do not name.
    fn describe(&mut self, nr: u32) -> SyscallInfo {
        let Some(name) = syscall_table::name(nr) else {
            let nr = trace_common::maps::stray_number(nr);
            return SyscallInfo::new(&format!("syscall_{nr}"), None);
        };
        let source = &mut self.source;
        let args = self
            .formats
            .entry(name)
            .or_insert_with(|| {
                source
                    .sys_enter_format(syscall_table::event_name(name))
                    .map(|text| format::parse_format(&text))
            })
            .clone();
        let native = nr < trace_common::maps::COMPAT_BASE;
        let args = match args {
            // The mask it restores, which the kernel side sends in the first
            // slot (a native task's; see the kernel side's `sigreturn_mask`).
            Some(a) if name == "rt_sigreturn" && a.is_empty() && native && SIGRETURN_MASK => {
                Some(vec![format::ArgSpec {
                    name: "mask".into(),
                    kind: format::ArgKind::Pointer,
                    ty: "sigset_t *".into(),
                }])
            }
            a => a,
        };
        let mut info = SyscallInfo::new(name, args);
        if !native {
            info.without_native_structs();
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_past_the_table_costs_no_table() {
        let mut c = Catalog::new(Fixed);
        assert_eq!(c.get(u32::MAX).name, "syscall_4294967295");
        assert_eq!(c.get(syscall_table::MAX_NR).name, "syscall_2048");
        // A native number where the 32-bit indexes lie: the kernel side marks it stray.
        let stray = trace_common::maps::STRAY_NR | 2037;
        assert_eq!(c.get(stray).name, "syscall_2037");
        // A 32-bit arm task's private calls, in the last indexes.
        #[cfg(target_arch = "aarch64")]
        assert_eq!(
            c.get(trace_common::maps::ARM_PRIVATE_INDEX + 5).name,
            "set_tls"
        );
        assert!(c.infos.is_empty());
    }

    struct Fixed;
    impl FormatSource for Fixed {
        fn sys_enter_format(&mut self, event: &str) -> Option<String> {
            (event == "newstat").then(|| {
                "\tfield:const char * filename;\toffset:16;\tsize:8;\tsigned:0;\n\
                 \tfield:struct stat * statbuf;\toffset:24;\tsize:8;\tsigned:0;\n"
                    .to_string()
            })
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn describes_with_aliases_and_raw_fallback() {
        let mut c = Catalog::new(Fixed);
        let stat = c.get(4);
        assert_eq!(stat.name, "stat");
        assert_eq!(stat.args.as_ref().unwrap().len(), 2);
        let read = c.get(0);
        assert_eq!(read.name, "read");
        assert!(read.args.is_none());
        assert_eq!(c.get(231).ret, RetKind::NoReturn);
        assert_eq!(c.get(9).ret, RetKind::Hex);
        assert_eq!(c.get(99_999).name, "syscall_99999");
    }
}
