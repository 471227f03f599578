//! Call chains (`--call-graph fp`): each line's frames below it, named from the
//! program's own symbols and mappings, the kernel's frames with
//! `--kernel-syscall-graph`, `--max-stack` and `--min-stack`, the frames of a page
//! fault, and the refusal of what rtrace does not do.

use std::{path::PathBuf, time::Duration};

use rtrace_tests::{Run, bpf_ready, compile_c, rtrace, run, scratch_dir};

const LIMIT: Duration = Duration::from_secs(60);

/// main -> outer -> inner, which makes the syscall itself (no libc frame without a
/// frame pointer in between), then touches a fresh page of its data. On arm64 `svc`
/// with the number in x8, as `syscall` with it in rax on x86_64.
const PROGRAM: &str = r#"
#include <sys/syscall.h>
static char big[1 << 16] __attribute__((aligned(4096))) = {1};
__attribute__((noinline)) long inner(void) {
    long ret;
#if defined(__x86_64__)
    __asm__ volatile("syscall" : "=a"(ret) : "a"(SYS_getppid) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long nr __asm__("x8") = SYS_getppid;
    register long x0 __asm__("x0");
    __asm__ volatile("svc #0" : "=r"(x0) : "r"(nr) : "memory");
    ret = x0;
#else
#error "no system call instruction for this architecture"
#endif
    big[5 * 4096] = 3;
    return ret;
}
__attribute__((noinline)) long outer(void) { return inner() + 1; }
int main(void) { return outer() > 0 ? 0 : 1; }
"#;

fn build(tag: &str) -> Option<(rtrace_tests::Scratch, PathBuf)> {
    if !bpf_ready(tag) {
        return None;
    }
    let dir = scratch_dir(tag);
    // arm64's gcc leaves the frame record out of leaf functions unless told to keep it
    // (`inner` would lose `outer`, whose return address is still in the link register).
    let flags: &[&str] = if cfg!(target_arch = "aarch64") {
        &[
            "-O0",
            "-fno-omit-frame-pointer",
            "-mno-omit-leaf-frame-pointer",
        ]
    } else {
        &["-O0", "-fno-omit-frame-pointer"]
    };
    let (cc, bin) = compile_c(&dir, "chains", PROGRAM, flags);
    assert_eq!(cc.code(), Some(0), "{cc}");
    let bin = std::fs::canonicalize(bin).unwrap();
    Some((dir, bin))
}

fn trace(bin: &PathBuf, args: &[&str]) -> Run {
    let r = run(rtrace().args(args).arg("--").arg(bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    r
}

/// The frames printed below the first line that contains `what`: `(name, dso)`.
fn frames_after<'a>(r: &'a Run, what: &str) -> Vec<(&'a str, &'a str)> {
    let mut lines = r.stderr.lines().skip_while(|l| !l.contains(what));
    assert!(lines.next().is_some(), "no line with {what}{r}");
    lines
        .take_while(|l| l.starts_with(&" ".repeat(39)))
        .map(|l| {
            let f = l.trim_start();
            let (name, dso) = f.rsplit_once(" (").unwrap_or_else(|| panic!("{l:?}{r}"));
            (
                name,
                dso.strip_suffix(')').unwrap_or_else(|| panic!("{l:?}{r}")),
            )
        })
        .collect()
}

#[test]
fn a_syscalls_frames_are_named_below_its_line() {
    let Some((_dir, bin)) = build("chains_user") else {
        return;
    };
    let path = bin.to_str().unwrap();
    let r = trace(&bin, &["--call-graph", "fp", "-e", "getppid"]);
    let frames = frames_after(&r, " getppid(");
    assert!(frames.len() >= 3, "{r}");
    assert_eq!(
        frames[..3],
        [("inner", path), ("outer", path), ("main", path)],
        "{r}"
    );
    // perf's layout: 39 columns, then the frame.
    assert!(
        r.stderr
            .lines()
            .any(|l| l == format!("{}inner ({path})", " ".repeat(39))),
        "{r}"
    );

    // The kernel's frames first, without the tracing's own.
    let r = trace(&bin, &["--kernel-syscall-graph", "-e", "getppid"]);
    let frames = frames_after(&r, " getppid(");
    let kernel = frames
        .iter()
        .take_while(|(_, dso)| *dso == "[kernel.kallsyms]")
        .count();
    assert!(kernel >= 1, "{r}");
    assert!(
        frames[..kernel]
            .iter()
            .all(|(name, _)| !name.starts_with("bpf_")),
        "{r}"
    );
    assert_eq!(
        frames[kernel..kernel + 3],
        [("inner", path), ("outer", path), ("main", path)],
        "{r}"
    );
}

#[test]
fn json_lines_carry_the_frames() {
    let Some((_dir, bin)) = build("chains_json") else {
        return;
    };
    let path = bin.to_str().unwrap();
    let r = trace(&bin, &["--call-graph", "fp", "-e", "getppid", "--json"]);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("\"syscall\":\"getppid\""))
        .unwrap_or_else(|| panic!("no getppid object{r}"));
    let obj: serde_json::Value = serde_json::from_str(line).unwrap();
    let chain = obj["callchain"].as_array().unwrap_or_else(|| panic!("{r}"));
    for (frame, name) in chain.iter().zip(["inner", "outer", "main"]) {
        assert_eq!(frame["sym"], name, "{r}");
        assert_eq!(frame["dso"], path, "{r}");
        assert!(frame["addr"].as_u64().is_some_and(|a| a > 0), "{r}");
    }
}

#[test]
fn max_stack_cuts_the_chain_and_min_stack_leaves_out_short_ones() {
    let Some((_dir, bin)) = build("chains_limits") else {
        return;
    };
    let path = bin.to_str().unwrap();
    let r = trace(&bin, &["--max-stack", "2", "-e", "getppid"]);
    assert_eq!(
        frames_after(&r, " getppid("),
        [("inner", path), ("outer", path)],
        "{r}"
    );
    // The full chain is some frames long; asking for more leaves the line out.
    let r = trace(
        &bin,
        &["--call-graph", "fp", "--min-stack", "100", "-e", "getppid"],
    );
    assert!(!r.stderr.contains(" getppid("), "{r}");
    let r = trace(
        &bin,
        &["--call-graph", "fp", "--min-stack", "3", "-e", "getppid"],
    );
    assert!(r.stderr.contains(" getppid("), "{r}");
}

#[test]
fn a_page_faults_frames_are_its_code() {
    let Some((_dir, bin)) = build("chains_fault") else {
        return;
    };
    let path = bin.to_str().unwrap();
    let r = trace(&bin, &["--call-graph", "fp", "-F", "min", "--no-syscalls"]);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains(" minfault [inner+0x"))
        .unwrap_or_else(|| panic!("no fault in inner{r}"));
    let frames = frames_after(&r, line);
    assert_eq!(
        frames[..3],
        [("inner", path), ("outer", path), ("main", path)],
        "{r}"
    );
}

#[test]
fn unwinding_rtrace_does_not_do_is_refused() {
    if !bpf_ready("unwinding_rtrace_does_not_do_is_refused") {
        return;
    }
    let r = run(
        rtrace().args(["--call-graph", "dwarf", "--", "/bin/true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(2), "{r}");
    assert_eq!(
        r.stderr.trim_end(),
        "rtrace: --call-graph dwarf is not supported: rtrace's call chains are the kernel's frame-pointer walk, --call-graph fp",
        "{r}"
    );
}
