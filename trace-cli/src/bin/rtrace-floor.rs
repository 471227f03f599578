//! `rtrace-floor count|duration|openat -- COMMAND [ARGS]`: runs COMMAND with one of the
//! floor programs attached (trace-ebpf's `floors.rs`: hooks that do next to nothing),
//! then says how many events they saw. `cargo xtask bench` runs it to show what the
//! hooks cost by themselves, beside what rtrace costs on the same hooks.

use std::process::{Command, ExitCode};

use aya::{
    Ebpf, EbpfLoader,
    maps::PerCpuArray,
    programs::{RawTracePoint, TracePoint},
};

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/trace"));

type Error = Box<dyn std::error::Error>;

const USAGE: &str = "usage: rtrace-floor count|duration|openat -- COMMAND [ARGS]";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rtrace-floor: {e}");
            ExitCode::from(2)
        }
    }
}

fn attach_raw(bpf: &mut Ebpf, name: &str, tracepoint: &str) -> Result<(), Error> {
    let prog: &mut RawTracePoint = bpf
        .program_mut(name)
        .ok_or_else(|| format!("no program {name} in the object"))?
        .try_into()?;
    prog.load()?;
    prog.attach(tracepoint)?;
    Ok(())
}

fn attach_tracepoint(bpf: &mut Ebpf, name: &str, event: &str) -> Result<(), Error> {
    let prog: &mut TracePoint = bpf
        .program_mut(name)
        .ok_or_else(|| format!("no program {name} in the object"))?
        .try_into()?;
    prog.load()?;
    prog.attach("syscalls", event)
        .map_err(|e| format!("attaching to syscalls:{event} (is tracefs mounted?): {e}"))?;
    Ok(())
}

fn run() -> Result<ExitCode, Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (kind, command) = match args.as_slice() {
        [kind, dashes, command @ ..] if dashes == "--" && !command.is_empty() => {
            (kind.as_str(), command)
        }
        _ => return Err(USAGE.into()),
    };
    // The object's other maps (rtrace's) are created too; only task storage has no
    // user-space type in aya.
    let mut bpf = EbpfLoader::new().allow_unsupported_maps().load(OBJECT)?;
    match kind {
        "count" | "duration" => {
            attach_raw(&mut bpf, &format!("floor_{kind}_enter"), "sys_enter")?;
            attach_raw(&mut bpf, &format!("floor_{kind}_exit"), "sys_exit")?;
        }
        "openat" => {
            attach_tracepoint(&mut bpf, "floor_openat_enter", "sys_enter_openat")?;
            attach_tracepoint(&mut bpf, "floor_openat_exit", "sys_exit_openat")?;
        }
        _ => return Err(USAGE.into()),
    }
    let status = Command::new(&command[0])
        .args(&command[1..])
        .status()
        .map_err(|e| format!("running {}: {e}", command[0]))?;
    let counts: PerCpuArray<_, u64> = PerCpuArray::try_from(
        bpf.map("floor_counts")
            .ok_or("no map floor_counts in the object")?,
    )?;
    let sum = |slot: u32| -> Result<u64, Error> { Ok(counts.get(&slot, 0)?.iter().sum()) };
    eprintln!(
        "rtrace-floor: {} events, {} ns inside calls",
        sum(0)?,
        sum(1)?
    );
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}
