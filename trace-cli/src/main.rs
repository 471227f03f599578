//! rtrace: a drop-in replacement for `perf trace`, on aya eBPF.

mod cli;
mod config;
mod decode;
mod kernel;
mod output;
mod perfconfig;
mod pids;
mod session;
mod signals;
mod workload;

use clap::Parser;

fn main() {
    let args = match cli::Args::try_parse() {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            let _ = e.print();
            std::process::exit(0);
        }
        Err(e) => {
            let msg = e.to_string();
            let first = msg
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            eprintln!("rtrace: {first} — see rtrace --help");
            std::process::exit(2);
        }
    };
    let perf = perfconfig::from_env();
    let cfg = match config::resolve_with(args, pids::targets::task_exists, &perf) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rtrace: {e}");
            std::process::exit(2);
        }
    };
    for w in &cfg.warnings {
        eprintln!("rtrace: {w}");
    }
    match session::run(cfg) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            let code = e.exit_code();
            // Every message already names its cause: print it once, not its chain.
            eprintln!("rtrace: {e}");
            std::process::exit(code);
        }
    }
}
