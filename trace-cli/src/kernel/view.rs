//! rtrace's own view of the file system, as the kernel side compares it: the
//! `learn_view` program (trace-ebpf `view.rs`) reads the mount namespace and root of
//! the task it runs in, and BPF_PROG_TEST_RUN runs a raw-tracepoint program in the
//! caller's task. So rtrace runs it once, itself, before anything is attached; the
//! program is unloaded after.

use std::{
    io,
    os::fd::{AsFd, AsRawFd},
};

use aya::{Ebpf, programs::RawTracePoint};
use aya_obj::generated::bpf_cmd::BPF_PROG_TEST_RUN;

use super::sys_bpf;

const LEARN: &str = "learn_view";

/// Writes rtrace's view into `rtrace_view`. Where it fails, the records carry no view
/// and the reader asks /proc, as it did before.
pub fn learn(bpf: &mut Ebpf) -> io::Result<()> {
    let prog: &mut RawTracePoint = bpf
        .program_mut(LEARN)
        .ok_or_else(|| io::Error::other(format!("no program {LEARN}")))?
        .try_into()
        .map_err(io::Error::other)?;
    prog.load().map_err(io::Error::other)?;
    let ran = run_once(prog);
    let _ = prog.unload();
    match ran? {
        0 => Ok(()),
        _ => Err(io::Error::other(
            "the kernel's fields could not be read in rtrace's own task",
        )),
    }
}

/// BPF_PROG_TEST_RUN, no context: the program's return value.
fn run_once(prog: &RawTracePoint) -> io::Result<u32> {
    let fd = prog.fd().map_err(io::Error::other)?;
    let mut attr = sys_bpf::attr();
    // Writing union fields is safe; the zeroed rest (no data, no context, no repeat)
    // is what a raw tracepoint's test run asks.
    attr.test.prog_fd = fd.as_fd().as_raw_fd() as u32;
    sys_bpf::call(BPF_PROG_TEST_RUN, &mut attr)?;
    // SAFETY: the field the kernel filled in.
    Ok(unsafe { attr.test.retval })
}
