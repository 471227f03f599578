//! rtrace: a drop-in replacement for `perf trace`, on aya eBPF. The command line and
//! the exit status; everything else is in the library (`lib.rs`).

use clap::Parser;
use trace_cli::{cli, config, env, kernel, perfconfig, pids, say, session, signals};

/// The static (musl) build: musl's own allocator is several times slower than glibc's
/// on many small blocks, as ripgrep found; mimalloc keeps the static build's speed.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc keeps freed memory a while and commits its arenas whole: 67 MiB
/// resident for `rtrace -- true` where the glibc build has 25. Here freed memory goes
/// back at once (the arenas are committed as used: `cargo xtask dist` compiles that
/// in, as it is read before `main`): 23 MiB. (purge_delay is 15 in mimalloc.h's
/// `mi_option_e`, which the Rust binding does not name.)
#[cfg(target_env = "musl")]
fn give_memory_back() {
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: setting an option has no precondition; it is read when memory is freed.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
}

fn main() {
    // First of all: a stop asked for while rtrace starts is honoured, not lost.
    signals::catch_early();
    // Before rtrace opens anything: what a command it runs will inherit.
    pids::fd_seed::snapshot_inherited_fds();
    // Descriptors as perf takes them: up to the hard limit (the command gets the
    // user's limit back).
    kernel::resources::raise_fd_limit();
    // Large blocks (the kernel's BTF, read twice at start: 5 MiB each) always from
    // mmap, so that they go back to the system when freed. glibc would otherwise raise
    // its threshold after the first is freed and take the next ones from the heap,
    // which stays resident: 35 MiB instead of 24 for the whole session. (The static
    // build's allocator is mimalloc, tuned to the same end.)
    // SAFETY: mallopt only changes the allocator's tuning; nothing is allocated yet
    // on another thread.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024)
    };
    #[cfg(target_env = "musl")]
    give_memory_back();
    // `rtrace record [options] [-- command]`, as perf's `perf trace record`.
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let record = argv.get(1).is_some_and(|a| a == "record");
    if record {
        argv.remove(1);
    }
    // strace's habits (-tt, -c, -s 100…) get rtrace's equivalent, not clap's puzzle.
    if let Some(hint) = trace_cli::habits::strace_hint(argv.get(1..).unwrap_or_default()) {
        say!("rtrace: {hint}");
        std::process::exit(2);
    }
    let args = match cli::Args::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            let _ = e.print();
            std::process::exit(0);
        }
        Err(e) => {
            // One line: clap's first, with its tip when it has one.
            let msg = e.to_string();
            let first = msg
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            match msg.lines().find_map(|l| l.trim().strip_prefix("tip: ")) {
                Some(tip) => say!("rtrace: {first} ({tip}) — see rtrace --help"),
                None => say!("rtrace: {first} — see rtrace --help"),
            }
            std::process::exit(2);
        }
    };
    if args.version {
        // `rtrace --version | head -1` closes the pipe early: not worth a word.
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}\n{}",
            trace_cli::build_info::line(),
            kernel::features::report()
        );
        return;
    }
    // The environment, read once: nothing below reads a variable.
    let env = env::Env::read();
    let (perf, config_warnings) = perfconfig::from_env(&env);
    for w in config_warnings {
        say!("rtrace: {w}");
    }
    let cfg = match config::resolve_with(args, pids::targets::task_exists, &perf, &env)
        .and_then(|c| config::for_record(c, record))
    {
        Ok(c) => c,
        Err(e) => {
            say!("rtrace: {e}");
            std::process::exit(2);
        }
    };
    for w in &cfg.warnings {
        say!("rtrace: {w}");
    }
    if let Some(path) = cfg.input.clone() {
        // A replay has no session to stop cleanly: the signals end it as they would
        // any program.
        signals::restore_inherited();
        match trace_cli::record::replay::replay(&cfg, &path) {
            Ok(code) => std::process::exit(code),
            Err(e) => {
                say!("rtrace: {e}");
                std::process::exit(1);
            }
        }
    }
    // A record written to stdout (`-o -`) is not a file to name.
    let recorded = cfg
        .output
        .clone()
        .filter(|_| cfg.record && !cfg.trace_to_stdout());
    match session::run(cfg) {
        Ok(code) => {
            if let Some(path) = recorded {
                let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                if size == 0 {
                    // Stopped before its header was written: nothing to print.
                    std::process::exit(code);
                }
                say!(
                    "rtrace: wrote {} ({size} bytes); print it with: rtrace -i {}",
                    path.display(),
                    path.display()
                );
            }
            std::process::exit(code)
        }
        Err(e) => {
            let code = e.exit_code();
            // Every message names its cause: printed once, not its chain, but for a
            // limit the kernel hit, which aya's messages keep only in their chain.
            // Only where the kernel refused rtrace's own objects: a command's exec failing
            // for want of memory is the command's. The descriptors rtrace holds are its
            // own at every step.
            let limits = matches!(
                e,
                session::SessionError::Load(_) | session::SessionError::Io { .. }
            );
            let line = match limits {
                true => kernel::resources::one_line(&e),
                false => kernel::resources::fd_line(&e),
            };
            match line {
                Some(line) => say!("rtrace: {line}"),
                None => say!("rtrace: {e}"),
            }
            std::process::exit(code);
        }
    }
}
