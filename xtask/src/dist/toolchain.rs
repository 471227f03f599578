//! What the static builds need, installed by the xtask and only when missing: the
//! Rust musl targets, zig (from PyPI's `ziglang` wheel, unpacked under the cargo home)
//! and cargo-zigbuild, which uses `zig cc` as the C compiler and linker of each musl
//! target. zig carries musl's headers and libc for every architecture, so the aarch64
//! build needs no Debian cross gcc (whose `gcc-aarch64-linux-gnu` and the i386 test's
//! `gcc-multilib` remove each other on Debian 12).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, Result, bail};

use crate::{
    run::{capture, run_step},
    setup::cargo_home,
};

/// Pinned, so that a release is built the same way next month.
pub const ZIG_VERSION: &str = "0.17.1";
pub const ZIGBUILD_VERSION: &str = "0.24.1";

/// The zig and cargo-zigbuild the static builds use.
pub struct Cross {
    pub zig: PathBuf,
}

pub fn ensure(targets: &[&str]) -> Result<Cross> {
    ensure_targets(targets)?;
    ensure_zigbuild()?;
    Ok(Cross { zig: ensure_zig()? })
}

fn ensure_targets(targets: &[&str]) -> Result<()> {
    let installed = capture(
        "list the installed Rust targets",
        Command::new("rustup").args(["target", "list", "--installed"]),
    )?;
    let missing: Vec<&str> = targets
        .iter()
        .copied()
        .filter(|t| !installed.lines().any(|l| l.trim() == *t))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing the Rust targets {}", missing.join(", "));
    run_step(
        "install the musl targets",
        Command::new("rustup")
            .args(["target", "add"])
            .args(&missing),
    )
}

fn runs_with(bin: &Path, arg: &str, want: &str) -> bool {
    Command::new(bin)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(want))
}

fn ensure_zigbuild() -> Result<()> {
    let bin = cargo_home()?.join("bin/cargo-zigbuild");
    if runs_with(&bin, "--version", ZIGBUILD_VERSION) {
        return Ok(());
    }
    eprintln!("xtask: building cargo-zigbuild {ZIGBUILD_VERSION} (about a minute)");
    run_step(
        "install cargo-zigbuild",
        Command::new("cargo").args([
            "install",
            "cargo-zigbuild",
            "--locked",
            "--force",
            "--version",
            ZIGBUILD_VERSION,
        ]),
    )
}

/// zig from PyPI's wheel (the zig project's own binary release, repackaged), unpacked
/// into a lasting directory of the cargo home; its path.
fn ensure_zig() -> Result<PathBuf> {
    let dir = cargo_home()?.join("rtrace-zig").join(ZIG_VERSION);
    let zig = dir.join("ziglang/zig");
    if runs_with(&zig, "version", ZIG_VERSION) {
        return Ok(zig);
    }
    eprintln!("xtask: fetching zig {ZIG_VERSION} (PyPI's ziglang wheel, about 100 MB)");
    let _ = std::fs::remove_dir_all(&dir);
    run_step(
        "fetch zig",
        Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "--no-deps", "--target"])
            .arg(&dir)
            .arg(format!("ziglang=={ZIG_VERSION}"))
            .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
            .env("PIP_ROOT_USER_ACTION", "ignore"),
    )?;
    if !runs_with(&zig, "version", ZIG_VERSION) {
        bail!("zig was unpacked at {} but does not run", zig.display());
    }
    Ok(zig)
}

/// mimalloc (the static build's allocator) commits each arena whole on Linux by
/// default: 10 MiB resident that rtrace never uses. The option is read before `main`
/// can set it, so it is compiled in (the C compiler's flags for the musl target).
const MIMALLOC_CFLAGS: &str = "-DMI_DEFAULT_ARENA_EAGER_COMMIT=0";

/// `cargo zigbuild` for `target` with the dist profile; the binary's path.
pub fn build(cross: &Cross, root: &Path, target: &str) -> Result<PathBuf> {
    run_step(
        &format!("build the static rtrace for {target}"),
        Command::new("cargo")
            .current_dir(root)
            .args(["zigbuild", "--profile", "dist", "--target", target])
            .args(["--package", "trace-cli", "--bin", "rtrace"])
            .env("CARGO_ZIGBUILD_ZIG_PATH", &cross.zig)
            .env(
                format!("CFLAGS_{}", target.replace('-', "_")),
                MIMALLOC_CFLAGS,
            ),
    )?;
    let bin = root.join("target").join(target).join("dist/rtrace");
    if !bin.is_file() {
        bail!("the build wrote no {}", bin.display());
    }
    Ok(bin)
}

/// `cargo zigbuild` of the test targets of `package` for `target` (the arm64 guest's
/// root tests); cargo's JSON messages, which name the test executables.
pub fn build_tests(cross: &Cross, root: &Path, target: &str, package: &str) -> Result<String> {
    capture(
        &format!("build the {package} tests for {target}"),
        Command::new("cargo")
            .current_dir(root)
            .args(["zigbuild", "--target", target, "--package", package])
            .args(["--tests", "--message-format=json"])
            .env("CARGO_ZIGBUILD_ZIG_PATH", &cross.zig),
    )
}

/// A static C program for `zig_target` (zig's triple: `arm-linux-musleabihf`), built
/// with zig's own clang and musl: the program a guest of another architecture runs
/// where it has no compiler for it.
pub fn build_c(cross: &Cross, source: &Path, zig_target: &str, out: &Path) -> Result<PathBuf> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    capture(
        &format!("build {} for {zig_target}", source.display()),
        Command::new(&cross.zig)
            .args(["cc", "-target", zig_target, "-static", "-O1", "-o"])
            .arg(out)
            .arg(source),
    )?;
    Ok(out.to_path_buf())
}

/// `file`'s word on `bin`: refused unless it is a static executable for `arch_word`
/// (what `file` calls the architecture: `x86-64`, `ARM aarch64`).
pub fn check_static(bin: &Path, arch_word: &str) -> Result<String> {
    let said = capture("file", Command::new("file").arg("-b").arg(bin))
        .with_context(|| format!("running file on {}", bin.display()))?;
    let said = said.trim().to_owned();
    if !is_static_for(&said, arch_word) {
        bail!(
            "{} is not a static {arch_word} executable: {said}",
            bin.display()
        );
    }
    Ok(said)
}

fn is_static_for(file_says: &str, arch_word: &str) -> bool {
    file_says.starts_with("ELF 64-bit")
        && file_says.contains(arch_word)
        && (file_says.contains("statically linked") || file_says.contains("static-pie linked"))
}

#[cfg(test)]
mod tests {
    use super::is_static_for;

    #[test]
    fn only_a_static_binary_of_the_arch_passes() {
        let x86 =
            "ELF 64-bit LSB executable, x86-64, version 1 (SYSV), statically linked, stripped";
        assert!(is_static_for(x86, "x86-64"));
        assert!(!is_static_for(x86, "ARM aarch64"));
        let pie = "ELF 64-bit LSB pie executable, ARM aarch64, version 1 (SYSV), static-pie linked, stripped";
        assert!(is_static_for(pie, "ARM aarch64"));
        let dynamic = "ELF 64-bit LSB pie executable, x86-64, version 1 (SYSV), dynamically linked, interpreter /lib64/ld-linux-x86-64.so.2, for GNU/Linux 3.2.0, stripped";
        assert!(!is_static_for(dynamic, "x86-64"));
    }
}
