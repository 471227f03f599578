//! The smoke test's image, made without a registry or a Dockerfile: a root file system
//! holding busybox, the just-built rtrace, the shared libraries `ldd` names for them and
//! a static test program, imported into Docker from a tar (and used as it is by runc).

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

/// The shared libraries `ldd` lists for `bin` (none for a static one).
fn libraries(bin: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd").arg(bin).output()?;
    // ldd fails with "not a dynamic executable" on a static binary.
    if !out.status.success() {
        return Ok(Vec::new());
    }
    Ok(parse_ldd(&String::from_utf8_lossy(&out.stdout)))
}

/// Paths in ldd's output: `libc.so.6 => /lib/…/libc.so.6 (0x…)` and the loader's
/// `/lib64/ld-linux-x86-64.so.2 (0x…)`; the vDSO has no file.
fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.trim(),
                None => l,
            };
            let path = path.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// Copies `bin` to `rootfs/bin/<name>` and its libraries to the same paths in `rootfs`.
fn install(rootfs: &Path, bin: &Path, name: &str) -> Result<()> {
    fs::copy(bin, rootfs.join("bin").join(name))
        .with_context(|| format!("copying {}", bin.display()))?;
    for lib in libraries(bin)? {
        let to = rootfs.join(lib.strip_prefix("/")?);
        fs::create_dir_all(to.parent().context("a library path has a parent")?)?;
        fs::copy(&lib, &to).with_context(|| format!("copying {}", lib.display()))?;
    }
    Ok(())
}

/// Writes the root file system under `dir/rootfs`; returns its path.
pub fn rootfs(dir: &Path, rtrace: &Path) -> Result<PathBuf> {
    let busybox = Path::new("/bin/busybox");
    if !busybox.is_file() {
        eprintln!("xtask: installing busybox-static (the image's shell)");
        crate::vm::apt_install(&["busybox-static"])?;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_paths_are_the_files_named() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text),
            [
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
            .map(PathBuf::from)
        );
    }
}
