//! Helpers for the integration tests: run the real `rtrace` binary (as root), show
//! everything on failure, and read rtrace's live BPF maps.
//!
//! Tests that need BPF call [`bpf_ready`] first: without root (or without the binary)
//! they skip with a visible message, unless `RTRACE_REQUIRE_BPF=1` (CI), where that is
//! a failure.

use std::{
    ffi::OsStr,
    fmt, fs,
    io::Read,
    os::unix::process::CommandExt,
    path::PathBuf,
    process::{Child, Command, ExitStatus, Stdio},
    thread,
    time::{Duration, Instant},
};

pub fn rtrace_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("RTRACE_BIN") {
        return p.into();
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/rtrace")
}

fn required() -> bool {
    std::env::var("RTRACE_REQUIRE_BPF").is_ok_and(|v| v == "1")
}

/// True when the BPF tests can run here; otherwise skips loudly (or fails in CI).
pub fn bpf_ready(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let bin = rtrace_bin();
    let why = if !root {
        Some("not running as root".to_string())
    } else if !bin.exists() {
        Some(format!(
            "{} is not built (run `cargo xtask test`)",
            bin.display()
        ))
    } else {
        None
    };
    match why {
        None => true,
        Some(why) if required() => panic!("{test}: RTRACE_REQUIRE_BPF=1 but {why}"),
        Some(why) => {
            eprintln!("SKIPPED {test}: {why}");
            false
        }
    }
}

/// What a finished run printed; Display shows it all, for assertion messages.
pub struct Run {
    pub cmd: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl fmt::Display for Run {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "\n--- command: {}\n--- status: {:?}\n--- stdout:\n{}\n--- stderr:\n{}\n---",
            self.cmd, self.status, self.stdout, self.stderr
        )
    }
}

impl Run {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The trace lines (stderr lines that look like perf trace's syscall lines).
    pub fn trace_lines(&self) -> Vec<&str> {
        trace_lines(&self.stderr)
    }
}

pub fn trace_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| parse_line(l).is_some()).collect()
}

/// A parsed syscall line: (comm, tid, syscall name, return text).
#[derive(Debug, Clone, PartialEq)]
pub struct Line<'a> {
    pub comm: &'a str,
    pub tid: u32,
    pub name: &'a str,
    pub args: &'a str,
    pub ret: &'a str,
}

/// Parses `<ts> (<dur>): comm/tid name(args) = ret` (also `[continued]` and unfinished
/// `name(args) ...` lines).
pub fn parse_line(l: &str) -> Option<Line<'_>> {
    let rest = &l[l.find("): ")? + 3..];
    let (who, call) = rest.split_once(' ')?;
    let (comm, tid) = who.rsplit_once('/')?;
    let tid = tid.parse().ok()?;
    let call = call.trim_start();
    let (call, ret) = match call.rfind(") ") {
        Some(i) if call[i..].contains("= ") => {
            let ret = call[i + 1..].trim_start().strip_prefix("= ")?;
            (&call[..=i], ret)
        }
        // Unfinished: `name(args)<padding> ...`, no return yet.
        _ => (call.strip_suffix(" ...").map_or(call, str::trim_end), ""),
    };
    let call = call.strip_prefix("... [continued]: ").unwrap_or(call);
    let (name, args) = call.split_once('(')?;
    Some(Line {
        comm,
        tid,
        name,
        // The call's own `)` only: an argument may end in one too (`(shapes)`).
        args: args.strip_suffix(')').unwrap_or(args),
        ret,
    })
}

/// The rtrace binary, apart from the tester's own settings: no perf config file (perf's
/// own tests set `PERF_CONFIG` too), no colour forced or refused by the environment, and
/// the stopping signals at their defaults, as a terminal gives them. Started as a
/// script's background job (`cargo test ... &`, a CI runner's `setsid sh -c`), the tests
/// inherit SIGINT and SIGQUIT ignored; rtrace rightly hands that on to its command, which
/// then outlives a relayed SIGINT, and every test that stops a command with one failed.
/// A test that wants a signal ignored sets it in its own `pre_exec`, which runs after
/// this one.
pub fn rtrace() -> Command {
    let mut c = Command::new(rtrace_bin());
    c.env("PERF_CONFIG", "/dev/null")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("NO_COLOR");
    // SAFETY: only signal(2), async-signal-safe, between fork and exec.
    unsafe {
        c.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    c
}

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// `cmd` set to run without address randomization on arm64 (inherited by what it
/// starts). There the dynamic loader maps each library (its segments 64 KiB aligned)
/// larger than it is and unmaps the unaligned ends: one munmap or two, as the
/// randomized address falls. Tests that compare the calls of two runs use it on both.
pub fn one_layout(cmd: &mut Command) -> &mut Command {
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: personality() only sets a flag of this (forked, not yet exec'd) process.
        unsafe {
            cmd.pre_exec(|| {
                libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
                Ok(())
            });
        }
    }
    cmd
}

/// Runs to completion with a time limit (killing it past the limit).
pub fn run(cmd: &mut Command, limit: Duration) -> Run {
    let desc = describe(cmd);
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {desc}: {e}"));
    wait_output(child, desc, limit)
}

pub fn wait_output(mut child: Child, desc: String, limit: Duration) -> Run {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let t_err = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let st = child.wait().unwrap();
            let run = Run {
                cmd: desc,
                status: st,
                stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into(),
                stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into(),
            };
            panic!("timed out after {limit:?}: {run}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    Run {
        cmd: desc,
        status,
        stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into(),
    }
}

/// Waits until `cond` holds, up to `limit`.
pub fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// The hash map named `name` that process `pid` holds open (found through
/// /proc/<pid>/fdinfo, so that only this rtrace's map is used, not another session's).
fn open_map(pid: u32, name: &str) -> Option<aya::maps::HashMap<aya::maps::MapData, u32, u32>> {
    use aya::maps::{HashMap, Map, MapData};
    for entry in fs::read_dir(format!("/proc/{pid}/fdinfo")).ok()? {
        let Ok(info) = fs::read_to_string(entry.ok()?.path()) else {
            continue;
        };
        let Some(id) = info
            .lines()
            .find_map(|l| l.strip_prefix("map_id:"))
            .and_then(|v| v.trim().parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(data) = MapData::from_id(id) else {
            continue;
        };
        let Ok(map_info) = data.info() else {
            continue;
        };
        if map_info.name_as_str() != Some(name) {
            continue;
        }
        return HashMap::try_from(Map::HashMap(data)).ok();
    }
    None
}

/// The keys of the hash map named `name` that process `pid` holds open.
pub fn map_keys(pid: u32, name: &str) -> Option<Vec<u32>> {
    let map = open_map(pid, name)?;
    let mut keys: Vec<u32> = map.keys().filter_map(Result::ok).collect();
    keys.sort_unstable();
    Some(keys)
}

/// Writes `key -> value` into the hash map named `name` that process `pid` holds: a
/// test plants what a bug would leave there.
pub fn map_insert(pid: u32, name: &str, key: u32, value: u32) {
    let mut map = open_map(pid, name).unwrap_or_else(|| panic!("no map {name} in {pid}"));
    map.insert(key, value, 0).unwrap();
}

/// A background process for the tests, killed and reaped when dropped.
pub struct Bg {
    pub child: Child,
}

impl Bg {
    pub fn spawn(program: impl AsRef<OsStr>, args: &[&str]) -> Bg {
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn background process");
        Bg { child }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// rtrace running in the background, its stderr collected as it comes.
pub struct Tracer {
    child: Option<Child>,
    desc: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Option<thread::JoinHandle<()>>,
}

/// What rtrace prints with `-v` once the syscall programs are attached.
pub const TRACING_STARTED: &str = "rtrace: tracing started";

impl Tracer {
    /// Starts `rtrace -v ARGS` and waits until its programs are attached.
    pub fn start(args: &[&str]) -> Tracer {
        let mut cmd = rtrace();
        cmd.arg("-v").args(args);
        Self::start_cmd(cmd)
    }

    pub fn start_cmd(cmd: Command) -> Tracer {
        Self::start_until(cmd, TRACING_STARTED)
    }

    /// Starts `cmd` and waits until its stderr holds `marker`.
    pub fn start_until(mut cmd: Command, marker: &str) -> Tracer {
        use std::io::BufRead;
        let desc = describe(&cmd);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {desc}: {e}"));
        let err = child.stderr.take().unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = stderr.clone();
        let reader = thread::spawn(move || {
            let mut r = std::io::BufReader::new(err);
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        let t = Tracer {
            child: Some(child),
            desc,
            stderr,
            reader: Some(reader),
        };
        let started = wait_for(Duration::from_secs(30), || t.stderr().contains(marker));
        assert!(started, "rtrace did not start: {}\n{}", t.desc, t.stderr());
        t
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Has rtrace exited by itself?
    pub fn exited(&mut self) -> bool {
        self.child.as_mut().unwrap().try_wait().unwrap().is_some()
    }

    /// SIGINT, as a user's Ctrl-C, then waits for rtrace to finish.
    pub fn stop(mut self) -> Run {
        let mut child = self.child.take().unwrap();
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        self.finish(&mut child)
    }

    /// Waits for rtrace to end by itself.
    pub fn wait(mut self, limit: Duration) -> Run {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + limit;
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let run = self.finish(&mut child);
                panic!("rtrace did not end within {limit:?}: {run}");
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.finish(&mut child)
    }

    fn finish(&mut self, child: &mut Child) -> Run {
        let status = child.wait().unwrap();
        // A workload left running holds the stderr pipe open: read what is there
        // rather than wait for its end.
        if let Some(r) = self.reader.take()
            && wait_for(Duration::from_secs(2), || r.is_finished())
        {
            let _ = r.join();
        }
        Run {
            cmd: self.desc.clone(),
            status,
            stdout: String::new(),
            stderr: self.stderr(),
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The thread ids of process `pid`, from /proc (empty once it is gone).
pub fn threads(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut tids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids
}

/// Is this task still running (there, and not a zombie)?
pub fn task_alive(pid: u32) -> bool {
    let Ok(stat) = fs::read(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .iter()
        .rposition(|&b| b == b')')
        .and_then(|i| stat.get(i + 2));
    !matches!(state, Some(b'Z' | b'X'))
}

/// Is a process with exactly this command line (argv) running?
pub fn process_running(argv: &[&str]) -> bool {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .any(|e| fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want))
        })
        .unwrap_or(false)
}

/// The processes whose parent is `pid`, from /proc.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = fs::read(format!("/proc/{p}/stat")).unwrap_or_default();
        let Some(close) = stat.iter().rposition(|&b| b == b')') else {
            continue;
        };
        let rest = String::from_utf8_lossy(&stat[close + 1..]).into_owned();
        if rest.split_ascii_whitespace().nth(1) == Some(&pid.to_string()) {
            out.push(p);
        }
    }
    out
}

/// A fresh, empty directory for one test's files (under TMPDIR), removed with what it
/// holds when the value is dropped, whether the test passed or not.
pub struct Scratch(tempfile::TempDir);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.0.path().as_os_str()
    }
}

pub fn scratch_dir(tag: &str) -> Scratch {
    let dir = tempfile::Builder::new()
        .prefix(&format!("rtrace-{tag}-"))
        .tempdir()
        .expect("a scratch directory under TMPDIR");
    Scratch(dir)
}

/// Makes a FIFO at `path` (for tests of what rtrace does with one that blocks).
pub fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {path:?}"
    );
}

/// Compiles C `source` into `dir/name` with gcc and `flags`; the run, and the binary.
pub fn compile_c(
    dir: &std::path::Path,
    name: &str,
    source: &str,
    flags: &[&str],
) -> (Run, PathBuf) {
    let src = dir.join(format!("{name}.c"));
    fs::write(&src, source).unwrap();
    let bin = dir.join(name);
    let r = run(
        Command::new("gcc")
            .args(flags)
            .arg("-o")
            .arg(&bin)
            .arg(&src),
        Duration::from_secs(60),
    );
    (r, bin)
}

/// A Python helper process (python3 is on every machine of this kind), returned once
/// the interpreter itself runs: `python3` may be a wrapper script (pyenv's) that takes
/// seconds to exec it in the emulated kernels of the matrix, and what it runs before
/// is not the test's.
pub fn python(code: &str) -> Bg {
    let bg = Bg::spawn("python3", &["-c", code]);
    let pid = bg.pid();
    // By its executable: a script may rename itself (prctl), and a wrapper script's
    // name is python3 too.
    let is_python = || {
        fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
            exe.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("python"))
        })
    };
    assert!(
        wait_for(Duration::from_secs(60), is_python),
        "python3 did not start"
    );
    bg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines() {
        let l = parse_line("     0.412 ( 0.011 ms): cat/3102 openat(dfd: CWD, flags: RDONLY) = 3")
            .unwrap();
        assert_eq!((l.comm, l.tid, l.name, l.ret), ("cat", 3102, "openat", "3"));
        let l = parse_line("         ? (         ): cat/6052  ... [continued]: execve())      = 0")
            .unwrap();
        assert_eq!((l.name, l.ret), ("execve", "0"));
        let l = parse_line("     6.673 (         ): ls/2012 exit_group()     = ?").unwrap();
        assert_eq!((l.name, l.ret), ("exit_group", "?"));
        assert!(parse_line("LOST 3 events!").is_none());
        // Only the call's own `)` ends the arguments.
        let l = parse_line("     1.000 ( 0.010 ms): sh/7 wait4(upid: 9 (shapes)) = 9").unwrap();
        assert_eq!(l.args, "upid: 9 (shapes)");
        // Unfinished, with perf's padding before the dots.
        let l = parse_line("     1.000 (         ): sh/7 wait4(upid: -1)           ...").unwrap();
        assert_eq!((l.name, l.args, l.ret), ("wait4", "upid: -1", ""));
    }
}
