//! Decoding: paths and other user memory, errors, and -e selection, on real programs.

use std::{path::Path, time::Duration};

use rtrace_tests::{
    Line, Run, bpf_ready, compile_c, one_layout, parse_line, rtrace, run, scratch_dir,
};

const LIMIT: Duration = Duration::from_secs(60);

/// The first line of call `name` whose arguments hold `has`; the run is shown if none.
fn find_call<'a>(lines: &'a [Line<'a>], name: &str, has: &str, r: &Run) -> &'a Line<'a> {
    lines
        .iter()
        .find(|l| l.name == name && l.args.contains(has))
        .unwrap_or_else(|| panic!("no {name} line with {has}{r}"))
}

fn compile(dir: &Path, name: &str, source: &str) -> std::path::PathBuf {
    let (r, bin) = compile_c(dir, name, source, &["-O0"]);
    assert_eq!(r.code(), Some(0), "{r}");
    bin
}

/// Compiles `source` (with `cflags`) in a scratch directory and runs it under rtrace
/// with `args`; the program must succeed.
fn trace_program(tag: &str, source: &str, cflags: &[&str], args: &[&str]) -> Run {
    let dir = scratch_dir(tag);
    let (cc, bin) = compile_c(&dir, tag, source, cflags);
    assert_eq!(cc.code(), Some(0), "{cc}");
    let r = run(rtrace().args(args).arg("--").arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    r
}

const PATHS_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct stat st; struct statfs sfs; struct statx stx; char buf[64];
    if (chdir(argv[1]) != 0) return 2;
/* The calls arm64 lacks (the generic table has only their *at forms), each made there
   through the call its libc uses instead, with the same paths. */
#ifdef SYS_open
#define OPEN(p, f, m) syscall(SYS_open, p, f, m)
#define STAT(p, s) syscall(SYS_stat, p, s)
#define LSTAT(p, s) syscall(SYS_lstat, p, s)
#define ACCESS(p, m) syscall(SYS_access, p, m)
#define MKDIR(p, m) syscall(SYS_mkdir, p, m)
#define RMDIR(p) syscall(SYS_rmdir, p)
#define RENAME(a, b) syscall(SYS_rename, a, b)
#define LINK(a, b) syscall(SYS_link, a, b)
#define SYMLINK(a, b) syscall(SYS_symlink, a, b)
#define READLINK(p, b, n) syscall(SYS_readlink, p, b, n)
#define CHMOD(p, m) syscall(SYS_chmod, p, m)
#define CHOWN(p, u, g) syscall(SYS_chown, p, u, g)
#define LCHOWN(p, u, g) syscall(SYS_lchown, p, u, g)
#define UNLINK(p) syscall(SYS_unlink, p)
#else
#define OPEN(p, f, m) syscall(SYS_openat, AT_FDCWD, p, f, m)
#define STAT(p, s) syscall(SYS_newfstatat, AT_FDCWD, p, s, 0)
#define LSTAT(p, s) syscall(SYS_newfstatat, AT_FDCWD, p, s, AT_SYMLINK_NOFOLLOW)
#define ACCESS(p, m) syscall(SYS_faccessat, AT_FDCWD, p, m)
#define MKDIR(p, m) syscall(SYS_mkdirat, AT_FDCWD, p, m)
#define RMDIR(p) syscall(SYS_unlinkat, AT_FDCWD, p, AT_REMOVEDIR)
#define RENAME(a, b) syscall(SYS_renameat, AT_FDCWD, a, AT_FDCWD, b)
#define LINK(a, b) syscall(SYS_linkat, AT_FDCWD, a, AT_FDCWD, b, 0)
#define SYMLINK(a, b) syscall(SYS_symlinkat, a, AT_FDCWD, b)
#define READLINK(p, b, n) syscall(SYS_readlinkat, AT_FDCWD, p, b, n)
#define CHMOD(p, m) syscall(SYS_fchmodat, AT_FDCWD, p, m)
#define CHOWN(p, u, g) syscall(SYS_fchownat, AT_FDCWD, p, u, g, 0)
#define LCHOWN(p, u, g) syscall(SYS_fchownat, AT_FDCWD, p, u, g, AT_SYMLINK_NOFOLLOW)
#define UNLINK(p) syscall(SYS_unlinkat, AT_FDCWD, p, 0)
#endif
    close(OPEN("p_open", O_CREAT | O_WRONLY, 0644));
    close(openat(AT_FDCWD, "p_openat", O_CREAT | O_WRONLY, 0600));
    STAT("p_open", &st);
    LSTAT("p_open", &st);
    syscall(SYS_newfstatat, AT_FDCWD, "p_openat", &st, 0);
    syscall(SYS_statx, AT_FDCWD, "p_open", 0, STATX_BASIC_STATS, &stx);
    ACCESS("p_open", R_OK);
    syscall(SYS_faccessat, AT_FDCWD, "p_openat", W_OK);
    MKDIR("p_mkdir", 0755);
    syscall(SYS_mkdirat, AT_FDCWD, "p_mkdirat", 0755);
    RMDIR("p_mkdir");
    RENAME("p_open", "p_renamed");
    syscall(SYS_renameat, AT_FDCWD, "p_renamed", AT_FDCWD, "p_renamedat");
    syscall(SYS_renameat2, AT_FDCWD, "p_renamedat", AT_FDCWD, "p_renamed2", 0);
    LINK("p_renamed2", "p_link");
    syscall(SYS_linkat, AT_FDCWD, "p_link", AT_FDCWD, "p_linkat", 0);
    SYMLINK("p_link", "p_symlink");
    syscall(SYS_symlinkat, "p_linkat", AT_FDCWD, "p_symlinkat");
    READLINK("p_symlink", buf, sizeof buf);
    syscall(SYS_readlinkat, AT_FDCWD, "p_symlinkat", buf, sizeof buf);
    CHMOD("p_link", 0600);
    syscall(SYS_fchmodat, AT_FDCWD, "p_linkat", 0640);
    CHOWN("p_link", 0, 0);
    LCHOWN("p_symlink", 0, 0);
    syscall(SYS_fchownat, AT_FDCWD, "p_linkat", 0, 0, 0);
    syscall(SYS_truncate, "p_link", 0);
    syscall(SYS_statfs, "p_link", &sfs);
    int in = inotify_init1(0);
    inotify_add_watch(in, "p_mkdirat", IN_CREATE);
    syscall(SYS_mount, "p_nodev", "p_nomount", "tmpfs", 0, 0);
    UNLINK("p_link");
    syscall(SYS_unlinkat, AT_FDCWD, "p_mkdirat", AT_REMOVEDIR);
    if (fork() == 0) { execl("/bin/true", "true", "first-arg", (char *)0); _exit(9); }
    wait(0);
    return 0;
}
"#;

#[test]
fn every_path_argument_is_shown() {
    if !bpf_ready("every_path_argument_is_shown") {
        return;
    }
    let dir = scratch_dir("paths");
    let bin = compile(&dir, "paths", PATHS_PROGRAM);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let r = run(rtrace().arg("--").arg(&bin).arg(&work), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    // Some line of the call shows every path.
    let shows =
        |call: &str, paths: &[&str]| {
            assert!(
                lines.iter().any(|l| l.name == call
                    && paths.iter().all(|p| l.args.contains(&format!("\"{p}\"")))),
                "no {call} line shows {paths:?}{r}"
            );
        };
    // The calls arm64 lacks are made there through their *at forms (see the program).
    let legacy = |call: &'static str, at: &'static str| {
        if cfg!(target_arch = "aarch64") {
            at
        } else {
            call
        }
    };
    shows("chdir", &[work.to_str().unwrap()]);
    shows(legacy("open", "openat"), &["p_open"]);
    assert!(
        lines
            .iter()
            .any(|l| l.name == "openat" && l.args.contains("filename: \"p_openat\"")),
        "{r}"
    );
    assert!(
        lines.iter().any(|l| l.name == "openat"
            && l.args
                .contains("\"p_openat\", flags: CREAT|WRONLY, mode: IRUSR|IWUSR")),
        "{r}"
    );
    shows(legacy("stat", "newfstatat"), &["p_open"]);
    shows(legacy("lstat", "newfstatat"), &["p_open"]);
    assert!(
        lines
            .iter()
            .any(|l| l.name == "newfstatat" && l.args.contains("\"p_openat\"")),
        "{r}"
    );
    shows("statx", &["p_open"]);
    assert!(
        lines
            .iter()
            .any(|l| l.name == legacy("access", "faccessat")
                && l.args.contains("\"p_open\", mode: R")),
        "{r}"
    );
    shows("faccessat", &["p_openat"]);
    shows(legacy("mkdir", "mkdirat"), &["p_mkdir"]);
    shows("mkdirat", &["p_mkdirat"]);
    shows(legacy("rmdir", "unlinkat"), &["p_mkdir"]);
    shows(legacy("rename", "renameat"), &["p_open", "p_renamed"]);
    shows("renameat", &["p_renamed", "p_renamedat"]);
    shows("renameat2", &["p_renamedat", "p_renamed2"]);
    shows(legacy("link", "linkat"), &["p_renamed2", "p_link"]);
    shows("linkat", &["p_link", "p_linkat"]);
    shows(legacy("symlink", "symlinkat"), &["p_link", "p_symlink"]);
    shows("symlinkat", &["p_linkat", "p_symlinkat"]);
    shows(legacy("readlink", "readlinkat"), &["p_symlink"]);
    shows("readlinkat", &["p_symlinkat"]);
    shows(legacy("chmod", "fchmodat"), &["p_link"]);
    shows("fchmodat", &["p_linkat"]);
    shows(legacy("chown", "fchownat"), &["p_link"]);
    shows(legacy("lchown", "fchownat"), &["p_symlink"]);
    shows("fchownat", &["p_linkat"]);
    shows("truncate", &["p_link"]);
    shows("statfs", &["p_link"]);
    shows("inotify_add_watch", &["p_mkdirat"]);
    // Two strings per call are copied: the two paths.
    shows("mount", &["p_nodev", "p_nomount"]);
    shows(legacy("unlink", "unlinkat"), &["p_link"]);
    shows("unlinkat", &["p_mkdirat"]);
    let exec = lines
        .iter()
        .find(|l| l.name == "execve" && l.comm == "true")
        .unwrap_or_else(|| panic!("the child's execve{r}"));
    assert!(exec.args.contains("filename: \"/bin/true\""), "{r}");
    assert!(
        exec.args.contains("argv: [\"true\", \"first-arg\"]"),
        "execve's argv as strace shows it{r}"
    );
    let mount = lines.iter().find(|l| l.name == "mount").unwrap();
    assert!(
        mount
            .ret
            .starts_with("-1 ENOENT (No such file or directory)"),
        "errno text{r}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_path_on_a_page_never_touched_before_the_call_still_shows() {
    if !bpf_ready("a_path_on_a_page_never_touched_before_the_call_still_shows") {
        return;
    }
    let dir = scratch_dir("firsttouch");
    // The path sits at the start of its own page of .rodata, which nothing reads
    // before the syscall: at the call's entry the page is not even mapped in.
    let bin = compile(
        &dir,
        "firsttouch",
        r#"
#include <fcntl.h>
#include <unistd.h>
static const struct { char pad[16384]; char path[64]; } page __attribute__((aligned(4096))) =
    { {1}, "/etc/hostname" };
int main(void) { return access(page.path + 0, R_OK) == 0 ? 0 : 1; }
"#,
    );
    // arm64 has no access: libc's access() is faccessat from the working directory.
    let (call, args) = if cfg!(target_arch = "aarch64") {
        (
            "faccessat",
            "dfd: CWD, filename: \"/etc/hostname\", mode: R",
        )
    } else {
        ("access", "filename: \"/etc/hostname\", mode: R")
    };
    let r = run(rtrace().args(["-e", call]).arg("--").arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let ours = lines
        .iter()
        .find(|l| l.name == call && l.ret == "0")
        .unwrap_or_else(|| panic!("the program's {call}(){r}"));
    assert_eq!(ours.args, args, "{r}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn names_of(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(parse_line)
        .map(|l| l.name.to_string())
        .collect()
}

#[test]
fn event_selection_keeps_exactly_the_chosen_calls() {
    if !bpf_ready("event_selection_keeps_exactly_the_chosen_calls") {
        return;
    }
    // The three runs must make the same calls: one address layout (see one_layout).
    let all = run(one_layout(&mut rtrace()).args(["--", "ls", "/"]), LIMIT);
    assert_eq!(all.code(), Some(0), "{all}");
    let all_names = names_of(&all.stderr);
    assert!(all_names.len() > 50, "{all}");

    let r = run(
        one_layout(&mut rtrace()).args(["-e", "open*,close", "--", "ls", "/"]),
        LIMIT,
    );
    let want: Vec<String> = all_names
        .iter()
        .filter(|n| n.starts_with("open") || *n == "close")
        .cloned()
        .collect();
    assert!(!want.is_empty());
    assert_eq!(names_of(&r.stderr), want, "{r}");

    let r = run(
        one_layout(&mut rtrace()).args(["-e", "!mmap,close,newfstatat", "--", "ls", "/"]),
        LIMIT,
    );
    let want: Vec<String> = all_names
        .iter()
        .filter(|n| !matches!(n.as_str(), "mmap" | "close" | "newfstatat"))
        .cloned()
        .collect();
    assert_eq!(names_of(&r.stderr), want, "{r}");

    let r = run(
        rtrace().args(["-e", "openat,nosuchcall", "--", "true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    assert!(
        r.stderr
            .starts_with("rtrace: skipping unknown syscall 'nosuchcall'\n"),
        "{r}"
    );
    assert!(names_of(&r.stderr).iter().all(|n| n == "openat"), "{r}");

    let r = run(rtrace().args(["-e", "nosuchcall", "--", "true"]), LIMIT);
    assert_ne!(r.code(), Some(0), "{r}");
    assert_eq!(r.stderr.lines().count(), 1, "{r}");

    // strace's spelling of its file class: the calls that take a file name, all of
    // them, and nothing else.
    let r = run(
        one_layout(&mut rtrace()).args(["-e", "trace=%file", "--", "ls", "/"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let files = names_of(&r.stderr);
    assert!(
        files.iter().any(|n| n == "openat") && files.iter().any(|n| n == "execve"),
        "{r}"
    );
    assert!(
        files
            .iter()
            .all(|n| !matches!(n.as_str(), "read" | "write" | "mmap" | "close" | "brk")),
        "{r}"
    );
    let openats = |v: &[String]| v.iter().filter(|n| *n == "openat").count();
    assert_eq!(openats(&files), openats(&all_names), "{r}");
}

#[test]
fn perfs_open_filename_check() {
    if !bpf_ready("perfs_open_filename_check") {
        return;
    }
    let dir = scratch_dir("touch");
    let file = dir.join("touched");
    let r = run(
        rtrace().args(["-e", "open,openat", "touch"]).arg(&file),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let want = format!(
        "filename: \"{}\", flags: CREAT|NOCTTY|NONBLOCK|WRONLY, mode: IRUGO|IWUGO",
        file.display()
    );
    let found = r.stderr.lines().any(|l| {
        l.contains("touch/")
            && l.contains(&want)
            && parse_line(l).is_some_and(|p| p.ret.parse::<i32>().is_ok())
    });
    assert!(found, "{want}{r}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A 32-bit program that makes the calls the 32-bit test looks for: on x86_64 an i386
/// one built here with gcc -m32; on arm64 an arm32 one (tests/programs/arm32.c), which
/// `cargo xtask test --kernel arm64` builds with zig (Debian's arm64 gcc has no -m32)
/// and names in RTRACE_COMPAT_PROGRAM. None, said, where it cannot be had outside CI.
fn compat_program(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let required = std::env::var("RTRACE_REQUIRE_BPF").is_ok();
    if cfg!(target_arch = "aarch64") {
        let program = std::env::var_os("RTRACE_COMPAT_PROGRAM").map(std::path::PathBuf::from);
        assert!(
            program.is_some() || !required,
            "RTRACE_COMPAT_PROGRAM names no arm32 program (cargo xtask test --kernel arm64 builds it)"
        );
        if program.is_none() {
            // Past libtest's capture (which keeps a passing test's output to itself).
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED a_32_bit_program_is_decoded_with_its_own_table: no arm32 program \
                 (RTRACE_COMPAT_PROGRAM; cargo xtask test --kernel arm64 builds one)"
            );
        }
        return program;
    }
    let (cc, bin) = compile_c(
        dir,
        "m32",
        r#"#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
int main(void) {
    for (int i = 0; i < 3; i++) syscall(SYS_getppid);
    /* The 32-bit clock_nanosleep: its timespec is two 32-bit fields. */
    struct { int sec, nsec; } ts = {0, 1000};
    syscall(SYS_clock_nanosleep, CLOCK_REALTIME, 0, &ts, 0);
    int fd = open("/etc/hostname", O_RDONLY);
    char b[8];
    read(fd, b, sizeof b);
    close(fd);
    return 3;
}
"#,
        &["-m32"],
    );
    if cc.code() != Some(0) {
        // `cargo xtask test` installs gcc-multilib; a plain `cargo test` may lack it.
        assert!(
            !required,
            "gcc -m32 is needed for this test (cargo xtask test installs it){cc}"
        );
        eprintln!("SKIPPED a_32_bit_program_is_decoded_with_its_own_table: no gcc -m32");
        return None;
    }
    Some(bin)
}

#[test]
fn a_32_bit_program_is_decoded_with_its_own_table() {
    if !bpf_ready("a_32_bit_program_is_decoded_with_its_own_table") {
        return;
    }
    let dir = scratch_dir("m32");
    let Some(bin) = compat_program(&dir) else {
        return;
    };
    let r = run(rtrace().arg("--").arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(3), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    // i386 numbers: getppid 64, openat 295, exit_group 252 (x86_64: 110, 257, 231).
    assert_eq!(
        lines.iter().filter(|l| l.name == "getppid").count(),
        3,
        "{r}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.name == "openat" && l.args.contains("filename: \"/etc/hostname\"")),
        "{r}"
    );
    assert!(
        lines.iter().any(|l| l.name == "clock_nanosleep"
            && l.args.contains("rqtp: { .tv_sec: 0, .tv_nsec: 1000 }")),
        "{r}"
    );
    let last = lines.last().unwrap();
    assert_eq!(
        (last.name, last.args),
        ("exit_group", "error_code: 3"),
        "{r}"
    );
    // `-e` stays on the raw tracepoints for a 32-bit command, whose calls the kernel
    // sends no syscall event for.
    let e = run(
        rtrace().args(["-v", "-e", "getppid", "--"]).arg(&bin),
        LIMIT,
    );
    assert!(!e.stderr.contains("chosen calls' own events"), "{e}");
    assert!(
        e.stderr.contains(
            "rtrace: -e runs on the raw syscall tracepoints, which every call passes: a target may run 32-bit code"
        ),
        "{e}"
    );
    assert_eq!(
        e.stderr
            .lines()
            .filter_map(parse_line)
            .filter(|l| l.name == "getppid")
            .count(),
        3,
        "{e}"
    );
    // A 64-bit shell's `-e` runs on the events, and the 32-bit program it starts makes
    // calls they never see: rtrace says so at the end, as it cannot show them.
    let script = format!("{}; {}; true", bin.display(), bin.display());
    let shell = run(
        rtrace().args(["-e", "getppid", "--", "sh", "-c", &script]),
        LIMIT,
    );
    assert_eq!(shell.code(), Some(0), "{shell}");
    assert!(
        shell.stderr.lines().any(|l| l
            == "rtrace: 2 execs of a 32-bit program by traced tasks: their calls are not shown, as -e ran on the chosen calls' own events or functions, which only 64-bit calls pass (RTRACE_SYSCALL_HOOKS=raw shows them)"),
        "{shell}"
    );
    // On the raw tracepoints they are shown, and nothing is said.
    let raw = run(
        rtrace()
            .env("RTRACE_SYSCALL_HOOKS", "raw")
            .args(["-e", "getppid", "--", "sh", "-c", &script]),
        LIMIT,
    );
    let from_bin = |r: &Run| {
        r.stderr
            .lines()
            .filter_map(parse_line)
            .filter(|l| l.name == "getppid" && l.comm != "sh")
            .count()
    };
    assert_eq!(from_bin(&shell), 0, "the events saw none of them{shell}");
    assert_eq!(from_bin(&raw), 6, "{raw}");
    assert!(!raw.stderr.contains("32-bit program"), "{raw}");
    let s = run(rtrace().args(["-s", "--"]).arg(&bin), LIMIT);
    assert!(
        s.stderr
            .lines()
            .any(|l| l.trim_start().starts_with("getppid ") && l.contains(" 3 ")),
        "{s}"
    );
    if cfg!(target_arch = "aarch64") {
        // ARM's private calls by strace's names: musl's start-up sets the thread
        // pointer, the program flushes its range; `-e` chooses one as any other call.
        assert!(lines.iter().any(|l| l.name == "set_tls"), "{r}");
        assert!(
            lines.iter().any(|l| l.name == "cacheflush" && l.ret == "0"),
            "{r}"
        );
        let e = run(rtrace().args(["-e", "cacheflush", "--"]).arg(&bin), LIMIT);
        assert_eq!(e.code(), Some(3), "{e}");
        let names: Vec<_> = e
            .stderr
            .lines()
            .filter_map(parse_line)
            .map(|l| l.name)
            .collect();
        assert_eq!(names, ["cacheflush"], "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

const RELATIVE_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    /* Started in argv[1]: "here" is taken from the directory rtrace found it in. */
    int here = open("here", O_CREAT | O_WRONLY, 0644);
    mkdir("sub", 0755);
    int d = open("sub", O_RDONLY | O_DIRECTORY);
    int f = openat(d, "file", O_CREAT | O_WRONLY, 0644);
    int copy = fcntl(f, F_DUPFD_CLOEXEC, 20);
    if (fchdir(d) != 0) return 2;
    int other = open("./other", O_CREAT | O_WRONLY, 0644);
    if (chdir("..") != 0) return 3;
    int up = open("up", O_CREAT | O_WRONLY, 0644);
    fsync(here); fsync(f); fsync(copy); fsync(other); fsync(up);
    return 0;
}
"#;

/// An fd opened with a relative path shows where it really leads: from its directory
/// fd, or from the working directory (read at start, followed through fchdir and
/// chdir). It was `<file>` (the bare name) before, and dups took the wrong name.
#[test]
fn relative_opens_show_the_whole_path() {
    if !bpf_ready("relative_opens_show_the_whole_path") {
        return;
    }
    let dir = scratch_dir("relative");
    let bin = compile(&dir, "relative", RELATIVE_PROGRAM);
    let work = std::fs::canonicalize(&dir).unwrap();
    let w = work.to_str().unwrap();
    let r = run(rtrace().current_dir(&work).arg("--").arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let fsyncs: Vec<String> = r
        .stderr
        .lines()
        .filter_map(parse_line)
        .filter(|l| l.name == "fsync")
        .map(|l| l.args.to_string())
        .collect();
    // As /proc shows paths: `..` and symbolic links resolved (by the file system, so a
    // link before `..` leads where the kernel went).
    let want: Vec<String> = ["here", "sub/file", "sub/file", "sub/other", "up"]
        .iter()
        .map(|p| format!("<{w}/{p}>"))
        .collect();
    assert_eq!(fsyncs.len(), 5, "{r}");
    for (got, want) in fsyncs.iter().zip(&want) {
        assert!(
            got.ends_with(want.as_str()),
            "{got} should end with {want}{r}"
        );
    }
    // No fd anywhere shows a path that is not absolute.
    let bad: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains(">") && l.split('<').skip(1).any(|p| !p.starts_with('/')))
        .collect();
    assert!(bad.is_empty(), "relative fd paths: {bad:?}");
}

const HOSTILE_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (chdir(argv[1]) != 0) return 2;
    prctl(PR_SET_NAME, "\033[2Jevil\007");
    int fd = open("e\033]0;x\007", O_CREAT | O_WRONLY, 0644);
    write(fd, "a\"b\\c\td\n1\0339\377", 12);
    fsync(fd);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    strcpy(sa.sun_path, "s\033[31m");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    connect(s, (struct sockaddr *)&sa, sizeof sa);
    return 0;
}
"#;

/// Every byte the traced program chose (its name, a file name shown as an fd's path, a
/// buffer, a socket path) is escaped the same way: nothing reaches the terminal raw.
#[test]
fn bytes_from_the_traced_program_are_escaped() {
    if !bpf_ready("bytes_from_the_traced_program_are_escaped") {
        return;
    }
    let dir = scratch_dir("hostile");
    let bin = compile(&dir, "hostile", HOSTILE_PROGRAM);
    let out = dir.join("trace");
    let r = run(
        rtrace().arg("-o").arg(&out).arg("--").arg(&bin).arg(&dir),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let trace = std::fs::read(&out).unwrap();
    let raw: Vec<u8> = trace
        .iter()
        .copied()
        .filter(|&b| b < 0x20 && b != b'\n' || b == 0x7f || b >= 0x80)
        .collect();
    assert!(raw.is_empty(), "raw bytes {raw:?} in the trace");
    let text = String::from_utf8(trace).unwrap();
    let line = |call: &str| {
        text.lines()
            .find(|l| l.contains(&format!(" {call}(")) && l.contains("\\33[2Jevil\\7/"))
            .unwrap_or_else(|| panic!("no {call} line by the renamed task:\n{text}"))
    };
    let path = format!("{}/e\\33]0;x\\7>", dir.canonicalize().unwrap().display());
    assert!(line("fsync").contains(&path), "{}", line("fsync"));
    assert!(
        line("write").contains(r#"buf: "a\"b\\c\td\n1\0339\377""#),
        "{}",
        line("write")
    );
    assert!(
        line("connect").contains(r"path: s\33[31m }"),
        "{}",
        line("connect")
    );
}

/// What rtrace cannot show whole is marked (strace's `...`: after the quote, or as the
/// last argv entry), `--string-limit` raises the limit for buffers and argv, and a
/// path is shown whole up to PATH_MAX. It used to stop at 8 argv entries, 255 path
/// bytes and 32 buffer bytes with no mark.
#[test]
fn cut_values_are_marked_and_the_limit_can_be_raised() {
    if !bpf_ready("cut_values_are_marked_and_the_limit_can_be_raised") {
        return;
    }
    let args: Vec<String> = (1..=40).map(|i| format!("a{i}")).collect();
    let long_path = format!(
        "/{}/{}/{}",
        "p".repeat(200),
        "q".repeat(200),
        "r".repeat(113)
    );
    assert_eq!(long_path.len(), 516);
    let text = "0123456789".repeat(5);
    let script = format!("cat {long_path}; printf {text}");
    let trace = |extra: &[&str]| {
        let r = run(
            rtrace()
                .args(["-e", "execve,openat,write"])
                .args(extra)
                .args(["--", "sh", "-c", &script, "sh"])
                .args(&args),
            LIMIT,
        );
        // cat fails: the path does not exist.
        assert_eq!(r.code(), Some(0), "{r}");
        r
    };
    let argv_of = |r: &rtrace_tests::Run| {
        r.stderr
            .lines()
            .find(|l| l.contains("execve(") && l.contains("\"sh\", \"-c\""))
            .unwrap_or_else(|| panic!("no execve of sh{r}"))
            .to_string()
    };
    let write_of = |r: &rtrace_tests::Run| {
        r.stderr
            .lines()
            .find(|l| l.contains(" write(") && l.contains("buf: \"0123"))
            .unwrap_or_else(|| panic!("no write of the text{r}"))
            .to_string()
    };

    let r = trace(&[]);
    // sh, -c, the script, $0 and 40 arguments: 44 entries, 32 shown.
    let argv = argv_of(&r);
    assert!(argv.contains(", \"a28\", ...]"), "{argv}");
    assert!(!argv.contains("\"a29\""), "{argv}");
    let opened = format!("filename: \"{long_path}\"");
    assert!(
        r.stderr
            .lines()
            .any(|l| l.contains(" openat(") && l.contains(&opened)),
        "the 516-byte path whole{r}"
    );
    let write = write_of(&r);
    assert!(
        write.contains(&format!("buf: \"{}\"..., count: 50", &text[..32])),
        "{write}"
    );

    let r = trace(&["--string-limit", "64"]);
    let argv = argv_of(&r);
    assert!(argv.contains(", \"a39\", \"a40\"]"), "{argv}");
    assert!(!argv.contains("..."), "{argv}");
    let write = write_of(&r);
    assert!(
        write.contains(&format!("buf: \"{text}\", count: 50")),
        "{write}"
    );

    let r = run(
        rtrace().args(["--string-limit", "5000", "--", "true"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(2), "{r}");
    assert_eq!(r.stderr.lines().count(), 1, "{r}");
    assert!(r.stderr.starts_with("rtrace: "), "{r}");
}

/// A failed execve still has its memory: its path and argv are read when it returns.
/// A successful one shows what the new program received.
#[test]
fn failed_and_successful_execs_show_path_and_argv() {
    if !bpf_ready("failed_and_successful_execs_show_path_and_argv") {
        return;
    }
    let r = run(
        rtrace().args([
            "-e",
            "execve",
            "--",
            "sh",
            "-c",
            "/no/such/rtrace-exec one two; exec /bin/true three",
        ]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let failed = r
        .stderr
        .lines()
        .find(|l| l.contains("execve(filename: \"/no/such/rtrace-exec\""))
        .unwrap_or_else(|| panic!("no failed execve line{r}"));
    assert!(
        failed.contains("argv: [\"/no/such/rtrace-exec\", \"one\", \"two\"]")
            && failed.ends_with("= -1 ENOENT (No such file or directory)"),
        "{failed}"
    );
    assert!(
        r.stderr.lines().any(|l| l
            .contains("execve(filename: \"/bin/true\", argv: [\"/bin/true\", \"three\"]")
            && l.ends_with("= 0")),
        "{r}"
    );
}

const SHAPES_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/futex.h>
int main(void) {
    int fd = open("/etc/hostname", O_RDONLY);
    fcntl(fd, F_GETFL);
    fcntl(fd, F_GETFD);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_DUPFD, 10);
    void *a = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int big = open("/proc/self/exe", O_RDONLY);
    mmap(0, 4096, PROT_READ, MAP_PRIVATE, big, 4096);
    madvise(a, 8192, MADV_DONTNEED);
    struct termios t;
    ioctl(fd, TCGETS, &t);
    int f = 0;
    /* WAKE with leftovers where WAKE takes nothing: they are not its arguments. */
    syscall(SYS_futex, &f, FUTEX_WAKE_PRIVATE, 1, (void *)0x1234, (void *)0x5678, 9);
    struct sigaction sa = {0};
    sa.sa_handler = SIG_IGN;
    sigaction(SIGRTMIN + 2, &sa, 0);
    kill(getpid(), SIGRTMIN + 2);
    pid_t c = fork();
    if (c == 0) { pause(); _exit(0); }
    kill(c, SIGKILL);
    wait4(c, 0, 0, 0);
    return 0;
}
"#;

/// perf's shapes where an argument's meaning depends on another (fcntl's arg and return
/// on cmd, mmap's fd on ANONYMOUS, futex's arguments on op), pids with their task's
/// name, and real-time signals by strace's name.
#[test]
fn arguments_are_shown_as_their_call_uses_them() {
    if !bpf_ready("arguments_are_shown_as_their_call_uses_them") {
        return;
    }
    let dir = scratch_dir("shapes");
    let bin = compile(&dir, "shapes", SHAPES_PROGRAM);
    let r = run(rtrace().arg("--").arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let find = |name: &str, has: &str| find_call(&lines, name, has, &r);
    let pid = lines[0].tid;
    let getfl = find("fcntl", "cmd: GETFL");
    assert!(
        getfl.args.ends_with("cmd: GETFL"),
        "no unused arg: {}",
        getfl.args
    );
    assert_eq!(getfl.ret, "RDONLY|LARGEFILE");
    assert_eq!(find("fcntl", "cmd: GETFD").ret, "0");
    assert!(
        find("fcntl", "cmd: SETFD")
            .args
            .ends_with("cmd: SETFD, arg: CLOEXEC")
    );
    let dup = find("fcntl", "cmd: DUPFD");
    assert!(dup.args.ends_with("cmd: DUPFD, arg: 10"), "{}", dup.args);
    // The lowest free fd from 10 (10 itself unless the environment left one open).
    let (n, path) = dup
        .ret
        .split_once('<')
        .unwrap_or_else(|| panic!("{}", dup.ret));
    assert!(
        n.parse::<u32>().unwrap() >= 10 && path == "/etc/hostname>",
        "{}",
        dup.ret
    );
    let anon = find("mmap", "ANONYMOUS");
    assert!(!anon.args.contains("fd:"), "{}", anon.args);
    assert!(find("mmap", "len: 4096").args.ends_with(", off: 0x1000"));
    find("madvise", "behavior: MADV_DONTNEED");
    assert!(find("ioctl", "cmd: TCGETS").args.contains(", arg: 0x"));
    let wake = find("futex", "op: WAKE|PRIVATE_FLAG");
    assert!(
        wake.args.ends_with("op: WAKE|PRIVATE_FLAG, val: 1"),
        "{}",
        wake.args
    );
    find("rt_sigaction", "sig: SIGRT_4");
    let getpid = lines.iter().find(|l| l.name == "getpid").unwrap();
    assert_eq!(getpid.ret, pid.to_string(), "perf gives getpid no (comm)");
    find("kill", &format!("pid: {pid} (shapes), sig: SIGRT_4"));
    let kill = find("kill", "sig: KILL");
    assert!(kill.args.contains(" (shapes), sig: KILL"), "{}", kill.args);
    assert!(find("wait4", "upid: ").args.contains(" (shapes)"), "{r}");
}

const OUTPUTS_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (chdir(argv[1]) != 0) return 2;
    int f = open("data", O_CREAT | O_RDWR | O_TRUNC, 0640);
    write(f, "hello\n", 6);
    lseek(f, 0, SEEK_SET);
    char buf[64];
    read(f, buf, sizeof buf);
    struct stat st;
    /* glibc's fstat() is newfstatat(fd, "", …): the syscall itself. */
    syscall(SYS_fstat, f, &st);
    syscall(SYS_fstat, -1, &st);
    int p[2];
    pipe2(p, O_CLOEXEC);
    int d = open(".", O_RDONLY | O_DIRECTORY);
    char ents[4096];
    syscall(SYS_getdents64, d, ents, sizeof ents);
    struct sigaction sa = {0}, old;
    sa.sa_handler = SIG_IGN;
    sigaction(SIGUSR1, &sa, &old);
    sigset_t block, was;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigprocmask(SIG_BLOCK, &block, &was);
    char cwd[256];
    syscall(SYS_getcwd, cwd, sizeof cwd);
    symlink("data", "link");
    char target[64];
    readlink("link", target, sizeof target);
    pid_t c = fork();
    if (c == 0) _exit(3);
    usleep(200000);
    int status;
    wait4(c, &status, 0, 0);
    return 0;
}
"#;

/// What a call writes is shown once it returned, as strace shows it (perf 6.1 shows
/// pointers): read's bytes, a stat buffer, pipe fds, directory entries, a wait status,
/// clone's exit signal; a call that failed shows the pointer.
#[test]
fn what_a_call_writes_is_shown_when_it_succeeded() {
    if !bpf_ready("what_a_call_writes_is_shown_when_it_succeeded") {
        return;
    }
    let dir = scratch_dir("outputs");
    let bin = compile(&dir, "outputs", OUTPUTS_PROGRAM);
    let r = run(rtrace().arg("--").arg(&bin).arg(&*dir), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let find = |name: &str, has: &str| find_call(&lines, name, has, &r);
    find("read", "buf: \"hello\\n\", count: 64");
    find(
        "fstat",
        "statbuf: { .st_mode: S_IFREG|0640, .st_size: 6, ... }",
    );
    let failed = find("fstat", "fd: -1");
    assert!(failed.args.contains("statbuf: 0x"), "{}", failed.args);
    find("pipe2", "fildes: [");
    let ents = find("getdents64", "dirent: [");
    for name in ["\".\"", "\"..\"", "\"data\"", "\"outputs\""] {
        assert!(ents.args.contains(name), "{}", ents.args);
    }
    find(
        "wait4",
        "stat_addr: [{WIFEXITED(s) && WEXITSTATUS(s) == 3}]",
    );
    find("clone", "|SIGCHLD");
}

const SOCKETS_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
int main(void) {
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    bind(s, (struct sockaddr *)&a, sizeof a);
    listen(s, 1);
    getsockname(s, (struct sockaddr *)&a, &len);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&a, sizeof a);
    struct sockaddr_in peer;
    len = sizeof peer;
    int x = accept4(s, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
    send(c, "hi", 2, 0);
    char buf[16];
    struct sockaddr_storage from;
    len = sizeof from;
    recvfrom(x, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
    int pair[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    struct sockaddr_storage un;
    len = sizeof un;
    getsockname(pair[0], (struct sockaddr *)&un, &len);
    struct rlimit64 rl;
    syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &rl);
    struct utsname u;
    uname(&u);
    struct statx sx;
    statx(AT_FDCWD, "/etc/hostname", 0, STATX_BASIC_STATS, &sx);
    return 0;
}
"#;

/// Socket addresses the kernel wrote (sized by the length it wrote back, so an unnamed
/// socket shows only its family and a connected stream none), limits, uname, statx.
#[test]
fn addresses_limits_and_names_the_kernel_wrote() {
    if !bpf_ready("addresses_limits_and_names_the_kernel_wrote") {
        return;
    }
    let dir = scratch_dir("sockets");
    let bin = compile(&dir, "sockets", SOCKETS_PROGRAM);
    let r = run(rtrace().arg("--").arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let find = |name: &str, has: &str| find_call(&lines, name, has, &r);
    find("getsockname", "usockaddr: { .family: PF_INET, port: ");
    find("getsockname", "usockaddr: { .family: PF_LOCAL },");
    let accept = find("accept4", "upeer_sockaddr: { .family: PF_INET, port: ");
    assert!(accept.args.ends_with("flags: CLOEXEC"), "{}", accept.args);
    find("recvfrom", "ubuf: \"hi\", size: 16, addr: {},");
    find("prlimit64", "old_rlim: { .rlim_cur: ");
    find("uname", "name: { .sysname: \"Linux\", .nodename: ");
    let statx = find("statx", "filename: \"/etc/hostname\"");
    let meta = std::fs::metadata("/etc/hostname").unwrap();
    let (mode, size) = (
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777,
        meta.len(),
    );
    assert!(
        statx.args.contains(&format!(
            ".stx_mode: S_IFREG|{mode:04o}, .stx_size: {size}, ... }}"
        )),
        "{}",
        statx.args
    );
}

/// An fd's path comes from what was traced, from /proc when tracing started, or from
/// the fds rtrace itself was started with (the command inherits them): never from /proc
/// when the record is read, which may already show what the process did after the call.
/// (The old binary showed `fcntl(fd: 7</etc/hostname>, …) = -1 EBADF`: fd 7 was not open
/// yet; and no path for the stdout a short program inherited.)
#[test]
fn fd_paths_are_never_read_from_the_future() {
    if !bpf_ready("fd_paths_are_never_read_from_the_future") {
        return;
    }
    let r = run(
        rtrace().args(["--", "sh", "-c", "echo hi; exec 7</etc/hostname; cat <&7"]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let probe = lines
        .iter()
        .find(|l| l.name == "fcntl" && l.args.starts_with("fd: 7") && l.ret.contains("EBADF"))
        .unwrap_or_else(|| panic!("no fcntl of the closed fd 7{r}"));
    assert_eq!(
        probe.args, "fd: 7, cmd: DUPFD, arg: 10",
        "no path for a closed fd"
    );
    // run() gives rtrace a pipe for stdout, and the command inherits it.
    let echo = lines
        .iter()
        .find(|l| l.name == "write" && l.args.contains("buf: \"hi\\n\""))
        .unwrap_or_else(|| panic!("no write of hi{r}"));
    assert!(
        echo.args.starts_with("fd: 1<pipe:["),
        "the inherited stdout: {}",
        echo.args
    );
}

const CLOEXEC_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc > 1) {
        /* After the exec: fd 7 was close-on-exec, so it is not open; fd 8 is. (Fds above
           the ones the dynamic loader takes and gives back.) */
        fcntl(7, F_GETFD);
        fcntl(8, F_GETFD);
        return 0;
    }
    dup3(open("/etc/hostname", O_RDONLY), 7, O_CLOEXEC);
    dup2(open("/etc/passwd", O_RDONLY | O_CLOEXEC), 8);
    execl(argv[0], argv[0], "again", (char *)0);
    return 3;
}
"#;

/// A successful exec closes the close-on-exec fds, and their paths go with them.
#[test]
fn an_exec_forgets_the_close_on_exec_fds() {
    if !bpf_ready("an_exec_forgets_the_close_on_exec_fds") {
        return;
    }
    let dir = scratch_dir("cloexec");
    let bin = compile(&dir, "cloexec", CLOEXEC_PROGRAM);
    let r = run(rtrace().args(["-e", "!mmap"]).arg("--").arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let getfd = |fd: &str| {
        lines
            .iter()
            .find(|l| l.name == "fcntl" && l.args.starts_with(fd) && l.args.ends_with("cmd: GETFD"))
            .unwrap_or_else(|| panic!("no fcntl GETFD of {fd}{r}"))
    };
    let closed = getfd("fd: 7");
    assert_eq!(closed.args, "fd: 7, cmd: GETFD", "{r}");
    assert!(closed.ret.contains("EBADF"), "{}", closed.ret);
    // dup2's copy is not close-on-exec, whatever the original was.
    assert_eq!(getfd("fd: 8").args, "fd: 8</etc/passwd>, cmd: GETFD", "{r}");
}

const REUSED_PID_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    /* A child renames itself, opens a file as fd 9 and is killed: it makes no
       exit_group. */
    pid_t dead = fork();
    if (dead == 0) {
        prctl(PR_SET_NAME, "doomed");
        dup2(open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0600), 9);
        kill(getpid(), SIGKILL);
        _exit(3);
    }
    waitpid(dead, 0, 0);
    /* The parent's own fd 9, then children until the kernel gives one the dead pid
       again (ns_last_pid asks for it; another process may take it first). */
    dup2(open("/etc/hostname", O_RDONLY), 9);
    for (int tries = 0; tries < 50; tries++) {
        int last = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
        if (last < 0) return 5;
        dprintf(last, "%d", dead - 1);
        close(last);
        pid_t again = fork();
        if (again == 0) {
            if (getpid() == dead) {
                /* After the parent's return from fork, as most children run. */
                struct timespec ts = {0, 50000000};
                nanosleep(&ts, 0);
                char c;
                read(9, &c, 1);
            }
            _exit(0);
        }
        waitpid(again, 0, 0);
        if (again == dead) return 0;
    }
    return 4;
}
"#;

/// A process killed by a signal leaves its fds and its name in rtrace's tables (no
/// exit_group says it ended); a new process that gets its pid shows its own fds, the
/// ones its parent gave it, and its parent's fork names it after the parent, not after
/// the dead one.
#[test]
fn a_reused_pid_shows_its_own_fds() {
    if !bpf_ready("a_reused_pid_shows_its_own_fds") {
        return;
    }
    let dir = scratch_dir("reused-pid");
    let bin = compile(&dir, "reused", REUSED_PID_PROGRAM);
    let dead_file = dir.join("dead-fd");
    let r = run(rtrace().arg("--").arg(&bin).arg(&dead_file), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let read = find_call(&lines, "read", "fd: 9", &r);
    assert!(
        read.args.starts_with("fd: 9</etc/hostname>,"),
        "{}{r}",
        read.args
    );
    assert_eq!(read.comm, "reused", "{r}");
    let dead = read.tid;
    assert!(
        lines.iter().any(|l| l.comm == "doomed" && l.tid == dead),
        "the dead child's lines are not named doomed{r}"
    );
    let forks: Vec<_> = lines
        .iter()
        .filter(|l| l.name == "clone" && l.ret.starts_with(&format!("{dead} ")))
        .collect();
    assert_eq!(forks.len(), 2, "{r}");
    assert_eq!(forks[1].ret, format!("{dead} (reused)"), "{r}");
}

/// A thread sleeps 0.3 s (its 300 ms is read at entry) while the main thread calls
/// getppid: the sleep is shown unfinished first, then continued.
const BLOCKED_PROGRAM: &str = r#"
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static void *sleeper(void *arg) {
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, 0);
    return 0;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, sleeper, 0);
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, 0);
    getppid();
    pthread_join(t, 0);
    return 0;
}
"#;

#[test]
fn an_unfinished_call_shows_what_it_read() {
    if !bpf_ready("an_unfinished_call_shows_what_it_read") {
        return;
    }
    let r = trace_program(
        "blocked",
        BLOCKED_PROGRAM,
        &["-O0", "-pthread"],
        &["-e", "clock_nanosleep,nanosleep,getppid"],
    );
    let unfinished = r
        .stderr
        .lines()
        .find(|l| l.contains(".tv_nsec: 300000000") && l.ends_with(" ..."))
        .unwrap_or_else(|| panic!("the thread's sleep shown unfinished, with its timespec{r}"));
    // perf's layout: the dots one column before where `= ` goes, when the call is short.
    let call = &unfinished[unfinished.find("): ").unwrap() + 3..];
    let name_at = call.find(' ').unwrap() + 1;
    let dots_at = call.rfind(" ...").unwrap() + 1;
    assert!(
        dots_at - name_at == 67 || call[name_at..dots_at - 1].len() >= 66,
        "{unfinished}"
    );
    assert!(
        r.stderr.contains(" ... [continued]: clock_nanosleep())")
            || r.stderr.contains(" ... [continued]: nanosleep())"),
        "{r}"
    );
}

/// vfork's child runs while its parent waits in vfork.
const VFORK_PROGRAM: &str = r#"
#include <unistd.h>
int main(void) {
    if (vfork() == 0) {
        getppid();
        _exit(0);
    }
    return 0;
}
"#;

#[test]
fn a_vfork_parent_is_unfinished_while_its_child_runs() {
    if !bpf_ready("a_vfork_parent_is_unfinished_while_its_child_runs") {
        return;
    }
    // arm64 has no vfork: libc's vfork() is clone(CLONE_VM | CLONE_VFORK), with the
    // same wait for the child.
    let call = if cfg!(target_arch = "aarch64") {
        "clone"
    } else {
        "vfork"
    };
    let events = format!("{call},getppid,exit_group");
    let r = trace_program("vfork", VFORK_PROGRAM, &["-O0"], &["-e", &events]);
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let parent = lines.first().expect("a traced line").tid;
    let at = |what: &dyn Fn(&Line) -> bool| {
        lines
            .iter()
            .position(what)
            .unwrap_or_else(|| panic!("a line is missing{r}"))
    };
    // perf's order, with time going forward: the parent's vfork unfinished, the child's
    // lines, then the parent's vfork continued with the child's pid.
    let unfinished = at(&|l| l.tid == parent && l.name == call && l.ret.is_empty());
    let child_call = at(&|l| l.tid != parent && l.name == "getppid");
    let continued = at(&|l| l.tid == parent && l.name == call && !l.ret.is_empty());
    assert!(unfinished < child_call && child_call < continued, "{r}");
    assert_eq!(
        lines[continued].ret.split(' ').next(),
        Some(lines[child_call].tid.to_string().as_str()),
        "{r}"
    );
    assert!(
        r.stderr
            .lines()
            .all(|l| !l.contains(&format!(" {call}(")) || l.contains("...")),
        "the parent's vfork is not printed whole after its child{r}"
    );
}

/// A vfork child that opens, reads and closes before it ends, while its parent still
/// waits in vfork: the child's records all come before the parent's return.
const VFORK_FDS_PROGRAM: &str = r#"
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char buf[8];
    if (argc < 2 || chdir(argv[1]) != 0) return 2;
    int inherited = open(argv[2], O_RDONLY);
    if (inherited != 3) return 3;
    if (vfork() == 0) {
        int own = open("rel.txt", O_RDONLY);
        read(own, buf, sizeof buf);
        read(inherited, buf, sizeof buf);
        close(own);
        close(inherited);
        _exit(0);
    }
    wait(0);
    return 0;
}
"#;

#[test]
fn a_vfork_child_has_its_parents_fds_and_directory_before_the_parent_returns() {
    if !bpf_ready("a_vfork_child_has_its_parents_fds_and_directory_before_the_parent_returns") {
        return;
    }
    // Before, the child got its parent's fds and directory only at the parent's
    // return from vfork, after every line of the child: its relative open and its
    // inherited fd had no path (git's `.git/config` under dash, in the fidelity run).
    let dir = scratch_dir("vforkfds");
    std::fs::write(dir.join("rel.txt"), "rel\n").unwrap();
    std::fs::write(dir.join("abs.txt"), "abs\n").unwrap();
    let bin = compile(&dir, "vforkfds", VFORK_FDS_PROGRAM);
    let real = std::fs::canonicalize(&*dir).unwrap().display().to_string();
    let abs = format!("{real}/abs.txt");
    let r = run(rtrace().arg("--").arg(&bin).arg(&*dir).arg(&abs), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let parent = lines.first().expect("a traced line").tid;
    let child: Vec<String> = lines
        .iter()
        .filter(|l| l.tid != parent && (l.name == "read" || l.name == "close"))
        .map(|l| format!("{}({})", l.name, l.args))
        .collect();
    let own = format!("4<{real}/rel.txt>");
    let inherited = format!("3<{abs}>");
    for (call, fd) in [
        ("read", &own),
        ("read", &inherited),
        ("close", &own),
        ("close", &inherited),
    ] {
        assert!(
            child
                .iter()
                .any(|c| c.starts_with(&format!("{call}(fd: {fd}"))),
            "the child's {call} of {fd}: {child:#?}{r}"
        );
    }
    // The same with --json, which shows no unfinished entries: whether the parent
    // waits is the kernel side's to find, whatever the output.
    let r = run(
        rtrace()
            .arg("--json")
            .arg("--")
            .arg(&bin)
            .arg(&*dir)
            .arg(&abs),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    for (fd, path) in [(4, format!("{real}/rel.txt")), (3, abs.clone())] {
        let read = format!(r#""fd":{{"raw":{fd},"fd":{fd},"path":"{path}"}}"#);
        assert!(
            r.stderr
                .lines()
                .any(|l| l.contains(r#""syscall":"read""#) && l.contains(&read)),
            "the child's read of {path} in JSON{r}"
        );
    }
}

/// posix_spawn: glibc's is a clone3 (or a clone) with CLONE_VM | CLONE_VFORK, and the
/// parent waits in it while its child runs up to its exec.
const SPAWN_PROGRAM: &str = r#"
#include <spawn.h>
#include <sys/wait.h>
extern char **environ;
int main(void) {
    pid_t pid;
    char *argv[] = {"true", 0};
    if (posix_spawn(&pid, "/bin/true", 0, 0, argv, environ) != 0)
        return 1;
    waitpid(pid, 0, 0);
    return 0;
}
"#;

#[test]
fn a_clone_with_clone_vfork_is_unfinished_while_its_child_runs() {
    if !bpf_ready("a_clone_with_clone_vfork_is_unfinished_while_its_child_runs") {
        return;
    }
    let r = trace_program(
        "spawn",
        SPAWN_PROGRAM,
        &["-O0"],
        &["-e", "clone,clone3,rt_sigprocmask,execve,exit_group"],
    );
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let parent = lines.first().expect("a traced line").tid;
    let forks = |l: &Line| l.tid == parent && (l.name == "clone" || l.name == "clone3");
    let unfinished = lines
        .iter()
        .position(|l| forks(l) && l.ret.is_empty())
        .unwrap_or_else(|| panic!("the parent's clone is not shown unfinished{r}"));
    assert!(lines[unfinished].args.contains("VFORK"), "{r}");
    let continued = lines
        .iter()
        .position(|l| forks(l) && !l.ret.is_empty())
        .unwrap_or_else(|| panic!("the parent's clone is not continued{r}"));
    let child: u32 = lines[continued]
        .ret
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // The child's own calls before its exec (its signal mask) come between the two.
    let child_call = lines
        .iter()
        .position(|l| l.tid == child && l.name == "rt_sigprocmask")
        .unwrap_or_else(|| panic!("the child's rt_sigprocmask is missing{r}"));
    assert!(unfinished < child_call && child_call < continued, "{r}");
    assert!(
        r.stderr
            .lines()
            .filter(|l| l.contains(&format!("/{parent} ")) && !l.contains("[continued]"))
            .all(|l| !(l.contains(" clone(") || l.contains(" clone3(")) || l.ends_with(" ...")),
        "the parent's clone is not printed whole after its child's lines{r}"
    );
}

/// prctl's names, capabilities and signals, timers, file systems, the system's numbers
/// and clone3's arguments; the program
/// prints what it got, for the test to compare.
const STRUCTS_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    prctl(PR_SET_NAME, "rt-worker", 0, 0, 0);
    prctl(PR_CAPBSET_READ, 21 /* CAP_SYS_ADMIN */, 0, 0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    struct itimerspec its = {{0, 0}, {5, 250}};
    timerfd_settime(fd, 0, &its, 0);
    struct itimerval itv = {{0, 0}, {7, 500}};
    setitimer(ITIMER_REAL, &itv, 0);
    struct statfs sf;
    statfs("/", &sf);
    struct sysinfo si;
    sysinfo(&si);
    printf("%ld %ld %u\n", (long)sf.f_bsize, (long)sf.f_namelen, si.mem_unit);
    fflush(stdout);
    struct clone_args ca = {0};
    ca.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid == 0) _exit(0);
    waitpid(pid, 0, 0);
    return 0;
}
"#;

#[test]
fn prctl_timers_file_systems_and_clone3_show_their_values() {
    if !bpf_ready("prctl_timers_file_systems_and_clone3_show_their_values") {
        return;
    }
    let r = trace_program(
        "structs",
        STRUCTS_PROGRAM,
        &["-O0"],
        &["-e", "prctl,timerfd_*,setitimer,statfs,sysinfo,clone3"],
    );
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    for (has, shown) in [
        ("SET_NAME", "option: SET_NAME, arg2: \"rt-worker\""),
        ("CAPBSET_READ", "option: CAPBSET_READ, arg2: SYS_ADMIN"),
        ("SET_PDEATHSIG", "option: SET_PDEATHSIG, arg2: TERM"),
    ] {
        assert_eq!(find_call(&lines, "prctl", has, &r).args, shown, "{r}");
    }
    assert_eq!(
        find_call(&lines, "timerfd_create", "", &r).args,
        "clockid: MONOTONIC, flags: CLOEXEC",
        "{r}"
    );
    find_call(
        &lines,
        "timerfd_settime",
        "utmr: { .it_interval: { .tv_sec: 0, .tv_nsec: 0 }, .it_value: { .tv_sec: 5, .tv_nsec: 250 } }",
        &r,
    );
    find_call(
        &lines,
        "setitimer",
        "which: REAL, value: { .it_interval: { .tv_sec: 0, .tv_usec: 0 }, .it_value: { .tv_sec: 7, .tv_usec: 500 } }",
        &r,
    );
    let got: Vec<&str> = r.stdout.split_whitespace().collect();
    let [bsize, namelen, mem_unit] = got[..] else {
        panic!("the program's numbers{r}")
    };
    let statfs = find_call(&lines, "statfs", "buf: { .f_type: ", &r);
    assert!(
        statfs.args.contains(&format!(".f_bsize: {bsize},"))
            && statfs.args.contains(&format!(".f_namelen: {namelen},")),
        "{r}"
    );
    find_call(&lines, "sysinfo", &format!(".mem_unit: {mem_unit} }}"), &r);
    find_call(
        &lines,
        "clone3",
        "uargs: { .flags: 0, .exit_signal: SIGCHLD }, size: 88",
        &r,
    );
}

/// poll waits 0.3 s for a pipe nothing writes to, while a thread writes elsewhere at
/// 0.1 s; the caller left junk in the fd's revents, which the kernel ignores. Then the
/// pipe is written and a poll is answered at once.
const POLL_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
static void *writer(void *arg) {
    usleep(100000);
    int null = open("/dev/null", O_WRONLY);
    write(null, "x", 1);
    return 0;
}
int main(void) {
    int p[2];
    pipe(p);
    pthread_t t;
    pthread_create(&t, 0, writer, 0);
    struct pollfd f[2] = {{p[0], POLLIN, 0x7fff}, {1, POLLOUT, 0}};
    poll(f, 1, 300);
    write(p[1], "x", 1);
    poll(f, 2, 5000);
    pthread_join(t, 0);
    return 0;
}
"#;

#[test]
fn poll_shows_what_was_asked_and_what_was_answered() {
    if !bpf_ready("poll_shows_what_was_asked_and_what_was_answered") {
        return;
    }
    // arm64 has no poll: libc's poll() is ppoll, its timeout a timespec pointer (shown
    // as an address, as perf does) and no signal mask (zero, so left out).
    let (call, short, long) = if cfg!(target_arch = "aarch64") {
        ("ppoll", "nfds: 1, tsp: 0x", "nfds: 2, tsp: 0x")
    } else {
        (
            "poll",
            "nfds: 1, timeout_msecs: 300)",
            "nfds: 2, timeout_msecs: 5000",
        )
    };
    let r = trace_program(
        "poll",
        POLL_PROGRAM,
        &["-O0", "-pthread"],
        &["-e", &format!("{call},write")],
    );
    // Unfinished while the thread writes: what was asked, not the junk in revents.
    assert!(
        r.stderr
            .lines()
            .any(|l| l.contains(&format!(" {call}(ufds: [{{ .fd: "))
                && l.contains(&format!(", .events: IN }}], {short}"))
                && l.ends_with(" ...")),
        "{r}"
    );
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let answered = find_call(&lines, call, "nfds: 2", &r);
    let want = format!(
        ", .events: IN, .revents: IN }}, {{ .fd: 1, .events: OUT, .revents: OUT }}], {long}"
    );
    assert!(
        if cfg!(target_arch = "aarch64") {
            answered.args.contains(&want)
        } else {
            answered.args.ends_with(&want)
        },
        "{r}"
    );
    assert_eq!(answered.ret, "2", "{r}");
}

/// Execs itself with an environment of its own; the new program exits.
const ENVP_PROGRAM: &str = r#"
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc > 1) return 0;
    char *args[] = {argv[0], "child", 0};
    char *env[] = {"A=1", "B=x y", "C=\"q\"", 0};
    execve(argv[0], args, env);
    return 1;
}
"#;

#[test]
fn envp_shows_the_environment_the_program_received() {
    if !bpf_ready("envp_shows_the_environment_the_program_received") {
        return;
    }
    let dir = scratch_dir("envp");
    let bin = compile(&dir, "envp", ENVP_PROGRAM);
    let execs = |envp: bool| {
        let mut cmd = rtrace();
        cmd.args(["-e", "execve"]).args(envp.then_some("--envp"));
        let r = run(cmd.arg("--").arg(&bin), LIMIT);
        assert_eq!(r.code(), Some(0), "{r}");
        let envps: Vec<String> = r
            .stderr
            .lines()
            .filter_map(parse_line)
            .filter(|l| l.name == "execve")
            .map(|l| {
                l.args
                    .split_once("envp: ")
                    .map_or("", |(_, e)| e)
                    .to_string()
            })
            .collect();
        (envps, r)
    };
    let (shown, r) = execs(true);
    assert_eq!(shown.len(), 2, "{r}");
    assert_eq!(shown[1], r#"["A=1", "B=x y", "C=\"q\""]"#, "{r}");
    // The test's own environment went to the first program.
    assert!(shown[0].starts_with('[') && shown[0] != shown[1], "{r}");
    // Without --envp: the pointer, as perf shows it.
    let (plain, r) = execs(false);
    assert!(plain.iter().all(|e| e.starts_with("0x")), "{r}");
}

/// A handled signal with SIGUSR2 blocked: rt_sigreturn restores that mask.
const SIGRETURN_PROGRAM: &str = r#"
#include <signal.h>
static void handler(int sig) { (void)sig; }
int main(void) {
    signal(SIGUSR1, handler);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    sigprocmask(SIG_BLOCK, &set, 0);
    raise(SIGUSR1);
    return 0;
}
"#;

#[test]
fn rt_sigreturn_shows_the_mask_it_restores() {
    if !bpf_ready("rt_sigreturn_shows_the_mask_it_restores") {
        return;
    }
    let r = trace_program(
        "sigreturn",
        SIGRETURN_PROGRAM,
        &["-O0"],
        &["-e", "rt_sigreturn"],
    );
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    assert_eq!(
        find_call(&lines, "rt_sigreturn", "", &r).args,
        "mask: [USR2]",
        "{r}"
    );
}

/// Asks about fds it was not given; closes fds in ways other than close (FIOCLEX then
/// an exec, close_range); then a pipe takes numbers that named files before.
const FD_REUSE_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc > 1) {
        int p[2];
        pipe(p);
        write(p[1], "x", 1);
        char c;
        read(p[0], &c, 1);
        return 0;
    }
    /* Not open: rtrace's own listing of its fds at start is not inherited. */
    fcntl(3, F_GETFD);
    fcntl(4, F_GETFD);
    int a = open("/etc/hostname", O_RDONLY);
    ioctl(a, FIOCLEX);
    open("/etc/passwd", O_RDONLY);
    open("/etc/group", O_RDONLY);
    syscall(SYS_close_range, a + 1, a + 2, 0);
    fcntl(a + 2, F_GETFD);
    char *args[] = {argv[0], "child", 0};
    execv(argv[0], args);
    return 1;
}
"#;

#[test]
fn fds_closed_without_close_or_reused_by_a_pipe_keep_no_old_path() {
    if !bpf_ready("fds_closed_without_close_or_reused_by_a_pipe_keep_no_old_path") {
        return;
    }
    let r = trace_program("fdreuse", FD_REUSE_PROGRAM, &["-O0"], &[]);
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    // Not open at start (not rtrace's listing of its own fds), then closed by
    // close_range: no path, and each call fails.
    let getfds: Vec<_> = lines
        .iter()
        .filter(|l| l.name == "fcntl" && l.args.ends_with("cmd: GETFD"))
        .collect();
    assert_eq!(getfds.len(), 3, "{r}");
    assert!(
        getfds
            .iter()
            .all(|l| !l.args.contains('<') && l.ret.contains("EBADF")),
        "{r}"
    );
    // The exec closed the FIOCLEX fd; the pipe then took its number and the next, and
    // both ends are the pipe (one inode), not what the numbers named before.
    let pipe = find_call(&lines, "pipe2", "fildes: [", &r);
    let write = find_call(&lines, "write", "count: 1", &r);
    let read = lines
        .iter()
        .rfind(|l| l.name == "read")
        .unwrap_or_else(|| panic!("no read{r}"));
    assert!(pipe.args.starts_with("fildes: [3, 4]"), "{r}");
    let end = |args: &str, fd: &str| {
        let rest = args.strip_prefix(&format!("fd: {fd}<pipe:["))?;
        let ino = rest.split_once("]>,")?.0;
        ino.parse::<u64>().ok()
    };
    let (w, rd) = (end(write.args, "4"), end(read.args, "3"));
    assert!(w.is_some() && w == rd, "both ends named as the one pipe{r}");
}

/// A C library builds sigaction's flags from an int: with its top bit set
/// (SA_RESETHAND) the kernel's unsigned long gets 32 more high bits, which no flag
/// names and which the line must not swallow (strace shows them in hex too).
const SIGN_EXTENDED_FLAGS_PROGRAM: &str = r#"
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
struct ksigaction { void *handler; unsigned long flags; void *restorer; unsigned long mask; };
int main(void) {
    int flags = SA_NODEFER | SA_RESETHAND;
    struct ksigaction a = { SIG_IGN, (unsigned long)(long)flags, 0, 0 };
    return syscall(SYS_rt_sigaction, SIGUSR1, &a, 0, 8) != 0;
}
"#;

#[test]
fn flags_keep_the_bits_no_name_covers() {
    if !bpf_ready("flags_keep_the_bits_no_name_covers") {
        return;
    }
    let r = trace_program(
        "signext",
        SIGN_EXTENDED_FLAGS_PROGRAM,
        &["-O0"],
        &["-e", "rt_sigaction"],
    );
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let l = find_call(&lines, "rt_sigaction", "sig: USR1", &r);
    assert!(
        l.args
            .contains(".sa_flags: NODEFER|RESETHAND|0xffffffff00000000,"),
        "{r}"
    );
}

/// Values strace names that were bare numbers: socket message flags, shutdown's how,
/// fadvise's advice, inotify's masks and flags, a uid or gid of -1, the sticky bit.
const NAMED_VALUES_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return 1;
    sendto(sv[0], "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL, 0, 0);
    shutdown(sv[0], SHUT_WR);
    int fd = open(argv[0], O_RDONLY);
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    fchown(fd, -1, -1);
    flock(fd, LOCK_EX | LOCK_NB);
    syscall(SYS_set_mempolicy, 4 /* MPOL_LOCAL */, 0, 0);
    setresuid(-1, -1, -1);
    int in = inotify_init1(IN_CLOEXEC);
    inotify_add_watch(in, argv[1], IN_MODIFY | IN_CREATE);
    chmod(argv[1], 01777);
    struct stat st;
    return stat(argv[1], &st);
}
"#;

#[test]
fn values_strace_names_are_named() {
    if !bpf_ready("values_strace_names_are_named") {
        return;
    }
    let dir = scratch_dir("named");
    let bin = compile(&dir, "named", NAMED_VALUES_PROGRAM);
    let sticky = dir.join("sticky");
    std::fs::create_dir(&sticky).unwrap();
    // arm64's one fadvise is fadvise64 (its event is sys_enter_fadvise64_64); x86_64's
    // 32-bit table has a fadvise64_64 of its own.
    let calls = if cfg!(target_arch = "aarch64") {
        "sendto,shutdown,fadvise64,fchown,flock,set_mempolicy,setresuid,inotify_init1,inotify_add_watch,newfstatat,statx"
    } else {
        "sendto,shutdown,fadvise64,fadvise64_64,fchown,flock,set_mempolicy,setresuid,inotify_init1,inotify_add_watch,newfstatat,stat,statx"
    };
    let r = run(
        rtrace().args(["-e", calls, "--"]).arg(&bin).arg(&sticky),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    let has = |name: &str, args: &str| {
        assert!(
            lines
                .iter()
                .any(|l| l.name.starts_with(name) && l.args.contains(args)),
            "no {name} with {args}{r}"
        );
    };
    has("sendto", "flags: DONTWAIT|NOSIGNAL");
    has("shutdown", "how: WR");
    has("fadvise64", "advice: SEQUENTIAL");
    has("fchown", "user: -1, group: -1");
    // flock's operation and the memory policy's mode (cp, zstd in the fidelity run).
    has("flock", "cmd: EX|NB");
    has("set_mempolicy", "mode: LOCAL");
    has("setresuid", "ruid: -1, euid: -1, suid: -1");
    has("inotify_init1", "flags: CLOEXEC");
    has("inotify_add_watch", "mask: MODIFY|CREATE");
    assert!(
        r.stderr.contains("S_IFDIR|S_ISVTX|0777"),
        "the sticky directory's mode{r}"
    );
}

/// What cp does to copy: FICLONE first, then copy_file_range; and a dup. dup's `fildes`
/// and copy_file_range's `fd_in`/`fd_out` are fds whose names do not end in `fd`,
/// perf's rule, which left them as numbers, and FICLONE had no name (cp under make in
/// the fidelity run; strace names all three).
const FD_NAMES_PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int in = open(argv[1], O_RDONLY);
    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in != 3 || out != 4) return 1;
    int again = dup(in);
    ioctl(out, FICLONE, in);
    if (copy_file_range(in, 0, out, 0, 4, 0) < 0) return 2;
    close(again);
    return 0;
}
"#;

#[test]
fn a_copys_fds_and_ficlone_are_named() {
    if !bpf_ready("a_copys_fds_and_ficlone_are_named") {
        return;
    }
    let dir = scratch_dir("fdnames");
    let bin = compile(&dir, "fdnames", FD_NAMES_PROGRAM);
    let real = std::fs::canonicalize(&*dir).unwrap().display().to_string();
    let (a, b) = (format!("{real}/a"), format!("{real}/b"));
    std::fs::write(&a, "data\n").unwrap();
    let r = run(
        rtrace()
            .args(["-e", "openat,dup,ioctl,copy_file_range,close", "--"])
            .arg(&bin)
            .args([&a, &b]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    for expected in [
        format!("dup(fildes: 3<{a}>)"),
        format!("ioctl(fd: 4<{b}>, cmd: FICLONE, arg: 0x3)"),
        format!("copy_file_range(fd_in: 3<{a}>, fd_out: 4<{b}>"),
        format!("close(fd: 5<{a}>)"),
    ] {
        assert!(r.stderr.contains(&expected), "no {expected}{r}");
    }
}

/// A native number where no native call is, but where the 32-bit table's indexes lie
/// (1024 + its number), is that number, not a 32-bit call: before, syscall(1044) was
/// shown as i386's (or arm's) `getpid()` and, on arm64, syscall(2037) as ARM's `set_tls`.
#[test]
fn numbers_no_call_has_are_shown_as_numbers() {
    if !bpf_ready("numbers_no_call_has_are_shown_as_numbers") {
        return;
    }
    let dir = scratch_dir("stray");
    let (cc, bin) = compile_c(
        &dir,
        "stray",
        r#"#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    syscall(1044);
    syscall(2037);
    syscall(5000);
    return 0;
}
"#,
        &[],
    );
    assert_eq!(cc.code(), Some(0), "{cc}");
    let r = run(rtrace().arg("--").arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    for nr in [1044, 2037, 5000] {
        let name = format!("syscall_{nr}");
        assert!(
            lines
                .iter()
                .any(|l| l.name == name && l.ret.starts_with("-1 ENOSYS")),
            "{name}{r}"
        );
    }
    assert!(
        lines
            .iter()
            .all(|l| l.name != "getpid" && l.name != "set_tls"),
        "{r}"
    );
    // The summary names them so too.
    let s = run(rtrace().arg("-s").arg("--").arg(&bin), LIMIT);
    assert!(s.stderr.contains(" syscall_1044 "), "{s}");
    assert!(!s.stderr.contains(" getpid "), "{s}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Makes one fd of each kind /proc names without a path (and a dup of one), prints each
/// with what /proc calls it, then closes them all.
const NEW_FDS_PROGRAM: &str = r#"#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
int main(void) {
    int fds[16], n = 0, p[2], sv[2];
    sigset_t mask;
    sigemptyset(&mask);
    fds[n++] = eventfd(0, EFD_CLOEXEC);
    fds[n++] = epoll_create1(EPOLL_CLOEXEC);
    if (pipe2(p, O_CLOEXEC) != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 1;
    fds[n++] = p[0];
    fds[n++] = p[1];
    fds[n++] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fds[n++] = sv[0];
    fds[n++] = sv[1];
    fds[n++] = memfd_create("rtrace test", MFD_CLOEXEC);
    fds[n++] = timerfd_create(CLOCK_MONOTONIC, 0);
    fds[n++] = signalfd(-1, &mask, 0);
    fds[n++] = inotify_init1(0);
    fds[n++] = syscall(SYS_pidfd_open, getpid(), 0);
    fds[n++] = dup(sv[1]);
    for (int i = 0; i < n; i++) {
        char link[64], path[256];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fds[i]);
        ssize_t len = readlink(link, path, sizeof path - 1);
        if (len < 0)
            return 2;
        path[len] = 0;
        printf("%d %s\n", fds[i], path);
    }
    fflush(stdout);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return 0;
}
"#;

/// The fds of pipes, sockets, memfds and anonymous inodes made during the trace are
/// named as /proc names them (`pipe:[4711]`, `anon_inode:[eventfd]`), as perf and
/// `strace -y` show them; the inode of a pipe or socket comes from the kernel side, at
/// the exit of the call that made it. (The old binary showed `close(fd: 5)` for each:
/// only fds opened by path, or open when tracing began, had a name.)
#[test]
fn new_pipes_sockets_and_anonymous_fds_are_named() {
    if !bpf_ready("new_pipes_sockets_and_anonymous_fds_are_named") {
        return;
    }
    let dir = scratch_dir("newfds");
    let bin = compile(&dir, "newfds", NEW_FDS_PROGRAM);
    let calls = "eventfd2,epoll_create1,pipe2,socket,socketpair,memfd_create,timerfd_create,\
                 signalfd4,inotify_init1,pidfd_open,dup,close";
    let r = run(rtrace().args(["-e", calls, "--"]).arg(&bin), LIMIT);
    assert_eq!(r.code(), Some(0), "{r}");
    let proc_says: Vec<(&str, &str)> = r.stdout.lines().filter_map(|l| l.split_once(' ')).collect();
    assert_eq!(proc_says.len(), 13, "the program's fds{r}");
    let lines: Vec<_> = r.stderr.lines().filter_map(parse_line).collect();
    for (fd, path) in &proc_says {
        let want = format!("fd: {fd}<{path}>");
        assert!(
            lines.iter().any(|l| l.name == "close" && l.args == want),
            "no close({want}){r}"
        );
    }
    // The kinds the kernel's inode names, and the ones named by their call.
    for kind in [
        "pipe:[",
        "socket:[",
        "anon_inode:[eventfd]",
        "/memfd:rtrace test",
    ] {
        assert!(
            proc_says.iter().any(|(_, p)| p.starts_with(kind)),
            "/proc named no {kind}{r}"
        );
    }
}

#[test]
fn every_process_resolves_paths_the_same_way_however_short_it_lives() {
    if !bpf_ready("every_process_resolves_paths_the_same_way_however_short_it_lives") {
        return;
    }
    // `link` leads to `real`: /proc (and perf) names an fd opened through it by the
    // file's own path. Short-lived children are gone long before their records are
    // read, when /proc can no longer say whether they saw what rtrace sees: before,
    // their paths stayed as given, in the same trace as the parent's resolved ones.
    let dir = scratch_dir("views");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::fs::write(dir.join("real/f"), "x\n").unwrap();
    std::os::unix::fs::symlink("real", dir.join("link")).unwrap();
    let given = dir.join("link/f").display().to_string();
    let canonical = std::fs::canonicalize(&given).unwrap().display().to_string();
    // Six children that open it and end at once, then one in a mount namespace of
    // its own, which must keep the path as it gave it.
    let script = format!(
        "for i in 1 2 3 4 5 6; do cat {given} >/dev/null; done; unshare -m cat {given} >/dev/null"
    );
    let r = run(
        rtrace().args(["-e", "openat,close", "--", "sh", "-c", &script]),
        LIMIT,
    );
    assert_eq!(r.code(), Some(0), "{r}");
    let names: Vec<String> = r
        .stderr
        .lines()
        .filter_map(parse_line)
        .filter(|l| l.name == "close" && l.args.contains("/f>"))
        .map(|l| format!("{}: {}", l.comm, l.args))
        .collect();
    let resolved = format!("<{canonical}>");
    let as_given = format!("<{given}>");
    let cats: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("cat:") && n.contains(&resolved))
        .collect();
    assert_eq!(cats.len(), 6, "each cat's close, resolved: {names:#?}{r}");
    assert_eq!(
        names.iter().filter(|n| n.contains(&as_given)).count(),
        1,
        "the unshared cat's, as given: {names:#?}{r}"
    );
    assert_eq!(names.len(), 7, "{names:#?}{r}");
}
