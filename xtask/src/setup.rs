//! `cargo xtask setup`: installs what the eBPF build needs, and only what is missing.
//!
//! The eBPF crate is built by aya-build with the preinstalled nightly toolchain, which
//! needs (1) the nightly's `rust-src` for `-Z build-std=core` and (2) `bpf-linker`.
//! bpf-linker is built from crates.io against the nightly's own libLLVM, so no system
//! LLVM is needed: a lasting directory under the cargo home holds `lib/libLLVM.so` and
//! `lib/<soname>`, both links to the nightly's libLLVM, and bpf-linker finds it there
//! through its rpath at run time.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use crate::run::{capture, run_step};

pub const NIGHTLY: &str = "nightly";
pub const BPF_LINKER_VERSION: &str = "0.13.0";

pub fn setup() -> Result<()> {
    ensure_rust_src()?;
    ensure_bpf_linker()?;
    Ok(())
}

fn ensure_rust_src() -> Result<()> {
    let installed = capture(
        "list the nightly's components",
        Command::new("rustup").args(["component", "list", "--installed", "--toolchain", NIGHTLY]),
    )?;
    if installed.lines().any(|l| l.starts_with("rust-src")) {
        return Ok(());
    }
    eprintln!("xtask: installing rust-src for the {NIGHTLY} toolchain");
    run_step(
        "install rust-src",
        Command::new("rustup").args(["component", "add", "rust-src", "--toolchain", NIGHTLY]),
    )
}

pub fn cargo_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::var_os("HOME").context("neither CARGO_HOME nor HOME is set")?;
    Ok(PathBuf::from(home).join(".cargo"))
}

/// The installed bpf-linker, if it is the pinned version and it runs (its libLLVM is found).
fn bpf_linker_ok(bin: &Path) -> bool {
    Command::new(bin)
        .arg("--version")
        .output()
        .map(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains(BPF_LINKER_VERSION)
        })
        .unwrap_or(false)
}

fn ensure_bpf_linker() -> Result<()> {
    let home = cargo_home()?;
    let bin = home.join("bin").join("bpf-linker");
    if bpf_linker_ok(&bin) {
        return Ok(());
    }
    let sysroot = capture(
        "find the nightly sysroot",
        Command::new("rustc").args([&format!("+{NIGHTLY}"), "--print", "sysroot"]),
    )?;
    let sysroot_lib = Path::new(sysroot.trim()).join("lib");
    let llvm = find_nightly_libllvm(&sysroot_lib)?;
    let soname = llvm
        .file_name()
        .context("libLLVM has no file name")?
        .to_owned();
    let major = llvm_major(&soname.to_string_lossy())?;

    // A lasting prefix: bpf-linker keeps its path (rpath) to find libLLVM at run time.
    let prefix = home
        .join("rtrace-llvm")
        .join(soname.to_string_lossy().as_ref());
    let lib = prefix.join("lib");
    fs::create_dir_all(&lib).with_context(|| format!("create {}", lib.display()))?;
    for name in [std::ffi::OsString::from("libLLVM.so"), soname.clone()] {
        let link = lib.join(&name);
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(&llvm, &link)
            .with_context(|| format!("link {} -> {}", link.display(), llvm.display()))?;
    }

    eprintln!(
        "xtask: building bpf-linker {BPF_LINKER_VERSION} against {} (about a minute)",
        llvm.display()
    );
    let features = format!("llvm-{major}");
    run_step(
        "build bpf-linker",
        Command::new("cargo")
            .args([
                &format!("+{NIGHTLY}"),
                "install",
                "bpf-linker",
                "--locked",
                "--force",
            ])
            .args([
                "--version",
                BPF_LINKER_VERSION,
                "--no-default-features",
                "--features",
            ])
            .arg(&features)
            .env("LLVM_PREFIX", &prefix),
    )?;
    if !bpf_linker_ok(&bin) {
        bail!(
            "bpf-linker was installed at {} but does not run; retry with: cargo xtask setup",
            bin.display()
        );
    }
    Ok(())
}

/// The real libLLVM file of the nightly toolchain: `libLLVM.so.<ver>-rust-<ver>-nightly`.
/// (`libLLVM-<major>-rust-…so` beside it is a linker script, not the library.)
fn find_nightly_libllvm(dir: &Path) -> Result<PathBuf> {
    let entries = fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("libLLVM.so.") && entry.file_type()?.is_file() {
            return Ok(entry.path());
        }
    }
    bail!(
        "no libLLVM.so.* in {}: is the nightly toolchain complete?",
        dir.display()
    )
}

/// `libLLVM.so.22.1-rust-1.97.0-nightly` -> 22
fn llvm_major(soname: &str) -> Result<u32> {
    soname
        .strip_prefix("libLLVM.so.")
        .and_then(|rest| rest.split(['.', '-']).next())
        .and_then(|major| major.parse().ok())
        .with_context(|| format!("cannot read the LLVM version from {soname}"))
}

#[cfg(test)]
mod tests {
    use super::llvm_major;

    #[test]
    fn reads_llvm_major_from_soname() {
        assert_eq!(
            llvm_major("libLLVM.so.22.1-rust-1.97.0-nightly").unwrap(),
            22
        );
        assert_eq!(llvm_major("libLLVM.so.21-rust-1.93.0-nightly").unwrap(), 21);
        assert!(llvm_major("libfoo.so").is_err());
    }
}
