//! The guest's initramfs: static busybox, the 9p modules and an /init that mounts the
//! host's root read-only, gives it writable scratch space and the kernel's file
//! systems, runs the tests in a chroot and reports their exit status on the console.

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context, Result, bail};

use super::{markers, modules, tools};

/// What the guest runs.
pub struct Guest {
    /// Module files (in /modules of the initramfs), in load order.
    pub modules: Vec<String>,
    /// Working directory of the test run (a host path, seen the same in the chroot).
    pub workdir: PathBuf,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Its whole environment.
    pub env: Vec<(String, String)>,
}

/// `s` as one word for the shell.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The /init script for `guest`.
pub fn init_script(guest: &Guest) -> String {
    let mut s = String::new();
    let mut line = |l: &str| {
        s.push_str(l);
        s.push('\n');
    };
    line("#!/bin/busybox sh");
    line("# Written by `cargo xtask test --kernel`: boots into the host's root, runs the");
    line("# root integration tests there and powers off.");
    line("/bin/busybox --install -s /bin");
    line("export PATH=/bin");
    line("mount -t devtmpfs devtmpfs /dev");
    line("exec </dev/console >/dev/console 2>&1");
    line(&format!(
        "fail() {{ echo; echo \"{}$*\"; sync; poweroff -f; }}",
        markers::SETUP_FAILED
    ));
    line("m() { mount \"$@\" || fail \"mount $*\"; }");
    line("m -t proc proc /proc");
    line("m -t sysfs sysfs /sys");
    for module in &guest.modules {
        let path = format!("/modules/{module}");
        line(&format!(
            "insmod {} || fail {}",
            sh_quote(&path),
            sh_quote(&format!("insmod {module}"))
        ));
    }
    line("ip link set lo up");
    line("m -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /host");
    // Writable scratch space over the read-only root.
    line("m -t tmpfs -o mode=1777 tmpfs /host/tmp");
    line("m -t tmpfs -o mode=1777 tmpfs /host/var/tmp");
    line("m -t tmpfs -o mode=755 tmpfs /host/run");
    // The kernel's file systems the tests and rtrace use.
    line("m -t proc proc /host/proc");
    line("m -t sysfs sysfs /host/sys");
    line("m -t devtmpfs devtmpfs /host/dev");
    line("mkdir -p /host/dev/pts /host/dev/shm");
    line("m -t devpts -o newinstance,ptmxmode=0666 devpts /host/dev/pts");
    line("m -t tmpfs -o mode=1777 tmpfs /host/dev/shm");
    line("m -t tracefs tracefs /host/sys/kernel/tracing");
    line("m -t debugfs debugfs /host/sys/kernel/debug");
    line("m -t bpf bpf /host/sys/fs/bpf");
    line("m -t cgroup2 cgroup2 /host/sys/fs/cgroup");
    // Each marker on a line of its own, whatever the console printed before.
    line(&format!("echo; echo \"{}$(uname -r)\"", markers::BOOTED));
    let mut run = vec![
        "chroot".to_string(),
        "/host".into(),
        "/usr/bin/env".into(),
        "-i".into(),
        "-C".into(),
        sh_quote(&guest.workdir.display().to_string()),
    ];
    run.extend(guest.env.iter().map(|(k, v)| sh_quote(&format!("{k}={v}"))));
    run.extend(guest.command.iter().map(|a| sh_quote(a)));
    line(&run.join(" "));
    line(&format!(
        "status=$?; echo; echo \"{}$status\"",
        markers::EXIT_STATUS
    ));
    line("sync");
    line("poweroff -f");
    s
}

/// Builds `dir/initramfs.cpio.gz` for `guest`, with the kernel modules in `order`
/// (paths relative to `modules_dir`).
pub fn build(
    dir: &Path,
    modules_dir: &Path,
    order: &[String],
    guest: &mut Guest,
) -> Result<PathBuf> {
    let root = dir.join("initramfs");
    let _ = fs::remove_dir_all(&root);
    for d in ["bin", "dev", "proc", "sys", "host", "modules"] {
        fs::create_dir_all(root.join(d))?;
    }
    fs::copy(tools::BUSYBOX, root.join("bin/busybox")).context("copy busybox")?;
    guest.modules = modules::stage(modules_dir, order, &root.join("modules"))?;
    let init = root.join("init");
    fs::write(&init, init_script(guest))?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&init, fs::Permissions::from_mode(0o755))?;

    // The file list for cpio: every path under the root, relative to it.
    let mut list = Vec::new();
    collect(&root, Path::new("."), &mut list)?;
    let cpio_path = dir.join("initramfs.cpio");
    let mut cpio = Command::new("cpio")
        .args(["--create", "--format=newc", "--owner=0:0", "--quiet"])
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::from(fs::File::create(&cpio_path)?))
        .spawn()
        .context("run cpio")?;
    cpio.stdin
        .take()
        .expect("piped")
        .write_all(list.join("\n").as_bytes())?;
    let status = cpio.wait()?;
    if !status.success() {
        bail!("cpio failed ({status})");
    }
    let status = Command::new("gzip")
        .args(["-f", "-n", "-6"])
        .arg(&cpio_path)
        .status()?;
    if !status.success() {
        bail!("gzip {} failed ({status})", cpio_path.display());
    }
    Ok(dir.join("initramfs.cpio.gz"))
}

fn collect(base: &Path, rel: &Path, out: &mut Vec<String>) -> Result<()> {
    out.push(rel.display().to_string());
    let full = base.join(rel);
    if full.is_dir() && !full.is_symlink() {
        let mut entries: Vec<_> = fs::read_dir(&full)?.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            collect(base, &rel.join(e.file_name()), out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_for_the_shell() {
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn init_loads_modules_in_order_and_runs_the_command() {
        let guest = Guest {
            modules: vec!["virtio_ring.ko".into(), "9p.ko".into()],
            workdir: "/w/tests".into(),
            command: vec![
                "/w/root-tests".into(),
                "--test-threads=1".into(),
                "it's".into(),
            ],
            env: vec![("RTRACE_REQUIRE_BPF".into(), "1".into())],
        };
        let s = init_script(&guest);
        let ring = s.find("insmod '/modules/virtio_ring.ko'").unwrap();
        let p9 = s.find("insmod '/modules/9p.ko'").unwrap();
        let mount = s.find("hostroot /host").unwrap();
        assert!(ring < p9 && p9 < mount);
        assert!(s.contains(
            "chroot /host /usr/bin/env -i -C '/w/tests' 'RTRACE_REQUIRE_BPF=1' \
             '/w/root-tests' '--test-threads=1' 'it'\\''s'\n"
        ));
        let run = s.find("chroot /host").unwrap();
        let booted = s.find(markers::BOOTED).unwrap();
        let status = s.find(markers::EXIT_STATUS).unwrap();
        assert!(booted < run && run < status);
        assert!(s.ends_with("poweroff -f\n"));
    }
}
