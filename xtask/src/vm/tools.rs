//! Host tools the kernel matrix needs, installed with apt when missing.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Result, bail};

use super::arch::{Arch, Root};
use crate::run::run_step;

/// A command the VM run calls, and the Debian package that brings it (QEMU comes from
/// each architecture's row, see [`super::arch`]).
const COMMANDS: [(&str, &str); 6] = [
    ("cpio", "cpio"),
    ("gzip", "gzip"),
    ("depmod", "kmod"),
    ("xz", "xz-utils"),
    ("zstd", "zstd"),
    ("dpkg-deb", "dpkg"),
];

/// The initramfs runs busybox with no libraries beside it: it must be the static build.
pub const BUSYBOX: &str = "/bin/busybox";
const BUSYBOX_PACKAGE: &str = "busybox-static";

/// Finds `cmd` on PATH or in the sbin directories (depmod lives there).
pub fn which(cmd: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
}

fn package_installed(name: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", name])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).ends_with("install ok installed"))
}

/// `apt-get install` of `packages`; when that fails, `apt-get update` and once more.
pub fn apt_install(packages: &[&str]) -> Result<()> {
    let install = || {
        let mut c = Command::new("apt-get");
        c.args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    if install().status().is_ok_and(|s| s.success()) {
        return Ok(());
    }
    eprintln!("xtask: install failed; updating apt's package lists and trying again");
    run_step(
        "apt-get update",
        Command::new("apt-get")
            .args(["update", "-qq"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    run_step(&format!("install {}", packages.join(" ")), &mut install())
}

/// Makes the arm64 guest's Debian root (see [`super::rootfs`]).
const MMDEBSTRAP: (&str, &str) = ("mmdebstrap", "mmdebstrap");

/// The static busybox of `arch`'s initramfs: the host's for the host's architecture,
/// else the one in that architecture's `busybox-static` package (fetched with apt).
pub fn busybox(cache: &Path, arch: &Arch) -> Result<PathBuf> {
    if arch.root == Root::Host {
        return Ok(BUSYBOX.into());
    }
    let tree = super::kernel_fetch::fetch_package(cache, arch, BUSYBOX_PACKAGE)?;
    let bin = tree.join("bin/busybox");
    if !bin.is_file() {
        bail!("{BUSYBOX_PACKAGE} ({}) has no bin/busybox", arch.deb);
    }
    Ok(bin)
}

/// Installs whatever is missing among the tools the VMs of `arches` need.
pub fn ensure(arches: &[&Arch]) -> Result<()> {
    let mut wanted: Vec<(&str, &str)> = COMMANDS.to_vec();
    for a in arches {
        wanted.push((a.qemu, a.qemu_package));
        if a.root == Root::Debian {
            wanted.push(MMDEBSTRAP);
        }
    }
    let mut missing: Vec<&str> = wanted
        .iter()
        .filter(|(cmd, _)| which(cmd).is_none())
        .map(|&(_, pkg)| pkg)
        .collect();
    missing.dedup();
    if !package_installed(BUSYBOX_PACKAGE) {
        missing.push(BUSYBOX_PACKAGE);
    }
    if !missing.is_empty() {
        eprintln!(
            "xtask: installing {} (for the kernel matrix)",
            missing.join(" ")
        );
        apt_install(&missing)?;
    }
    if !Path::new(BUSYBOX).is_file() {
        bail!("{BUSYBOX} is missing although {BUSYBOX_PACKAGE} is installed");
    }
    Ok(())
}
