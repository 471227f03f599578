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
    record::{KIND_SYSCALL, REC_HAS_ENTRY, REC_HAS_EXIT, REC_PENDING},
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
            "getppid" => {
                return Some(
                    "name: sys_enter_getppid\nformat:\n\
                     \tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n"
                        .to_string(),
                );
            }
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
    let mut item = bytes(&rec);
    item.push(0);
    item
}

/// One call of a 4-thread getppid storm (the bench's `threads` workload): no
/// arguments, no memory, the threads' records interleaved.
fn getppid(i: usize) -> Vec<u8> {
    let nr = trace_cli::decode::syscall_table::number("getppid").unwrap();
    let start = 1_000_000_000 + i as u64 * 250;
    let tid = 4242 + (i % 4) as u32;
    let rec = SyscallRecord {
        kind: KIND_SYSCALL,
        flags: REC_HAS_ENTRY | REC_HAS_EXIT,
        nr,
        tid,
        pid: 4242,
        enter_ns: start,
        exit_ns: start + 180,
        args: [0; 6],
        ret: 4200,
        comm: *b"storm\0\0\0\0\0\0\0\0\0\0\0",
        aug_len: [0, 0],
        aug_arg: [AUG_NO_ARG, AUG_NO_ARG],
        aug_cut: [0, 0],
    };
    bytes(&rec)
}

fn bytes(rec: &SyscallRecord) -> Vec<u8> {
    // SAFETY: SyscallRecord is plain repr(C) data with no padding holes read back.
    unsafe {
        std::slice::from_raw_parts(
            (rec as *const SyscallRecord).cast::<u8>(),
            size_of::<SyscallRecord>(),
        )
    }
    .to_vec()
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
    run_on(bencher, extra, &[], record, |first| {
        first.contains("dd/4242 write(fd: 1, buf: \"\\0\", count: 1)")
            || first.contains(r#""syscall":"read","args":{"fd":{"raw":0,"fd":0},"buf":{"raw":140724908871680,"str":"\u0000"}"#)
    });
}

fn run_on(
    bencher: divan::Bencher,
    extra: &[&str],
    prelude: &[Vec<u8>],
    record: fn(usize) -> Vec<u8>,
    real: fn(&str) -> bool,
) {
    let cfg = config(extra);
    let items: Vec<Vec<u8>> = (0..BATCH).map(record).collect();
    let mut printer = Printer::new(
        Catalog::new(Formats),
        FdTable::new(true, true, ProcCanon),
        &cfg,
    );
    // What is measured is real lines: the storm's two calls, decoded.
    let mut first = Vec::new();
    for item in prelude.iter().chain(&items[..2]) {
        printer.take(item, &mut first);
    }
    let first = String::from_utf8(first).unwrap();
    assert!(real(&first), "{first}");
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

/// perf's lines of a 4-thread getppid storm (the bench's `threads` workload).
#[divan::bench]
fn threads(bencher: divan::Bencher) {
    run_on(bencher, &[], &[], getppid, |first| {
        first.contains("storm/4243 getppid()") && first.contains("= 4200\n")
    });
}

/// The storm's lines while 512 other threads are blocked in a call (shown unfinished
/// already), as under `-a` on a busy machine: a line must not cost more for them.
#[divan::bench]
fn blocked(bencher: divan::Bencher) {
    let entries: Vec<Vec<u8>> = (0..512)
        .map(|i| {
            let mut item = record(0);
            let rec = item.as_mut_ptr().cast::<SyscallRecord>();
            // SAFETY: `item` holds a whole SyscallRecord, written from one.
            unsafe {
                let mut r = rec.read_unaligned();
                r.tid = 10_000 + i;
                r.flags = REC_HAS_ENTRY | REC_PENDING;
                r.exit_ns = 0;
                r.aug_len = [0, 0];
                r.aug_arg = [AUG_NO_ARG, AUG_NO_ARG];
                rec.write_unaligned(r);
            }
            item
        })
        .collect();
    run_on(bencher, &[], &entries, record, |first| {
        first.contains("dd/10511 read(buf: 0x7ffd12345000, count: 1) ")
            && first.contains("dd/4242 write(fd: 1, buf: \"\\0\", count: 1)")
    });
}
