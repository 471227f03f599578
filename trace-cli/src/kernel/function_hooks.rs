//! `-e`'s syscall programs on the chosen calls' own kernel functions
//! (`__x64_sys_openat`…): fentry at the entry, fexit at the return.
//!
//! A syscall event (`syscalls:sys_enter_openat`) is cheap for the calls it is not on,
//! but not free: while any is enabled the kernel sends every call of every task
//! through its slow syscall path (a getppid storm: 1.5× untraced in BENCHMARKS.md). A
//! function's fentry changes nothing but that function: the other calls run as
//! untraced.
//!
//! A tracing program names its function when it is loaded, so each of the two
//! programs is loaded (and verified) once for each chosen call, and the loaded
//! programs are kept by their fds until they are attached. aya loads a program once:
//! after each load its fd is copied and aya's own is let go, so that the next load
//! can name another function. Each attach is `BPF_RAW_TRACEPOINT_OPEN` without a
//! name, as aya's own fentry attach is, with the copied fd.

use std::{
    io,
    os::fd::{AsFd, AsRawFd, OwnedFd},
};

use aya::{
    Btf,
    programs::{FEntry, FExit, ProgramError, ProgramFd},
};
use aya_obj::generated::bpf_cmd::BPF_RAW_TRACEPOINT_OPEN;

use super::sys_bpf;

/// The entry program and the return program (trace-ebpf's syscalls.rs).
pub const PROGRAMS: [&str; 2] = ["sys_enter_fentry", "sys_exit_fexit"];

/// The most calls `-e` runs on their functions: each costs two loads of programs
/// the size of the syscall programs (the verifier's time, at start); a longer list
/// runs on the calls' events.
pub const AT_MOST: usize = 8;

/// One chosen call's function: its name and its id in the kernel's BTF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyscallFunction {
    pub name: String,
    pub btf_id: u32,
}

/// The programs loaded for each function, in the functions' order, not yet attached.
pub struct Loaded {
    enter: Vec<ProgramFd>,
    exit: Vec<ProgramFd>,
}

/// What [`load`] and [`attach`] fail with: the kernel refused a function, and rtrace
/// goes on with the calls' events.
#[derive(Debug)]
pub struct Refused {
    pub function: String,
    pub error: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.function, self.error)
    }
}

/// A BTF that names each function at its id in the kernel's, for aya's loads (see
/// `btf::stand_in`).
fn stand_in(functions: &[SyscallFunction]) -> Result<Btf, Refused> {
    let named: Vec<_> = functions
        .iter()
        .map(|f| super::btf::StandIn {
            name: &f.name,
            id: f.btf_id,
            func: true,
        })
        .collect();
    Btf::parse(&super::btf::stand_in(&named), aya::Endianness::default()).map_err(|e| Refused {
        function: "the functions' BTF".into(),
        error: e.to_string(),
    })
}

/// Loads the entry program `enter` and the return program `exit` once for each of
/// `functions`, the two on threads of their own.
pub fn load(
    enter: &mut FEntry,
    exit: &mut FExit,
    functions: &[SyscallFunction],
) -> Result<Loaded, Refused> {
    let btf = stand_in(functions)?;
    let (enter, exit) = std::thread::scope(|s| {
        let btf = &btf;
        let enter = s.spawn(move || {
            load_each(functions, |name| {
                enter.load(name, btf)?;
                let fd = enter.fd()?.try_clone().map_err(ProgramError::IOError);
                enter.unload()?;
                fd
            })
        });
        let exit = load_each(functions, |name| {
            exit.load(name, btf)?;
            let fd = exit.fd()?.try_clone().map_err(ProgramError::IOError);
            exit.unload()?;
            fd
        });
        let enter = enter
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (enter, exit)
    });
    Ok(Loaded {
        enter: enter?,
        exit: exit?,
    })
}

fn load_each(
    functions: &[SyscallFunction],
    mut load: impl FnMut(&str) -> Result<ProgramFd, ProgramError>,
) -> Result<Vec<ProgramFd>, Refused> {
    functions
        .iter()
        .map(|f| {
            load(&f.name).map_err(|e| Refused {
                function: f.name.clone(),
                error: error_chain(&e),
            })
        })
        .collect()
}

/// An error and its sources, on one line (the verifier's log is left out: `-v`
/// shows the reason, not the program).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = inner.source();
    }
    let line = s.lines().next().unwrap_or_default();
    // aya ends a refused load with the verifier's log, empty when the kernel refused
    // the program before verifying it.
    line.trim_end()
        .trim_end_matches("Verifier output:")
        .trim_end()
        .trim_end_matches('.')
        .to_string()
}

/// Attaches every loaded program to its function: the links, or why the kernel
/// refused one (the links made before it are dropped, which detaches them).
pub fn attach(loaded: Loaded, functions: &[SyscallFunction]) -> Result<Vec<OwnedFd>, Refused> {
    let mut links = Vec::with_capacity(loaded.enter.len() * 2);
    for progs in [&loaded.enter, &loaded.exit] {
        for (prog, f) in progs.iter().zip(functions) {
            let link = open(prog).map_err(|e| Refused {
                function: f.name.clone(),
                error: e.to_string(),
            })?;
            links.push(link);
        }
    }
    Ok(links)
}

/// `BPF_RAW_TRACEPOINT_OPEN` without a name: a tracing program's link to the
/// function it was loaded for.
fn open(prog: &ProgramFd) -> io::Result<OwnedFd> {
    let mut attr = sys_bpf::attr();
    attr.raw_tracepoint.prog_fd = prog.as_fd().as_raw_fd() as u32;
    sys_bpf::new_fd(BPF_RAW_TRACEPOINT_OPEN, &mut attr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct E(&'static str);
    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for E {}

    /// A refusal is told on one line, without the verifier's log or its empty heading.
    #[test]
    fn a_refusal_is_one_line() {
        assert_eq!(
            error_chain(&E(
                "the BPF_PROG_LOAD syscall returned Operation not permitted (os error 1). Verifier output: "
            )),
            "the BPF_PROG_LOAD syscall returned Operation not permitted (os error 1)"
        );
        assert_eq!(
            error_chain(&E("load failed. Verifier output: 0: R1=ctx\n1: exit")),
            "load failed. Verifier output: 0: R1=ctx"
        );
    }
}
