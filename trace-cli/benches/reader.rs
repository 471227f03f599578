//! How many records a second the reader turns into lines, on one core: the records of
//! a `dd bs=1` storm (read and write of one byte, their buffers copied), through the
//! same `Printer` the session uses, written to a sink. `cargo bench -p trace-cli`.

use std::io;

use clap::Parser as _;
use trace_cli::{
    cli::Args,
    config::{self, Config},
    decode::{
        Catalog, FormatSource,
        fd_table::{FdTable, ProcSeed},
    },
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
            "clone" => {
                return Some(
                    "name: sys_enter_clone\nformat:\n\
                     \tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
                     \tfield:unsigned long clone_flags;\toffset:16;\tsize:8;\tsigned:0;\n\
                     \tfield:unsigned long newsp;\toffset:24;\tsize:8;\tsigned:0;\n"
                        .to_string(),
                );
            }
            "exit_group" => {
                return Some(
                    "name: sys_enter_exit_group\nformat:\n\
                     \tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
                     \tfield:int error_code;\toffset:16;\tsize:8;\tsigned:0;\n"
                        .to_string(),
                );
            }
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

/// Processes alive beside the churn, and the fds each has open.
const ALIVE: u32 = 2000;
const OPEN_FDS: i32 = 20;

/// One call of a churn of short processes (a build): process 1 forks a child, which
/// ends (exit_group), while [`ALIVE`] other processes hold [`OPEN_FDS`] fds each.
fn churn(i: usize) -> Vec<u8> {
    let child = 100_000 + (i / 2) as u32;
    let at = 1_000_000_000 + i as u64 * 1_000;
    let (name, pid, flags, ret) = match i % 2 {
        0 => ("clone", 1, REC_HAS_ENTRY | REC_HAS_EXIT, i64::from(child)),
        _ => ("exit_group", child, REC_HAS_ENTRY, 0),
    };
    let rec = SyscallRecord {
        kind: KIND_SYSCALL,
        flags,
        nr: trace_cli::decode::syscall_table::number(name).unwrap(),
        tid: pid,
        pid,
        enter_ns: at,
        exit_ns: at + 500,
        args: [17, 0, 0, 0, 0, 0],
        ret,
        comm: *b"make\0\0\0\0\0\0\0\0\0\0\0\0",
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
    run_on(bencher, extra, &[], Vec::new(), record, |first| {
        first.contains("dd/4242 write(fd: 1, buf: \"\\0\", count: 1)")
            || first.contains(r#""syscall":"read","args":{"fd":{"raw":0,"fd":0},"buf":{"raw":140724908871680,"str":"\u0000"}"#)
    });
}

fn run_on(
    bencher: divan::Bencher,
    extra: &[&str],
    prelude: &[Vec<u8>],
    seeds: Vec<ProcSeed>,
    record: fn(usize) -> Vec<u8>,
    real: fn(&str) -> bool,
) {
    let cfg = config(extra);
    let items: Vec<Vec<u8>> = (0..BATCH).map(record).collect();
    let mut fds = FdTable::new(true, true, ProcCanon);
    fds.seed_procs(seeds, &[]);
    let mut printer = Printer::new(Catalog::new(Formats), fds, &cfg);
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
    run_on(bencher, &[], &[], Vec::new(), getppid, |first| {
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
    run_on(bencher, &[], &entries, Vec::new(), record, |first| {
        first.contains("dd/10511 read(buf: 0x7ffd12345000, count: 1) ")
            && first.contains("dd/4242 write(fd: 1, buf: \"\\0\", count: 1)")
    });
}

/// A churn of short processes while [`ALIVE`] others hold fds (`-a` on a build
/// machine): what a fork and an exit cost must not grow with the processes alive.
#[divan::bench]
fn churn_beside_many(bencher: divan::Bencher) {
    let fds: Vec<(i32, Box<[u8]>)> = (0..OPEN_FDS)
        .map(|fd| (fd, b"/usr/lib/x86_64-linux-gnu/libc.so.6".to_vec().into()))
        .collect();
    let seeds = (1..=ALIVE)
        .map(|pid| ProcSeed {
            pid,
            path: Some(b"/src".to_vec().into()),
            before_ns: 0,
            after_ns: 0,
            fds: Some(fds.clone()),
            same_view: true,
        })
        .collect();
    run_on(bencher, &[], &[], seeds, churn, |first| {
        first.contains("make/1 clone(clone_flags: ") && first.contains("make/100000 exit_group(")
    });
}
