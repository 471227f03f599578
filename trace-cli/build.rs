//! Builds the eBPF programs (trace-ebpf) with the nightly toolchain and bpf-linker,
//! which `cargo xtask setup` installs; the object lands in OUT_DIR.

use anyhow::{Context as _, anyhow};
use aya_build::{Package, Toolchain};

/// The version of the `aya` package in the workspace's lock file, for `rtrace --version`.
fn aya_version(lock: &str) -> Option<&str> {
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l == "name = \"aya\"" {
            return lines
                .next()?
                .strip_prefix("version = \"")?
                .strip_suffix('"');
        }
    }
    None
}

/// What the binary is built from: its changes mark a build `-dirty`.
const SOURCES: [&str; 5] = [
    "trace-cli",
    "trace-ebpf",
    "trace-common",
    "Cargo.toml",
    "Cargo.lock",
];

/// The commit checked out in `workspace` (12 hex digits, `-dirty` when the sources the
/// binary is built from differ from it), or `unknown` without git or a checkout.
/// `RTRACE_GIT_COMMIT` set by a packager wins. Reruns when HEAD moves or a source changes.
fn git_commit(workspace: &std::path::Path) -> String {
    println!("cargo:rerun-if-env-changed=RTRACE_GIT_COMMIT");
    if let Ok(c) = std::env::var("RTRACE_GIT_COMMIT") {
        return c;
    }
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(workspace)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    // Only the workspace's own checkout: a source tree unpacked inside another
    // repository would otherwise report that repository's commit.
    let same = |top: &str| {
        let canon = |p: &std::path::Path| p.canonicalize().ok();
        canon(std::path::Path::new(top)).is_some_and(|t| Some(t) == canon(workspace))
    };
    if !git(&["rev-parse", "--show-toplevel"]).is_some_and(|t| same(&t)) {
        return "unknown".into();
    }
    // HEAD (a linked worktree's own), and where branches live (the common directory:
    // the loose refs' directory and packed-refs). A path that does not exist would
    // make cargo rerun this script on every build: only those that do are watched.
    for rel in ["HEAD", "refs/heads", "packed-refs"] {
        // Relative to the workspace (where git ran) unless git says it absolutely.
        if let Some(path) = git(&["rev-parse", "--git-path", rel])
            .map(|p| workspace.join(p))
            .filter(|p| p.exists())
        {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    for s in SOURCES {
        println!("cargo:rerun-if-changed={}", workspace.join(s).display());
    }
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return "unknown".into();
    };
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(SOURCES);
    let dirty = git(&status).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    }
}

fn main() -> anyhow::Result<()> {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR")?;
    let workspace = std::path::Path::new(&manifest_dir)
        .parent()
        .ok_or_else(|| anyhow!("trace-cli has no parent directory"))?;
    let lock = workspace.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let lock = std::fs::read_to_string(&lock).unwrap_or_default();
    println!(
        "cargo:rustc-env=RTRACE_AYA_VERSION={}",
        aya_version(&lock).unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=RTRACE_TARGET={}",
        std::env::var("TARGET").context("TARGET")?
    );
    println!(
        "cargo:rustc-env=RTRACE_GIT_COMMIT={}",
        git_commit(workspace)
    );
    let root = workspace.join("trace-ebpf");
    let root = root.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?;
    // aya-build passes every line of the nested cargo's output on as a build-script
    // warning; a quiet nested cargo still reports its errors and real warnings.
    // SAFETY: the build script is single-threaded; nothing reads the environment at once.
    unsafe { std::env::set_var("CARGO_TERM_QUIET", "true") };
    // Under cargo-fuzz (fuzz/) RUSTFLAGS carries the sanitizer flags; they do not reach
    // the eBPF build, as aya-build gives its nested cargo CARGO_ENCODED_RUSTFLAGS, which
    // cargo takes over RUSTFLAGS.
    aya_build::build_ebpf(
        [Package {
            name: "trace-ebpf",
            root_dir: root,
            ..Default::default()
        }],
        Toolchain::default(),
    )
    .context("building the eBPF programs failed; run `cargo xtask setup` first")
}
