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

use super::{markers, modules};

/// What the guest runs.
pub struct Guest {
    /// Module files (in /modules of the initramfs), in load order.
    pub modules: Vec<String>,
    /// Working directory of the test run (a host path, seen the same in the chroot).
    pub workdir: PathBuf,
    /// The libtest executable (a host path).
    pub tests: String,
    /// libtest arguments choosing the tests (name filters, `--skip`, `--exact`).
    pub filter: Vec<String>,
    /// The tests' whole environment.
    pub env: Vec<(String, String)>,
    /// Each test runs in its own process, killed after this many seconds.
    pub test_limit_secs: u64,
}

/// Directories the guest gets a fresh, writable tmpfs on (with their modes).
const SCRATCH: [(&str, &str); 3] = [("/tmp", "1777"), ("/var/tmp", "1777"), ("/run", "755")];

/// The tests' TMPDIR in the guest (a tmpfs on /mnt).
pub const GUEST_TMPDIR: &str = "/mnt/tmp";

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
    line("# root integration tests there, one process each, and powers off.");
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
    // Writable scratch space over the read-only root: the tests' TMPDIR on /mnt, and
    // the usual scratch directories, except one that holds the workspace (a clone under
    // /tmp must stay visible to the guest).
    line("m -t tmpfs -o mode=1777 tmpfs /host/mnt");
    line("mkdir -m 1777 /host/mnt/tmp");
    for (dir, mode) in SCRATCH {
        let holds = |p: &str| Path::new(p).starts_with(dir);
        if !holds(&guest.workdir.display().to_string()) && !holds(&guest.tests) {
            line(&format!("m -t tmpfs -o mode={mode} tmpfs /host{dir}"));
        }
    }
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

    // The test executable in the host's root, with the tests' environment.
    let mut cmd = vec![
        "chroot /host /usr/bin/env -i -C".to_string(),
        sh_quote(&guest.workdir.display().to_string()),
    ];
    cmd.extend(guest.env.iter().map(|(k, v)| sh_quote(&format!("{k}={v}"))));
    cmd.push(sh_quote(&guest.tests));
    let cmd = cmd.join(" ");
    let filter: Vec<String> = guest.filter.iter().map(|f| sh_quote(f)).collect();
    line(&format!(
        "names=$({cmd} --list {} | sed -n 's/: test$//p')",
        filter.join(" ")
    ));
    line("failed=0");
    // No test to run is a failure: a broken path or filter must not pass as green.
    line("[ -n \"$names\" ] || { echo 'rtrace-vm: no test matches'; failed=1; }");
    // One process per test: a test that hangs is killed, with whatever it started
    // (kill -1 from init reaches every other process), and the others still run.
    line("for name in $names; do");
    line(&format!(
        "  timeout -s KILL {} {cmd} --exact \"$name\" --test-threads=1",
        guest.test_limit_secs
    ));
    line("  st=$?");
    line(&format!(
        "  if [ $st -eq 137 ]; then echo; echo \"{}$name\"; kill -KILL -1; sleep 1; fi",
        markers::TIMED_OUT
    ));
    line("  [ $st -eq 0 ] || failed=$((failed + 1))");
    line("done");
    line(&format!("echo; echo \"{}$failed\"", markers::DONE));
    line("sync");
    line("poweroff -f");
    s
}

/// Builds `dir/initramfs.cpio.gz` for `guest`, with the kernel modules in `order`
/// (paths relative to `modules_dir`).
pub fn build(
    dir: &Path,
    busybox: &Path,
    modules_dir: &Path,
    order: &[String],
    guest: &mut Guest,
) -> Result<PathBuf> {
    let root = dir.join("initramfs");
    let _ = fs::remove_dir_all(&root);
    for d in ["bin", "dev", "proc", "sys", "host", "modules"] {
        fs::create_dir_all(root.join(d))?;
    }
    fs::copy(busybox, root.join("bin/busybox"))
        .with_context(|| format!("copy {}", busybox.display()))?;
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
    fn init_loads_modules_then_runs_each_test() {
        let guest = Guest {
            modules: vec!["virtio_ring.ko".into(), "9p.ko".into()],
            workdir: "/w/tests".into(),
            tests: "/w/root-tests".into(),
            filter: vec!["lifecycle".into(), "--skip".into(), "it's".into()],
            env: vec![("RTRACE_REQUIRE_BPF".into(), "1".into())],
            test_limit_secs: 300,
        };
        let s = init_script(&guest);
        let ring = s.find("insmod '/modules/virtio_ring.ko'").unwrap();
        let p9 = s.find("insmod '/modules/9p.ko'").unwrap();
        let mount = s.find("hostroot /host").unwrap();
        assert!(ring < p9 && p9 < mount);
        let cmd =
            "chroot /host /usr/bin/env -i -C '/w/tests' 'RTRACE_REQUIRE_BPF=1' '/w/root-tests'";
        let list = format!("names=$({cmd} --list 'lifecycle' '--skip' 'it'\\''s' | sed");
        assert!(s.contains(&list), "{s}");
        let each = format!("timeout -s KILL 300 {cmd} --exact \"$name\" --test-threads=1\n");
        assert!(s.contains(&each), "{s}");
        let booted = s.find(markers::BOOTED).unwrap();
        let done = s.find(markers::DONE).unwrap();
        assert!(mount < booted && booted < s.find(&list).unwrap() && s.find(&each).unwrap() < done);
        assert!(s.ends_with("poweroff -f\n"));
        assert!(s.contains("tmpfs /host/tmp\n") && s.contains("tmpfs /host/mnt\n"));
        assert!(s.contains("no test matches'; failed=1;"), "{s}");
    }

    #[test]
    fn a_workspace_under_tmp_stays_visible() {
        let guest = Guest {
            modules: Vec::new(),
            workdir: "/tmp/clone/tests".into(),
            tests: "/tmp/clone/target/kernels/bin/root-tests".into(),
            filter: Vec::new(),
            env: Vec::new(),
            test_limit_secs: 60,
        };
        let s = init_script(&guest);
        assert!(!s.contains("tmpfs /host/tmp\n"), "{s}");
        assert!(s.contains("tmpfs /host/var/tmp\n") && s.contains("tmpfs /host/mnt\n"));
    }
}
