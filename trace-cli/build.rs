//! Builds the eBPF programs (trace-ebpf) with the nightly toolchain and bpf-linker,
//! which `cargo xtask setup` installs; the object lands in OUT_DIR.

use anyhow::{Context as _, anyhow};
use aya_build::{Package, Toolchain};

fn main() -> anyhow::Result<()> {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR")?;
    let root = std::path::Path::new(&manifest_dir)
        .parent()
        .ok_or_else(|| anyhow!("trace-cli has no parent directory"))?
        .join("trace-ebpf");
    let root = root.to_str().ok_or_else(|| anyhow!("non-UTF-8 path"))?;
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
