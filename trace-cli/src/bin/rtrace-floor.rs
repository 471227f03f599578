//! `rtrace-floor count|duration|openat|ring -- COMMAND [ARGS]`: runs COMMAND with one of
//! the floor programs attached (trace-ebpf's `floors.rs`: hooks that do next to nothing),
//! then says how many events they saw. `cargo xtask bench` runs it to show what the
//! hooks cost by themselves, beside what rtrace costs on the same hooks. For `ring`, the
//! programs write rtrace's rings as rtrace lays them out (one per CPU, or
//! `RTRACE_RINGS`), and a thread takes the records from them every millisecond and looks
//! at none of them: what is left of rtrace's reader without its merging, decoding and
//! printing.

use std::{
    process::{Command, ExitCode},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::Duration,
};

use aya::{
    Ebpf, EbpfLoader,
    maps::{MapData, PerCpuArray, RingBuf},
    programs::{RawTracePoint, TracePoint},
};

static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/trace"));

type Error = Box<dyn std::error::Error>;

const USAGE: &str = "usage: rtrace-floor count|duration|openat|ring -- COMMAND [ARGS]";

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
    // user-space type in aya. The rings as rtrace sizes them.
    let rings = ring_layout()?;
    let mut loader = EbpfLoader::new();
    for (i, name) in trace_common::maps::RINGS.into_iter().enumerate() {
        let bytes = if (i as u32) < rings.count {
            rings.bytes
        } else {
            trace_common::maps::UNUSED_RING_BYTES
        };
        loader.map_max_entries(name, bytes);
    }
    let mut bpf = loader
        .override_global(trace_common::maps::globals::RING_COUNT, &rings.count, true)
        .allow_unsupported_maps()
        .load(OBJECT)?;
    match kind {
        "count" | "duration" | "ring" => {
            attach_raw(&mut bpf, &format!("floor_{kind}_enter"), "sys_enter")?;
            attach_raw(&mut bpf, &format!("floor_{kind}_exit"), "sys_exit")?;
        }
        "openat" => {
            attach_tracepoint(&mut bpf, "floor_openat_enter", "sys_enter_openat")?;
            attach_tracepoint(&mut bpf, "floor_openat_exit", "sys_exit_openat")?;
        }
        _ => return Err(USAGE.into()),
    }
    let reader = if kind == "ring" {
        let mut taken = Vec::new();
        for name in &trace_common::maps::RINGS[..rings.count as usize] {
            let map = bpf
                .take_map(name)
                .ok_or_else(|| format!("no ring map {name} in the object"))?;
            taken.push(RingBuf::try_from(map)?);
        }
        Some(Reader::start(taken))
    } else {
        None
    };
    let status = Command::new(&command[0])
        .args(&command[1..])
        .status()
        .map_err(|e| format!("running {}: {e}", command[0]));
    let taken = reader.map(Reader::finish);
    let status = status?;
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
    if let Some(taken) = taken {
        eprintln!(
            "rtrace-floor: {taken} records taken from {} ring(s), {} not sent (the ring was full)",
            rings.count,
            sum(2)?
        );
    }
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

/// rtrace's ring layout here: one per CPU, or as many as `RTRACE_RINGS` says.
fn ring_layout() -> Result<trace_cli::kernel::rings::RingLayout, Error> {
    let var = std::env::var("RTRACE_RINGS").ok();
    let count = trace_cli::config::ring_count(var.as_deref())?;
    let cpus = trace_cli::kernel::rings::online_cpus();
    Ok(trace_cli::kernel::rings::layout(None, count, cpus))
}

/// The ring floor's reader: a thread that empties the rings every millisecond.
struct Reader {
    done: Arc<AtomicBool>,
    thread: thread::JoinHandle<u64>,
}

impl Reader {
    fn start(mut rings: Vec<RingBuf<MapData>>) -> Reader {
        let done = Arc::new(AtomicBool::new(false));
        let seen = done.clone();
        let thread = thread::spawn(move || {
            let mut taken = 0u64;
            loop {
                // Read once more after the command's end: what it sent last is there.
                let last = seen.load(Ordering::Acquire);
                for ring in &mut rings {
                    while ring.next().is_some() {
                        taken += 1;
                    }
                }
                if last {
                    return taken;
                }
                thread::sleep(Duration::from_millis(1));
            }
        });
        Reader { done, thread }
    }

    /// How many records the thread took, once it has read the last of them.
    fn finish(self) -> u64 {
        self.done.store(true, Ordering::Release);
        self.thread.join().unwrap_or(0)
    }
}
