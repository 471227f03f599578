//! How many records a second the reader turns into lines, on one core: the records of
//! a `dd bs=1` storm (read and write of one byte, their buffers copied), through the
//! same `Printer` the session uses, written to a sink. `cargo bench -p trace-cli`.

use std::io;

use clap::Parser as _;
use trace_cli::{
    cli::Args,
    config::{self, Config},
    decode::{Catalog, FormatSource, fd_table::FdTable},
    output::printer::Printer,
    perfconfig::TraceSettings,
    pids::fd_seed::ProcCanon,
};
use trace_common::{
    SyscallRecord,
    augment::AUG_NO_ARG,
    record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT},
};

/// As in the binary: the static (musl) build runs on mimalloc.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    divan::main();
}

/// Records in one batch (the reader drains the ring in batches of thousands).
const BATCH: usize = 10_000;

/// tracefs formats of the two calls, as this kernel writes them.
struct Formats;

impl FormatSource for Formats {
    fn sys_enter_format(&mut self, event: &str) -> Option<String> {
        let buf = match event {
            "read" => "char * buf",
            "write" => "const char * buf",
            _ => return None,
        };
        Some(format!(
            "name: sys_enter_{event}\nformat:\n\
             \tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
             \tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:{buf};\toffset:24;\tsize:8;\tsigned:0;\n\
             \tfield:size_t count;\toffset:32;\tsize:8;\tsigned:0;\n"
        ))
    }
}

/// One call of the storm as the kernel sends it: the record, then its buffer's byte.
fn record(i: usize) -> Vec<u8> {
    let (nr, fd) = if i.is_multiple_of(2) { (0, 0) } else { (1, 1) };
    let start = 1_000_000_000 + i as u64 * 1_000;
    let rec = SyscallRecord {
        kind: KIND_SYSCALL,
        flags: REC_HAS_ENTRY | REC_HAS_EXIT,
        nr,
        tid: 4242,
        pid: 4242,
        enter_ns: start,
        exit_ns: start + 700,
        args: [fd, 0x7ffd_1234_5000, 1, 0, 0, 0],
        ret: 1,
        comm: *b"dd\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        aug_len: [1, 0],
        aug_arg: [1, AUG_NO_ARG],
        aug_cut: [0, 0],
    };
    // SAFETY: SyscallRecord is plain repr(C) data with no padding holes read back.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            (&rec as *const SyscallRecord).cast::<u8>(),
            size_of::<SyscallRecord>(),
        )
    };
    let mut item = bytes.to_vec();
    item.push(0);
    item
}

fn config(extra: &[&str]) -> Config {
    let argv = ["rtrace"]
        .iter()
        .chain(extra)
        .chain(&["-o", "/dev/null", "--", "true"])
        .copied();
    config::resolve_with(
        Args::try_parse_from(argv).unwrap(),
        |_| true,
        &TraceSettings::default(),
        &trace_cli::env::Env::default(),
    )
    .unwrap()
}

fn run(bencher: divan::Bencher, extra: &[&str]) {
    let cfg = config(extra);
    let items: Vec<Vec<u8>> = (0..BATCH).map(record).collect();
    let mut printer = Printer::new(
        Catalog::new(Formats),
        FdTable::new(true, true, ProcCanon),
        &cfg,
    );
    // What is measured is real lines: the storm's two calls, decoded.
    let mut first = Vec::new();
    for item in &items[..2] {
        printer.take(item, &mut first);
    }
    let first = String::from_utf8(first).unwrap();
    assert!(
        first.contains("dd/4242 write(fd: 1, buf: \"\\0\", count: 1)")
            || first.contains(r#""syscall":"read","args":{"fd":{"raw":0,"fd":0},"buf":{"raw":140724908871680,"str":"\u0000"}"#),
        "{first}"
    );
    let mut out = io::sink();
    bencher
        .counter(divan::counter::ItemsCount::new(BATCH))
        .bench_local(|| {
            for item in &items {
                printer.take(item, &mut out);
            }
        });
}

/// perf trace's lines.
#[divan::bench]
fn lines(bencher: divan::Bencher) {
    run(bencher, &[]);
}

/// `--json` lines.
#[divan::bench]
fn json(bencher: divan::Bencher) {
    run(bencher, &["--json"]);
}
