//! Page faults (`-F`): perf's line, the code and the memory named from the process's
//! own mappings (also in a forked child, also for a fault the kernel takes on the
//! task's behalf), the kinds chosen, the summary's counts, `--json`, the refusals.

use std::{collections::BTreeMap, fs, path::Path, time::Duration};

use rtrace_tests::{Bg, Run, Tracer, bpf_ready, compile_c, rtrace, run, scratch_dir, wait_for};

const LIMIT: Duration = Duration::from_secs(60);

/// Faults in known places; writes where each one is, as `/proc/self/maps` names it,
/// to argv[1] before making them: `tag dso@0xoffset` lines, its pid, its child's pid,
/// and how many major faults its read of a file dropped from the page cache took.
/// With argv[3], it waits for that file to exist before the faults.
const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char big[1 << 16] __attribute__((aligned(4096))) = {1};
__attribute__((noinline)) void writer(volatile char *p) { p[8] = 2; }
__attribute__((noinline)) int toucher(volatile char *p) { return p[100]; }

static void where(FILE *out, const char *tag, void *addr) {
    FILE *m = fopen("/proc/self/maps", "r");
    char line[600];
    while (fgets(line, sizeof line, m)) {
        unsigned long s, e, off;
        char path[512] = "";
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %511s", &s, &e, &off, path) >= 3 &&
            (unsigned long)addr >= s && (unsigned long)addr < e)
            fprintf(out, "%s %s@0x%lx\n", tag, path, (unsigned long)addr - s + off);
    }
    fclose(m);
}

static long majflt(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_majflt;
}

int main(int argc, char **argv) {
    FILE *out = fopen(argv[1], "w");
    char *page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    fprintf(out, "pid %d\nanon //anon@%p\n", getpid(), (void *)page);
    where(out, "data", big + 3 * 4096 + 8);
    where(out, "child", big + 5 * 4096 + 8);
    static char buf[1 << 16];
    memset(buf, 7, sizeof buf);
    int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
    write(fd, buf, sizeof buf);
    fsync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    char *mapped = mmap(0, sizeof buf, PROT_READ, MAP_SHARED, fd, 0);
    where(out, "file", mapped + 100);
    fflush(out);
    /* Started before rtrace (-p): wait for its word. */
    if (argc > 3)
        while (access(argv[3], F_OK) != 0)
            usleep(10000);

    int zero = open("/dev/zero", O_RDONLY);
    read(zero, page, 8);
    writer(big + 3 * 4096);
    pid_t child = fork();
    if (child == 0) {
        writer(big + 5 * 4096);
        _exit(0);
    }
    waitpid(child, 0, 0);
    long before = majflt();
    toucher(mapped);
    fprintf(out, "majflt %ld\nchild-pid %d\n", majflt() - before, child);
    fclose(out);
    return 0;
}
"#;

/// What the program wrote: tag -> value.
struct Expected(BTreeMap<String, String>);

impl Expected {
    fn get(&self, tag: &str) -> &str {
        self.0
            .get(tag)
            .unwrap_or_else(|| panic!("the program wrote no {tag}: {:?}", self.0))
    }
}

/// Builds the program and runs it under rtrace with `args` (`None`: BPF cannot be
/// used here, and `bpf_ready` said so).
fn trace_faults(tag: &str, args: &[&str]) -> Option<(Run, Expected)> {
    if !bpf_ready(tag) {
        return None;
    }
    let dir = scratch_dir(tag);
    let (cc, bin) = compile_c(&dir, "faults", PROGRAM, &["-O0"]);
    assert_eq!(cc.code(), Some(0), "{cc}");
    let places = dir.join("places");
    let r = run(
        rtrace()
            .args(args)
            .arg("--")
            .arg(&bin)
            .arg(&places)
            .arg(dir.join("cold")),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let text = fs::read_to_string(&places).unwrap_or_default();
    let expected = text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Some((r, Expected(expected)))
}

/// A fault line: `ts ( 0.000 ms): comm/tid minfault [code] => memory (MT)`.
#[derive(Debug)]
struct Fault<'a> {
    tid: u32,
    kind: &'a str,
    code: &'a str,
    memory: &'a str,
    kinds: &'a str,
}

fn parse_fault(l: &str) -> Option<Fault<'_>> {
    let (ts, rest) = l.trim_start().split_once(' ')?;
    ts.parse::<f64>().ok()?;
    let rest = rest.strip_prefix("( 0.000 ms): ")?;
    let (who, rest) = rest.split_once(' ')?;
    let tid = who.rsplit_once('/')?.1.parse().ok()?;
    let (kind, rest) = rest.split_once(" [")?;
    let (code, rest) = rest.split_once("] => ")?;
    let (memory, kinds) = rest.rsplit_once(' ')?;
    Some(Fault {
        tid,
        kind,
        code,
        memory,
        kinds,
    })
}

fn faults(r: &Run) -> Vec<Fault<'_>> {
    r.stderr
        .lines()
        .map(|l| parse_fault(l).unwrap_or_else(|| panic!("not a fault line: {l:?}{r}")))
        .collect()
}

/// A symbol and its offset as perf prints them: `name+0xhex`.
fn is_sym_offset(code: &str, name: Option<&str>) -> bool {
    code.rsplit_once("+0x").is_some_and(|(sym, off)| {
        !sym.is_empty()
            && name.is_none_or(|n| sym == n)
            && sym
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.".contains(c))
            && u64::from_str_radix(off, 16).is_ok()
    })
}

#[test]
fn faults_name_the_code_and_the_memory_as_perf_does() {
    let Some((r, want)) = trace_faults("faults_name", &["-F", "all", "--no-syscalls"]) else {
        return;
    };
    let lines = faults(&r);
    let pid: u32 = want.get("pid").parse().unwrap();
    let child: u32 = want.get("child-pid").parse().unwrap();
    for f in &lines {
        assert!(["minfault", "majfault"].contains(&f.kind), "{f:?}{r}");
        assert!(
            ["(d.)", "(dk)", "(?.)", "(?k)"].contains(&f.kinds),
            "{f:?}{r}"
        );
        assert!(
            [pid, child].contains(&f.tid),
            "another task's fault {f:?}{r}"
        );
    }
    let find = |tid: u32, code: &str, memory: &str, kinds: &str| {
        lines.iter().find(|f| {
            f.tid == tid
                && is_sym_offset(f.code, Some(code))
                && f.memory == memory
                && f.kinds == kinds
        })
    };
    // The write to the program's data, in user mode, in the process and in its child
    // (copy-on-write after the fork: the child's mappings are its parent's).
    let data = find(pid, "writer", want.get("data"), "(d.)")
        .unwrap_or_else(|| panic!("no writer fault on {}{r}", want.get("data")));
    assert_eq!(data.kind, "minfault", "{r}");
    find(child, "writer", want.get("child"), "(d.)")
        .unwrap_or_else(|| panic!("no writer fault of the child on {}{r}", want.get("child")));
    // The kernel's write into fresh anonymous memory for read(2): kernel code, the
    // process's mapping (perf would print `(?k)` and the bare address).
    let anon = lines
        .iter()
        .find(|f| f.tid == pid && f.memory == want.get("anon"))
        .unwrap_or_else(|| panic!("no fault on {}{r}", want.get("anon")));
    assert_eq!(anon.kinds, "(dk)", "{r}");
    assert!(is_sym_offset(anon.code, None), "{anon:?}{r}");
    // The read of a file dropped from the page cache: major when the kernel counted
    // it so (a file system that cannot drop it, tmpfs, makes it minor).
    let cold = find(pid, "toucher", want.get("file"), "(d.)")
        .unwrap_or_else(|| panic!("no toucher fault on {}{r}", want.get("file")));
    let majors: u32 = want.get("majflt").parse().unwrap();
    let kind = if majors == 1 { "majfault" } else { "minfault" };
    assert_eq!(
        cold.kind, kind,
        "the kernel counted {majors} major faults{r}"
    );
}

#[test]
fn a_running_process_is_named_from_the_mappings_it_had_before_rtrace() {
    if !bpf_ready("a_running_process_is_named_from_the_mappings_it_had_before_rtrace") {
        return;
    }
    let dir = scratch_dir("faults_pid");
    let (cc, bin) = compile_c(&dir, "faults", PROGRAM, &["-O0"]);
    assert_eq!(cc.code(), Some(0), "{cc}");
    let (places, go) = (dir.join("places"), dir.join("go"));
    let prog = Bg::spawn(
        &bin,
        &[
            places.to_str().unwrap(),
            dir.join("cold").to_str().unwrap(),
            go.to_str().unwrap(),
        ],
    );
    assert!(wait_for(LIMIT, || fs::read_to_string(&places)
        .is_ok_and(|t| t.contains("file "))));
    let want = Expected(
        fs::read_to_string(&places)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    let pid = prog.pid().to_string();
    let t = Tracer::start(&["-F", "min", "--no-syscalls", "-p", &pid]);
    fs::write(&go, "").unwrap();
    let r = t.wait(LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<Fault> = r.stderr.lines().filter_map(parse_fault).collect();
    assert!(
        lines.iter().any(|f| f.tid == prog.pid()
            && is_sym_offset(f.code, Some("writer"))
            && f.memory == want.get("data")
            && f.kinds == "(d.)"),
        "no writer fault on {}{r}",
        want.get("data")
    );
}

#[test]
fn the_kinds_chosen_are_the_kinds_shown() {
    let Some((r, _)) = trace_faults("faults_maj", &["-F", "maj", "--no-syscalls"]) else {
        return;
    };
    let lines = faults(&r);
    assert!(lines.iter().all(|f| f.kind == "majfault"), "{r}");
    let Some((r, _)) = trace_faults("faults_min", &["-F", "min", "--no-syscalls"]) else {
        return;
    };
    let lines = faults(&r);
    assert!(
        lines.len() > 3 && lines.iter().all(|f| f.kind == "minfault"),
        "{r}"
    );
    // Syscalls are traced too unless told not to; -F alone is -F maj, as in perf.
    let Some((r, _)) = trace_faults("faults_default", &["-F", "-e", "write"]) else {
        return;
    };
    assert!(r.stderr.lines().all(|l| !l.contains(" minfault [")), "{r}");
    assert!(r.stderr.lines().any(|l| l.contains(" write(fd: ")), "{r}");
}

#[test]
fn the_summary_counts_the_faults_the_lines_show() {
    let Some((r, want)) = trace_faults("faults_summary", &["-F", "min", "-S", "--no-syscalls"])
    else {
        return;
    };
    let pid: u32 = want.get("pid").parse().unwrap();
    let child: u32 = want.get("child-pid").parse().unwrap();
    for tid in [pid, child] {
        let shown = r
            .stderr
            .lines()
            .filter_map(parse_fault)
            .filter(|f| f.tid == tid)
            .count();
        assert!(shown > 0, "{r}");
        // ` faults (PID), N events, P%, M minfaults`
        let head = format!(" faults ({tid}), {shown} events, ");
        let line = r
            .stderr
            .lines()
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("no summary line starting {head:?}{r}"));
        assert!(
            line.ends_with(&format!("%, {shown} minfaults")),
            "{line}{r}"
        );
    }
}

#[test]
fn json_names_the_places_as_the_line_does() {
    let Some((r, want)) = trace_faults("faults_json", &["-F", "min", "--no-syscalls", "--json"])
    else {
        return;
    };
    let pid: u64 = want.get("pid").parse().unwrap();
    let objects: Vec<serde_json::Value> = r
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}{r}")))
        .collect();
    let data = objects
        .iter()
        .find(|o| o["target"] == want.get("data"))
        .unwrap_or_else(|| panic!("no object with target {}{r}", want.get("data")));
    assert_eq!(data["pid"], pid, "{r}");
    assert_eq!(data["fault"], "minfault", "{r}");
    assert!(
        is_sym_offset(data["code"].as_str().unwrap(), Some("writer")),
        "{r}"
    );
    assert_eq!(data["mapped"], true, "{r}");
    assert_eq!(data["user"], true, "{r}");
    assert!(
        data["ip"].as_u64().is_some() && data["addr"].as_u64().is_some(),
        "{r}"
    );
    let anon = objects
        .iter()
        .find(|o| o["target"] == want.get("anon"))
        .unwrap_or_else(|| panic!("no object with target {}{r}", want.get("anon")));
    assert_eq!(anon["user"], false, "{r}");
    let addr = want.get("anon").trim_start_matches("//anon@0x");
    assert_eq!(
        anon["addr"].as_u64(),
        u64::from_str_radix(addr, 16).ok(),
        "{r}"
    );
}

#[test]
fn bad_fault_kinds_and_recording_faults_are_refused() {
    if !bpf_ready("bad_fault_kinds_and_recording_faults_are_refused") {
        return;
    }
    let r = run(rtrace().args(["-F", "some", "--", "/bin/true"]), LIMIT);
    assert_eq!(r.code(), Some(2), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: invalid value 'some' for -F/--pf: expected maj, min or all",
        "{r}"
    );
    let dir = scratch_dir("faults_record");
    let out = dir.join("rtrace.data");
    let r = run(
        rtrace()
            .arg("record")
            .arg("-o")
            .arg(&out)
            .args(["-F", "all", "--", "/bin/true"]),
        LIMIT,
    );
    assert_ne!(r.code(), Some(0), "{r}");
    assert_eq!(r.stderr.lines().count(), 1, "{r}");
    assert!(
        r.stderr
            .starts_with("rtrace: rtrace record: -F cannot be recorded"),
        "{r}"
    );
    assert!(!Path::new(&out).exists(), "{r}");
}

/// Writes every page of a new file through a shared mapping, as a linker writes its
/// output, for about two seconds.
const SHARED_WRITER: &str = r#"
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long page = sysconf(_SC_PAGESIZE);
    size_t len = 2048 * page;
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, len))
        return 1;
    char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return 1;
    for (size_t o = 0; o < len; o += page) {
        p[o] = 1;
        usleep(1000);
    }
    return 0;
}
"#;

/// Each write to the file changes it; naming the faults must not open it again each
/// time (rtrace kept one descriptor per read of it, hundreds a second, never closed).
#[test]
fn a_file_written_through_a_shared_mapping_is_not_opened_again_and_again() {
    let tag = "a_file_written_through_a_shared_mapping_is_not_opened_again_and_again";
    if !bpf_ready(tag) {
        return;
    }
    let dir = scratch_dir(tag);
    let (cc, bin) = compile_c(&dir, "writer", SHARED_WRITER, &["-O1"]);
    assert_eq!(cc.code(), Some(0), "{cc}");
    let fds = |pid: u32| fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let mut cmd = rtrace();
    cmd.args(["-v", "-F", "all", "-o"])
        .arg(dir.join("out"))
        .arg("--")
        .arg(&bin)
        .arg(dir.join("written"));
    let mut t = Tracer::start_cmd(cmd);
    let pid = t.pid();
    let first = fds(pid);
    let mut most = first;
    while !t.exited() {
        most = most.max(fds(pid));
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = t.wait(LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let out = fs::read_to_string(dir.join("out")).unwrap();
    let written = out.lines().filter(|l| l.contains("written@")).count();
    assert!(written >= 1000, "{written} faults on the file shown:\n{r}");
    assert!(
        most <= first + 8,
        "rtrace's descriptors went from {first} to {most} while it named {written} faults on a file being written"
    );
}
