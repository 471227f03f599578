//! rtrace's task runner: `cargo xtask <setup|trace|test|fuzz|…>`.

mod bench;
mod benchmarks_md;
mod container;
mod dist;
#[cfg(test)]
mod doc_links;
mod docs;
mod fidelity;
mod fuzz;
mod paths;
mod run;
mod setup;
mod soak;
mod test;
mod vm;

use std::process::Command;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "rtrace's set-up, run and test tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install what the eBPF build needs (nightly rust-src, bpf-linker); quick when present.
    Setup,
    /// Set up, build rtrace (release) and run it with the given arguments.
    Trace {
        /// Arguments for rtrace, e.g. `-- ls /`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Measure what tracing costs (as root): five workloads untraced, under the floors,
    /// rtrace, perf trace, strace and a bpftrace latency script; writes BENCHMARKS.md.
    Bench {
        /// Read and write calls each of the syscall storm (the getppid storms make as many).
        #[arg(long, default_value_t = 1_000_000)]
        calls: u64,
        /// Times each command runs (they take turns).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Only these workloads (storm, getppid, threads, forks, walk).
        only: Vec<String>,
    },
    /// Trace real programs with rtrace, perf trace and strace and compare the lines (as
    /// root): calls, the share identical to perf's, the differences by class.
    Fidelity {
        /// Only the first few programs (CI's check that the tool works).
        #[arg(long)]
        quick: bool,
        /// Print examples of each kind of difference.
        #[arg(short, long)]
        verbose: bool,
        /// Only these programs of the corpus (by name).
        only: Vec<String>,
    },
    /// Whether rtrace stays flat over a long system-wide trace (as root, minutes long,
    /// not in CI): -a, -a -s, -a -F all and -a --call-graph fp beside a churn of processes,
    /// threads and a file written through a shared mapping; RSS, fds and BPF map entries
    /// sampled, the curves written to BENCHMARKS.md.
    Soak {
        /// How long each mode runs.
        #[arg(long, default_value_t = 120)]
        seconds: u64,
        /// How often rtrace is sampled.
        #[arg(long, default_value_t = 10)]
        every: u64,
    },
    /// Fuzz the record-file reader (`rtrace -i`) with cargo-fuzz on nightly, with
    /// libFuzzer's memory limits; installs cargo-fuzz when missing.
    Fuzz {
        /// How long to run.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
    },
    /// Write shell completions (bash, zsh, fish) and the man page under target/doc-gen/.
    Docs,
    /// Set up (the musl targets, zig, cargo-zigbuild), then build what users install,
    /// under target/dist/: per architecture a static rtrace as a tarball and a .deb
    /// (with the man page and completions), and the container image `rtrace:<version>`
    /// saved as an archive (Docker is started when none answers).
    Dist {
        /// Only these architectures (x86_64, aarch64); all when none is named.
        arch: Vec<String>,
        /// Leave out the container image (no Docker needed).
        #[arg(long)]
        no_image: bool,
    },
    /// Set up, then run formatting and lint checks, unit tests and the root integration tests;
    /// with `--kernel 6.1|6.12|arm64|all`, only the root integration tests, inside VMs running
    /// Debian's kernels of those series.
    Test {
        /// Skip `cargo fmt --check` and clippy.
        #[arg(long)]
        no_lint: bool,
        /// Where the root integration tests run: native (the running kernel, the
        /// default), 6.1 or 6.12 (each in a QEMU VM), arm64 (Debian's arm64 6.1 in an
        /// emulated arm64 VM, a named subset of the tests), or all (everything native,
        /// then 6.1, 6.12 and arm64).
        #[arg(long, value_name = "native|6.1|6.12|arm64|all")]
        kernel: Option<String>,
        /// The container smoke test: rtrace inside Docker and runc containers (Docker
        /// is installed and started when none answers). Part of `--kernel all`.
        #[arg(long)]
        container: bool,
        /// Test-name filters for the root integration tests, e.g. `-- lifecycle`.
        filter: Vec<String>,
    },
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("xtask: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<()> {
    let cli = Cli::parse();
    // bpf-linker is installed into the cargo home's bin; make sure the eBPF build finds
    // it even where that directory is not on PATH.
    let cargo_bin = setup::cargo_home()?.join("bin");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![cargo_bin];
    dirs.extend(std::env::split_paths(&path));
    let joined = std::env::join_paths(dirs)?;
    // SAFETY: xtask is single-threaded and nothing reads the environment concurrently.
    unsafe { std::env::set_var("PATH", joined) };
    match cli.task {
        Task::Setup => setup::setup(),
        Task::Fidelity {
            quick,
            verbose,
            only,
        } => {
            setup::setup()?;
            fidelity::fidelity(quick, &only, verbose)
        }
        Task::Fuzz { seconds } => {
            setup::setup()?;
            fuzz::fuzz(seconds)
        }
        Task::Docs => docs::generate(std::path::Path::new("target/doc-gen")),
        Task::Dist { arch, no_image } => {
            setup::setup()?;
            dist::dist(&dist::choose(&arch)?, !no_image).map(drop)
        }
        Task::Trace { args } => {
            setup::setup()?;
            run::run_step(
                "build rtrace",
                Command::new("cargo").args(["build", "--release", "--package", "trace-cli"]),
            )?;
            let status = Command::new(paths::release_rtrace(&paths::workspace_root()))
                .args(args)
                .status()?;
            use std::os::unix::process::ExitStatusExt;
            std::process::exit(
                status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
            );
        }
        Task::Soak { seconds, every } => {
            setup::setup()?;
            soak::soak(soak::Options {
                seconds,
                every: every.max(1),
            })
        }
        Task::Bench { calls, runs, only } => {
            setup::setup()?;
            bench::bench(bench::Options { calls, runs, only })
        }
        Task::Test {
            no_lint,
            kernel,
            container,
            filter,
        } => {
            setup::setup()?;
            // `--container` alone runs only the container smoke test.
            if container && kernel.is_none() {
                return test::test_container();
            }
            let kernel = kernel.as_deref().unwrap_or("native");
            match vm::Kernels::parse(kernel)? {
                vm::Kernels::Native => {
                    test::test(!no_lint, &filter)?;
                    if container {
                        test::test_container()?;
                    }
                    Ok(())
                }
                vm::Kernels::Vms(targets) => {
                    // `all`: every check and test here, the containers, then the matrix.
                    if kernel == "all" {
                        test::test(!no_lint, &filter)?;
                    }
                    if kernel == "all" || container {
                        test::test_container()?;
                    }
                    test::test_kernels(&targets, &filter)
                }
            }
        }
    }
}
