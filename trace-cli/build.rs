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
