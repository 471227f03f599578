//! Where `-e`'s syscall programs run: on the raw syscall tracepoints, which every call
//! of every task passes through, or on the chosen calls' own events
//! (`syscalls:sys_enter_openat`…), where the other calls run no program at all.
//!
//! The events are the default where rtrace can tell, at start, that they show what
//! the raw tracepoints would: rtrace in the initial pid namespace (a child is followed
//! at fork there, and its pid is the kernel's); no exec chosen (its reads need the
//! registers) nor rt_sigreturn; every chosen call has both events; no kernel frames
//! asked for; and, as the kernel sends no syscall event for a 32-bit task's calls, a
//! 64-bit call chosen and every target known to run 64-bit code (the command's file,
//! each `-p`/`-t` task's). A 64-bit target that later execs a 32-bit program is not
//! seen (docs/limits.md).
//!
//! Where the events can run, the calls' own kernel functions are better still
//! (`kernel::function_hooks`: fentry, which leaves the syscall path of the other calls
//! as it is): chosen unless a fork call is chosen (its child's first return passes
//! no function, where it passes the event), more than `function_hooks::AT_MOST`
//! calls are, or the kernel's BTF lacks a call's function. Where the kernel refuses to
//! attach to a function, the loader takes the events.

use std::{fs::File, io::Read, path::Path};

use crate::{
    config::{Config, HooksChoice, Targets},
    decode::{classes, syscall_table},
    kernel::{
        function_hooks,
        loader::{SyscallEvents, SyscallFunction, SyscallHooks},
        tracefs::Tracefs,
    },
    workload,
};

/// The most calls `-e` runs on their own events: each costs two perf events, about a
/// millisecond each to open and link at start; a longer list is cheaper on the raw
/// tracepoints.
const EVENTS_AT_MOST: usize = 16;

/// Why `-e`'s programs stay on the raw tracepoints (`-v` says it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RawBecause {
    Forced,
    MayRun32Bit,
    InPidNamespace,
    NoPerfLinks,
    ExecChosen,
    OnlyCompat,
    KernelFrames,
    Unnamed,
    TooMany,
    NoEvents,
}

impl RawBecause {
    pub fn says(self) -> &'static str {
        match self {
            Self::Forced => "RTRACE_SYSCALL_HOOKS=raw",
            Self::MayRun32Bit => {
                "a target may run 32-bit code, whose calls have no syscall events (the whole system, or a 32-bit program)"
            }
            Self::InPidNamespace => "rtrace runs inside a pid namespace",
            Self::NoPerfLinks => {
                "this kernel has no BPF links on perf events (they came with Linux 5.15)"
            }
            Self::ExecChosen => {
                "an exec or rt_sigreturn is chosen (their reads need the registers)"
            }
            Self::OnlyCompat => "the chosen calls are 32-bit ones, which have no syscall events",
            Self::KernelFrames => {
                "the kernel's frames are asked for (--kernel-syscall-graph), which a syscall event's program does not get on Linux 6.1"
            }
            Self::Unnamed => "a chosen call has no name in this architecture's table",
            Self::TooMany => "more than 16 calls are chosen",
            Self::NoEvents => "a chosen call has no syscall events in this kernel",
        }
    }
}

/// Why `-e`'s programs run on the chosen calls' events, not their functions (`-v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EventsBecause {
    Forced,
    ForkChosen,
    TooMany,
    NoFunction,
    CannotAttach,
}

impl EventsBecause {
    pub fn says(self) -> &'static str {
        match self {
            Self::Forced => "RTRACE_SYSCALL_HOOKS=events",
            Self::ForkChosen => {
                "a fork is chosen (a new child's return from it passes its event, not its function)"
            }
            // function_hooks::AT_MOST, checked below.
            Self::TooMany => "more than 8 calls are chosen",
            Self::NoFunction => "the kernel's BTF names no function for a chosen call",
            Self::CannotAttach => {
                "arm64 kernels before Linux 6.4 attach no programs to functions (RTRACE_SYSCALL_HOOKS=functions tries)"
            }
        }
    }
}

const _: () = assert!(
    function_hooks::AT_MOST == 8,
    "EventsBecause::TooMany says 8"
);

/// Where the syscall programs run, and why not somewhere cheaper.
pub(super) struct Choice {
    pub hooks: SyscallHooks,
    pub raw_because: Option<RawBecause>,
    pub events_because: Option<EventsBecause>,
}

/// Where the syscall programs run for `cfg` (see the module's head), and, on the raw
/// tracepoints or the events with `-e`, why. `func_ids` looks functions up in the
/// kernel's BTF.
pub(super) fn choose(
    cfg: &Config,
    initial_ns: bool,
    tracefs: &Tracefs,
    func_ids: impl FnOnce(&[&str]) -> Vec<Option<u32>>,
) -> Choice {
    let raw = |why| Choice {
        hooks: SyscallHooks::Raw,
        raw_because: why,
        events_because: None,
    };
    let Some(nrs) = &cfg.selection else {
        return raw(None);
    };
    let (events, names) = match events(cfg, nrs, initial_ns, tracefs) {
        Ok(found) => found,
        Err(why) => return raw(Some(why)),
    };
    let functions = if attaches_to_functions(cfg.syscall_hooks) {
        functions(cfg.syscall_hooks, &names, func_ids)
    } else {
        Err(EventsBecause::CannotAttach)
    };
    match functions {
        Ok(functions) => Choice {
            hooks: SyscallHooks::Functions { functions, events },
            raw_because: None,
            events_because: None,
        },
        Err(why) => Choice {
            hooks: SyscallHooks::Events(events),
            raw_because: None,
            events_because: Some(why),
        },
    }
}

/// Whether the kernel is one that can attach programs to functions (fentry) when not
/// forced: arm64 had no ftrace direct calls, which fentry needs, before Linux 6.4, and
/// loading the programs first to be refused only at their attach costs start-up.
/// Others are tried; a refusal falls back to the events.
fn attaches_to_functions(choice: HooksChoice) -> bool {
    if choice == HooksChoice::Functions || !cfg!(target_arch = "aarch64") {
        return true;
    }
    aya::util::KernelVersion::current().is_ok_and(|v| v >= aya::util::KernelVersion::new(6, 4, 0))
}

/// The functions of the calls whose table names are `names` (one for each of the
/// events), where they can be used.
fn functions(
    choice: HooksChoice,
    names: &[&str],
    func_ids: impl FnOnce(&[&str]) -> Vec<Option<u32>>,
) -> Result<Vec<SyscallFunction>, EventsBecause> {
    if choice == HooksChoice::Events {
        return Err(EventsBecause::Forced);
    }
    if names.iter().any(|n| classes::is_fork(n)) {
        return Err(EventsBecause::ForkChosen);
    }
    if names.len() > function_hooks::AT_MOST {
        return Err(EventsBecause::TooMany);
    }
    let function_names: Vec<String> = names
        .iter()
        .map(|n| syscall_table::function_name(n))
        .collect();
    let refs: Vec<&str> = function_names.iter().map(String::as_str).collect();
    function_names
        .iter()
        .zip(func_ids(&refs))
        .map(|(name, id)| {
            Ok(SyscallFunction {
                name: name.clone(),
                btf_id: id.ok_or(EventsBecause::NoFunction)?,
            })
        })
        .collect()
}

/// The chosen calls' events, and for each the table name of its first call.
fn events(
    cfg: &Config,
    nrs: &[u32],
    initial_ns: bool,
    tracefs: &Tracefs,
) -> Result<(Vec<SyscallEvents>, Vec<&'static str>), RawBecause> {
    match cfg.syscall_hooks {
        HooksChoice::Raw => return Err(RawBecause::Forced),
        HooksChoice::Events | HooksChoice::Functions => {}
        HooksChoice::Auto if runs_only_64bit_code(cfg) => {}
        HooksChoice::Auto => return Err(RawBecause::MayRun32Bit),
    }
    if !initial_ns {
        return Err(RawBecause::InPidNamespace);
    }
    if cfg.call_graph.is_some_and(|g| g.kernel_syscalls) {
        return Err(RawBecause::KernelFrames);
    }
    if !aya::features().bpf_perf_link() {
        return Err(RawBecause::NoPerfLinks);
    }
    let mut names: Vec<(&str, u32, &str)> = Vec::new();
    for &nr in nrs
        .iter()
        .filter(|&&nr| nr < trace_common::maps::COMPAT_BASE)
    {
        let name = syscall_table::name(nr).ok_or(RawBecause::Unnamed)?;
        if classes::is_exec(name) || name == "rt_sigreturn" {
            return Err(RawBecause::ExecChosen);
        }
        names.push((syscall_table::event_name(name), nr, name));
    }
    if names.is_empty() {
        return Err(RawBecause::OnlyCompat);
    }
    names.sort_unstable();
    names.dedup();
    let mut events: Vec<SyscallEvents> = Vec::new();
    let mut table_names = Vec::new();
    let mut last = None;
    for (event, nr, name) in names {
        if last == Some(event) {
            // Another number of the same call: its events are attached already.
            events.last_mut().expect("pushed with `last`").nrs.push(nr);
            continue;
        }
        if events.len() == EVENTS_AT_MOST {
            return Err(RawBecause::TooMany);
        }
        let id = |side: &str| tracefs.event_id("syscalls", &format!("sys_{side}_{event}"));
        let (Some(enter), Some(exit)) = (id("enter"), id("exit")) else {
            return Err(RawBecause::NoEvents);
        };
        events.push(SyscallEvents {
            nrs: vec![nr],
            enter,
            exit,
        });
        table_names.push(name);
        last = Some(event);
    }
    Ok((events, table_names))
}

/// Whether every target is known to run 64-bit code: the command's file (or its
/// script's interpreter), each `-p`/`-t` task's executable. Not the whole system.
fn runs_only_64bit_code(cfg: &Config) -> bool {
    match &cfg.targets {
        Targets::Workload(argv) => argv.first().is_some_and(|name| {
            workload::resolve_program(name, cfg.path.as_deref())
                .is_some_and(|path| program_is_64bit(&path))
        }),
        Targets::Pids(ids) | Targets::Tids(ids) => ids
            .iter()
            .all(|id| file_is_64bit(Path::new(&format!("/proc/{id}/exe")))),
        Targets::System { .. } => false,
    }
}

/// A program file: an ELF, or a script whose interpreter is one.
fn program_is_64bit(path: &Path) -> bool {
    let head = read_head(path);
    match interpreter(&head) {
        Some(interp) => file_is_64bit(Path::new(interp)),
        None => elf_is_64bit(&head),
    }
}

fn file_is_64bit(path: &Path) -> bool {
    elf_is_64bit(&read_head(path))
}

/// The first bytes of a file: enough for an ELF's class or a `#!` line.
fn read_head(path: &Path) -> Vec<u8> {
    let mut head = Vec::with_capacity(256);
    if let Ok(f) = File::open(path) {
        let _ = f.take(256).read_to_end(&mut head);
    }
    head
}

/// A 64-bit ELF (`ELFCLASS64`).
fn elf_is_64bit(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF") && head.get(4) == Some(&2)
}

/// The interpreter of a `#!` script, as the kernel reads it: the first word after the
/// `#!`, on the first line.
fn interpreter(head: &[u8]) -> Option<&str> {
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n')?];
    let word = line
        .split(|b| b.is_ascii_whitespace())
        .find(|w| !w.is_empty())?;
    std::str::from_utf8(word).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The functions are chosen unless forced off, a fork is chosen, too many calls
    /// are, or the kernel lacks one; each is named as SYSCALL_DEFINE names it.
    #[test]
    fn the_functions_are_chosen_where_they_show_what_the_events_do() {
        let prefix = syscall_table::function_name("openat").replace("openat", "");
        let btf = |names: &[&str]| -> Vec<Option<u32>> {
            names
                .iter()
                .map(|n| (!n.ends_with("_nope")).then_some(n.len() as u32))
                .collect()
        };
        let chosen = functions(HooksChoice::Auto, &["openat", "close"], btf).unwrap();
        let names: Vec<&str> = chosen.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, [format!("{prefix}openat"), format!("{prefix}close")]);
        assert_eq!(chosen[0].btf_id, (prefix.len() + 6) as u32);
        assert_eq!(
            functions(HooksChoice::Functions, &["openat"], btf).map(|f| f.len()),
            Ok(1)
        );
        assert_eq!(
            functions(HooksChoice::Events, &["openat"], btf),
            Err(EventsBecause::Forced)
        );
        assert_eq!(
            functions(HooksChoice::Auto, &["openat", "clone"], btf),
            Err(EventsBecause::ForkChosen)
        );
        assert_eq!(
            functions(HooksChoice::Auto, &["openat", "nope"], btf),
            Err(EventsBecause::NoFunction)
        );
        let many = ["read"; function_hooks::AT_MOST + 1];
        assert_eq!(
            functions(HooksChoice::Auto, &many, btf),
            Err(EventsBecause::TooMany)
        );
        assert_eq!(
            functions(HooksChoice::Auto, &many[1..], btf).map(|f| f.len()),
            Ok(function_hooks::AT_MOST)
        );
    }

    #[test]
    fn elf_class_and_script_interpreter() {
        let mut elf64 = b"\x7fELF\x02\x01\x01".to_vec();
        elf64.resize(64, 0);
        let mut elf32 = elf64.clone();
        elf32[4] = 1;
        assert!(elf_is_64bit(&elf64));
        assert!(!elf_is_64bit(&elf32));
        assert!(!elf_is_64bit(b"\x7fEL"));
        assert!(!elf_is_64bit(b"#!/bin/sh\n"));
        assert_eq!(interpreter(b"#!/bin/sh\necho\n"), Some("/bin/sh"));
        assert_eq!(
            interpreter(b"#!  /usr/bin/env python3\n"),
            Some("/usr/bin/env")
        );
        assert_eq!(
            interpreter(b"#!/bin/sh"),
            None,
            "no end of line in the head"
        );
        assert_eq!(interpreter(b"#!\n"), None);
        assert_eq!(interpreter(&elf64), None);
    }

    #[test]
    fn this_test_and_sh_run_64bit_code() {
        assert!(file_is_64bit(Path::new("/proc/self/exe")));
        assert!(program_is_64bit(Path::new("/bin/sh")));
        assert!(!program_is_64bit(Path::new("/nonexistent/rtrace-test")));
    }
}
