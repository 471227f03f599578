//! Booting a kernel and initramfs under QEMU (software emulation), streaming the
//! serial console to the terminal and a log file, and reading the guest's markers.

use std::{
    fs,
    io::{BufRead, BufReader, Read, Write},
    path::Path,
    process::{Child, Command, ExitStatus, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};

use super::{
    arch::Arch,
    markers::{self, Event},
};

/// How the console session ended.
#[derive(Debug)]
pub enum End {
    /// The guest ran every test; this many failed.
    Reported(u32),
    /// /init could not set the guest up.
    SetupFailed(String),
    /// QEMU ended before the guest reported.
    QemuExited(Option<ExitStatus>),
    /// No report within the limit.
    TimedOut(Duration),
}

pub struct Outcome {
    pub end: End,
    /// From QEMU's start to the guest's "booted" marker.
    pub boot: Option<Duration>,
    /// The release the guest's kernel reported (`uname -r`).
    pub release: Option<String>,
    /// From "booted"" to the exit-status marker.
    pub suite: Option<Duration>,
    pub passed: Vec<String>,
    /// Failed tests, killed ones included.
    pub failed: Vec<String>,
    /// Each test's name and time, from the end of the one before.
    pub times: Vec<(String, Duration)>,
    /// The kernel's oops, BUG, warning and panic lines.
    pub kernel_trouble: Vec<String>,
}

pub struct Limits {
    /// Until the guest says it booted.
    pub boot: Duration,
    /// Until it reports the tests' exit status, counted from QEMU's start.
    pub total: Duration,
}

/// Kills and reaps QEMU whenever the session ends, however it ends.
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends each line `from` produces down `tx`.
fn forward(from: impl Read + Send + 'static, tx: mpsc::Sender<String>) {
    thread::spawn(move || {
        let mut r = BufReader::new(from);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
}

/// Boots `kernel` with `initrd` on `arch`, the directory `root` shared read-only over
/// 9p, and follows the console until the guest reports, QEMU ends or a limit passes.
/// Console lines are shown prefixed with `tag` and written to `log`.
pub fn run(
    arch: &Arch,
    kernel: &Path,
    initrd: &Path,
    root: &Path,
    log: &Path,
    tag: &str,
    limits: &Limits,
) -> Result<Outcome> {
    let mut cmd = Command::new(arch.qemu);
    cmd.args(arch.machine);
    // One host thread for both vCPUs: with multi-threaded TCG, a vCPU can run a stale
    // translation of kernel text another vCPU is patching (static keys flip when
    // tracepoints are enabled), hit the int3 left mid-patch, and oops.
    cmd.args(["-accel", "tcg,thread=single", "-smp", "2", "-m", "2G"])
        .args(["-nographic", "-no-reboot", "-nic", "none"])
        .arg("-kernel")
        .arg(kernel)
        .arg("-initrd")
        .arg(initrd)
        // panic=-1 with -no-reboot: a panicking guest ends QEMU at once. Without the
        // CPU-vulnerability mitigations (page-table isolation above all) emulated
        // system calls are much cheaper.
        .arg("-append")
        .arg(format!(
            "console={} panic=-1 loglevel=4 mitigations=off",
            arch.console
        ))
        .arg("-virtfs")
        .arg(format!(
            "local,path={},mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            root.display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut log_file =
        fs::File::create(log).with_context(|| format!("create {}", log.display()))?;
    let start = Instant::now();
    let mut qemu = Reaper(
        cmd.spawn()
            .with_context(|| format!("start {}", arch.qemu))?,
    );
    let (tx, rx) = mpsc::channel();
    forward(qemu.0.stdout.take().expect("piped"), tx.clone());
    forward(qemu.0.stderr.take().expect("piped"), tx);

    let mut outcome = Outcome {
        end: End::TimedOut(limits.boot),
        boot: None,
        release: None,
        suite: None,
        passed: Vec::new(),
        failed: Vec::new(),
        times: Vec::new(),
        kernel_trouble: Vec::new(),
    };
    let mut last = start;
    let mut reader = markers::Reader::default();
    loop {
        let limit = if outcome.boot.is_some() {
            limits.total
        } else {
            limits.boot
        };
        let left = limit.saturating_sub(start.elapsed());
        let raw = match rx.recv_timeout(left) {
            Ok(l) => l,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                outcome.end = End::TimedOut(limit);
                break;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                outcome.end = End::QemuExited(qemu.0.wait().ok());
                break;
            }
        };
        let line = markers::clean(&raw);
        println!("{tag}| {line}");
        let _ = writeln!(log_file, "{line}");
        let event = reader.read(&line);
        if let Some(Event::Test(name, _) | Event::TimedOut(name)) = &event {
            outcome.times.push((name.clone(), last.elapsed()));
            last = Instant::now();
        }
        match event {
            Some(Event::Booted(release)) => {
                outcome.boot = Some(start.elapsed());
                outcome.release = Some(release);
                last = Instant::now();
            }
            Some(Event::Test(name, true)) => outcome.passed.push(name),
            Some(Event::Test(name, false)) => outcome.failed.push(name),
            Some(Event::TimedOut(name)) => outcome.failed.push(format!("{name} (timed out)")),
            Some(Event::KernelTrouble(what)) => outcome.kernel_trouble.push(what),
            Some(Event::SetupFailed(what)) => {
                outcome.end = End::SetupFailed(what);
                break;
            }
            Some(Event::Done(failed)) => {
                outcome.suite = outcome.boot.map(|b| start.elapsed() - b);
                outcome.end = End::Reported(failed);
                break;
            }
            None => {}
        }
    }
    // The guest powers off right after its report; give it a moment, then kill.
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline && matches!(qemu.0.try_wait(), Ok(None)) {
        thread::sleep(Duration::from_millis(100));
    }
    drop(qemu);
    Ok(outcome)
}
