//! The smoke test's image, made without a registry or a Dockerfile: a busybox-only root
//! file system holding the static rtrace of `cargo xtask dist`, busybox and a static
//! test program, and no library, imported into Docker from a tar (and used as it is by
//! runc).

use std::{
    fs,
    os::unix::fs::symlink,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context, Result, bail};

use super::engine::docker;
use crate::run::{capture, run_step};

/// busybox applets the checks use.
const APPLETS: [&str; 10] = [
    "sh", "cat", "sleep", "echo", "kill", "timeout", "true", "ls", "grep", "head",
];

const THREAD_EXEC: &str = include_str!("thread_exec.c");

/// Copies `bin` to `rootfs/bin/<name>`; refused unless it is static: the root holds
/// no shared library, so what runs here runs in any container.
fn install(rootfs: &Path, bin: &Path, name: &str) -> Result<()> {
    crate::dist::toolchain::check_static(bin, "x86-64")?;
    fs::copy(bin, rootfs.join("bin").join(name))
        .with_context(|| format!("copying {}", bin.display()))?;
    Ok(())
}

/// A static busybox: the host's when it is one, else Debian's busybox-static unpacked
/// under `dir` (installing it would replace a host's dynamic `busybox` package).
pub fn static_busybox(dir: &Path) -> Result<PathBuf> {
    let host = Path::new("/bin/busybox");
    if crate::dist::toolchain::check_static(host, "x86-64").is_ok() {
        return Ok(host.to_path_buf());
    }
    eprintln!("xtask: unpacking Debian's busybox-static (the host has no static busybox)");
    let debs = dir.join("busybox-static");
    fs::create_dir_all(&debs)?;
    run_step(
        "download busybox-static",
        Command::new("apt-get")
            .args(["download", "busybox-static"])
            .current_dir(&debs),
    )?;
    let deb = fs::read_dir(&debs)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .context("apt-get download wrote no .deb")?;
    let tree = debs.join("tree");
    run_step(
        "unpack busybox-static",
        Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&tree),
    )?;
    let bin = tree.join("bin/busybox");
    crate::dist::toolchain::check_static(&bin, "x86-64")?;
    Ok(bin)
}

/// Writes the root file system under `dir/rootfs`; returns its path.
pub fn rootfs(dir: &Path, rtrace: &Path, busybox: &Path) -> Result<PathBuf> {
    let root = dir.join("rootfs");
    if root.exists() {
        fs::remove_dir_all(&root)?;
    }
    for d in ["bin", "etc", "proc", "sys", "dev", "tmp"] {
        fs::create_dir_all(root.join(d))?;
    }
    install(&root, busybox, "busybox")?;
    for applet in APPLETS {
        symlink("busybox", root.join("bin").join(applet))?;
    }
    install(&root, rtrace, "rtrace")?;
    let src = dir.join("thread_exec.c");
    fs::write(&src, THREAD_EXEC)?;
    let program = dir.join("thread-exec");
    run_step(
        "build the static test program",
        Command::new("gcc")
            .args(["-static", "-O1", "-pthread", "-o"])
            .arg(&program)
            .arg(&src),
    )?;
    install(&root, &program, "thread-exec")?;
    fs::write(root.join("etc/hostname"), "rtrace-smoke\n")?;
    Ok(root)
}

/// `docker import` of `rootfs` as `tag`.
pub fn import(dir: &Path, rootfs: &Path, tag: &str) -> Result<()> {
    let tar = dir.join("rootfs.tar");
    run_step(
        "pack the image",
        Command::new("tar")
            .arg("-C")
            .arg(rootfs)
            .arg("-cf")
            .arg(&tar)
            .arg("."),
    )?;
    let id = capture("docker import", docker().arg("import").arg(&tar).arg(tag))?;
    if !id.trim().starts_with("sha256:") {
        bail!("docker import printed no image id: {id}");
    }
    fs::remove_file(&tar)?;
    Ok(())
}
