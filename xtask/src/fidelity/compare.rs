//! Comparing one program's trace by rtrace with perf trace's and strace's: pure text in,
//! counts out. Lines are compared without what differs from run to run (times, tids,
//! addresses, pids, inode numbers), call by call in the order each syscall was made.

use std::collections::HashMap;

/// One `perf trace` / rtrace line reduced to what both runs must agree on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub name: String,
    /// `(name, value)` of each argument shown.
    pub args: Vec<(String, String)>,
    pub ret: String,
}

impl Call {
    /// The arguments by name.
    fn args_by_name(&self) -> HashMap<&str, &str> {
        self.args
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

/// What one differing pair of lines is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// rtrace decodes what perf shows as a pointer (and agrees on the rest).
    Better,
    /// The same call (its arguments agree) returned something else: a wrong value,
    /// unless the program did not do the same.
    Wrong,
    /// As `Wrong`, on data that changes from run to run: a file under /proc, the
    /// tracer's own output (the programs' stderr).
    Varies,
    /// Another result, for a call perf's line cannot tell from others (a path it shows
    /// as a pointer, an fd without its path): perhaps another call of the program.
    Unsure,
    /// An argument perf decodes that rtrace shows as a pointer, or leaves out.
    Missing,
    /// Spelled otherwise.
    Format,
}

/// Replaces what changes from run to run: long hex numbers (addresses), a pid before
/// ` (comm)`, inode numbers in `socket:[N]`.
pub fn normalize(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"0x") {
            let digits = b[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            if digits >= 6 {
                out.push_str("0x?");
                i += 2 + digits;
                continue;
            }
        }
        if b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let rest = &b[i + digits..];
            let before_comm = rest.starts_with(b" (") && !rest.starts_with(b" (No ");
            let inode = i >= 2 && &b[i - 2..i] == b":[";
            let proc_pid = i >= 6 && &b[i - 6..i] == b"/proc/";
            if before_comm || inode || proc_pid {
                out.push('N');
                i += digits;
                continue;
            }
        }
        let ch = s[i..].chars().next().unwrap_or('?');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Splits `a: 1, b: { x: 2, y: 3 }, c: "d, e"` at the commas between arguments.
pub(super) fn split_args(args: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = args.as_bytes();
    outside_strings(b, 0, |i, c, depth| {
        if c == b',' && depth == 0 && b.get(i + 1) == Some(&b' ') {
            out.push(&args[start..i]);
            start = i + 2;
        }
        false
    });
    if start < args.len() {
        out.push(&args[start..]);
    }
    out
}

/// Calls `f` with each byte of `b` from `from` that is outside a quoted string, its
/// index, and the bracket depth after it (`{[(<` open, `}])>` close); stops when `f`
/// says so.
pub(super) fn outside_strings(b: &[u8], from: usize, mut f: impl FnMut(usize, u8, i32) -> bool) {
    let (mut depth, mut quoted, mut escaped) = (0i32, false, false);
    for (i, &c) in b.iter().enumerate().skip(from) {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => quoted = true,
            b'{' | b'[' | b'(' | b'<' => depth += 1,
            b'}' | b']' | b')' | b'>' => depth -= 1,
            _ => {}
        }
        if f(i, c, depth) {
            return;
        }
    }
}

/// A perf-trace-shaped line (`ts (dur ms): comm/tid name(args) = ret`) as a [`Call`];
/// `None` for other lines (LOST, summaries, `[continued]` halves).
pub fn parse(line: &str) -> Option<Call> {
    let rest = &line[line.find("): ")? + 3..];
    let (_task, call) = rest.split_once(' ')?;
    if call.starts_with("...") {
        return None;
    }
    let open = call.find('(')?;
    let name = &call[..open];
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return None;
    }
    // Unfinished: `name(args)<padding> ...`, no return yet.
    let unfinished = call.trim_end().ends_with(" ...") && !call.contains(") = ");
    let (args, ret) = match call.rfind(") = ").or_else(|| call.rfind(")  ")) {
        Some(_) if !unfinished => {
            let eq = call.rfind("= ")?;
            let close = call[..eq].rfind(')')?;
            (&call[open + 1..close], call[eq + 2..].trim())
        }
        _ => (&call[open + 1..call.rfind(')')?], "..."),
    };
    let args = split_args(args)
        .into_iter()
        .map(|a| match a.split_once(": ") {
            Some((k, v)) => (k.to_string(), normalize(v)),
            None => (String::new(), normalize(a)),
        })
        .collect();
    Some(Call {
        name: name.to_string(),
        args,
        ret: normalize(ret),
    })
}

/// Arguments that only receive what the call writes: perf's pointer there does not
/// hide which call it is.
const OUTPUT_ARGS: &[&str] = &[
    "buf",
    "ubuf",
    "statbuf",
    "dirent",
    "buffer",
    "usockaddr",
    "upeer_sockaddr",
    "addr",
    "oact",
    "oset",
    "old_rlim",
    "rlim",
    "name",
    "info",
    "fildes",
    "stat_addr",
    "otmr",
    "value",
    "ovalue",
    "upeer_addrlen",
    "usockaddr_len",
    "addr_len",
    "tloc",
    "tp",
    "rmtp",
];

/// Calls whose result is the other threads' timing: the same call returns otherwise
/// in another run.
const TIMED: &[&str] = &[
    "futex",
    "futex_waitv",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
];

/// Arguments rtrace shows that perf has no place for (rt_sigreturn has none in tracefs;
/// rtrace shows the mask it restores, as strace does).
const ONLY_RTRACE_ARGS: &[(&str, &str)] = &[("rt_sigreturn", "mask")];

/// The class of a differing pair (`perf`, `rtrace`).
pub fn classify(perf: &Call, rtrace: &Call) -> Class {
    let number = |s: &str| {
        s.split(' ')
            .next()
            .is_some_and(|n| n.parse::<i64>().is_ok())
    };
    let pointer = |v: &str| v == "0x?";
    let perf_args = perf.args_by_name();
    let rt_args = rtrace.args_by_name();
    // How the arguments compare: the same call (perhaps better shown), or not.
    let mut better = false;
    // Whether perf's line tells this call from others: not when an argument the call
    // reads is only a pointer there, or an fd has no path.
    let mut told_apart = true;
    let mut differ = None;
    for (k, pv) in &perf_args {
        match rt_args.get(k) {
            Some(rv) if rv == pv => {}
            Some(rv) if pointer(pv) && !pointer(rv) => {
                better = true;
                told_apart &= OUTPUT_ARGS.contains(k);
            }
            // An fd with its path where perf could not find one (`3` / `3</etc/passwd>`).
            Some(rv)
                if rv
                    .strip_prefix(pv)
                    .is_some_and(|path| path.starts_with('<')) =>
            {
                better = true;
                told_apart = false;
            }
            // perf's raw number where rtrace names it (`flag: 4096` / `EMPTY_PATH`).
            Some(rv)
                if pv.parse::<i64>().is_ok()
                    && rv.starts_with(|c: char| c.is_ascii_uppercase()) =>
            {
                better = true
            }
            Some(rv) if pointer(rv) && !pointer(pv) => {
                differ.get_or_insert(Class::Missing);
            }
            _ => {
                differ = Some(Class::Format);
            }
        }
    }
    // rtrace's arguments perf does not have: a value perf cannot show, or a difference.
    for k in rt_args.keys().filter(|k| !perf_args.contains_key(*k)) {
        if ONLY_RTRACE_ARGS.contains(&(perf.name.as_str(), *k)) {
            better = true;
        } else {
            differ = Some(Class::Format);
        }
    }
    if let Some(class) = differ {
        return class;
    }
    if perf.ret != rtrace.ret && number(&perf.ret) && number(&rtrace.ret) {
        // The program's data, not rtrace's decoding, when it read what changes, or
        // the other threads' or processes' timing (how many a futex woke, what a poll
        // found ready, how much a socket or a pipe held at the read).
        let varies = TIMED.contains(&perf.name.as_str())
            || perf_args.values().any(|v| {
                ["</proc", "/trace.out>", "<socket:[", "<pipe:["]
                    .iter()
                    .any(|s| v.contains(s))
            });
        return match (varies, told_apart) {
            (true, _) => Class::Varies,
            (false, true) => Class::Wrong,
            (false, false) => Class::Unsure,
        };
    }
    // perf's line left unfinished (it never showed the return: rt_sigreturn's) where
    // rtrace shows it.
    if perf.ret == "..." && rtrace.ret != "..." {
        return Class::Better;
    }
    if perf.ret != rtrace.ret {
        return Class::Format;
    }
    if better { Class::Better } else { Class::Format }
}

/// How one program's traces compare.
#[derive(Debug, Default)]
pub struct Report {
    /// rtrace's lines, and strace's calls.
    pub rtrace_calls: usize,
    pub strace_calls: usize,
    /// rtrace lines identical to the perf line of the same call.
    pub identical: usize,
    /// Lines paired with perf's.
    pub paired: usize,
    pub classes: HashMap<Class, usize>,
    /// A few examples per class: (perf, rtrace).
    pub examples: Vec<(Class, String, String)>,
    /// What makes FORMAT and MISSING lines differ: `syscall.argument` (or `.ret`), counted,
    /// with the first pair seen.
    pub causes: HashMap<String, (usize, String, String)>,
}

impl Report {
    /// Lines in perf's shape: identical, or differing only where perf shows a pointer
    /// and rtrace the value behind it.
    pub fn shaped(&self) -> usize {
        self.identical + self.classes.get(&Class::Better).copied().unwrap_or(0)
    }
}

/// The first argument (or the return) on which two calls differ.
fn cause(perf: &Call, rtrace: &Call) -> String {
    let rt = rtrace.args_by_name();
    let pf = perf.args_by_name();
    let arg = perf
        .args
        .iter()
        .find(|(k, v)| rt.get(k.as_str()) != Some(&v.as_str()) && *v != "0x?")
        .map(|(k, _)| k.as_str())
        .or_else(|| {
            rtrace
                .args
                .iter()
                .find(|(k, _)| !pf.contains_key(k.as_str()))
                .map(|(k, _)| k.as_str())
        });
    match arg {
        Some(a) => format!("{}.{a}", perf.name),
        None => format!("{}.ret", perf.name),
    }
}

/// Calls in a `strace -f` output: every call line, an unfinished one once.
pub fn strace_calls(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            // `PID call` (strace -o) or `[pid PID] call` (strace to stderr).
            let l = match l.strip_prefix("[pid") {
                Some(rest) => rest.split_once("] ").map_or(rest, |(_, r)| r),
                None => l.split_once(' ').map_or(*l, |(pid, rest)| {
                    if pid.bytes().all(|c| c.is_ascii_digit()) {
                        rest.trim_start()
                    } else {
                        l
                    }
                }),
            };
            !(l.starts_with("+++") || l.starts_with("---") || l.starts_with("<...") || l.is_empty())
        })
        .count()
}

/// Pairs two runs' calls of one syscall: calls that agree (equal, or differing only where
/// perf shows a pointer) by a longest common subsequence, then, between two such
/// anchors, the rest in order (as a diff would line them up). Also gives the indexes of
/// the calls of each side left without a partner.
fn align<'a>(
    p: &[&'a Call],
    q: &[&'a Call],
) -> (Vec<(&'a Call, &'a Call)>, Vec<usize>, Vec<usize>) {
    let agree = |a: &&Call, b: &&Call| *a == *b || classify(a, b) == Class::Better;
    let (pairs, left_p, left_q) = align_with(p, q, agree);
    let pairs = pairs.into_iter().map(|(i, j)| (p[i], q[j])).collect();
    (pairs, left_p, left_q)
}

/// [`align`] for any two kinds of call and any test of agreement: the pairs as indexes
/// into `p` and `q`, and the indexes of each side left without a partner.
pub(super) fn align_with<A, B>(
    p: &[A],
    q: &[B],
    agree: impl Fn(&A, &B) -> bool,
) -> (Vec<(usize, usize)>, Vec<usize>, Vec<usize>) {
    let (n, m) = (p.len(), q.len());
    // lcs[i][j]: the longest common subsequence of p[i..] and q[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if agree(&p[i], &q[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = Vec::new();
    let (mut left_p, mut left_q) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    let (mut gap_p, mut gap_q) = (Vec::new(), Vec::new());
    let mut flush = |gp: &mut Vec<usize>, gq: &mut Vec<usize>, out: &mut Vec<_>| {
        let both = gp.len().min(gq.len());
        out.extend(gp.iter().copied().zip(gq.iter().copied()));
        left_p.extend(gp.drain(..).skip(both));
        left_q.extend(gq.drain(..).skip(both));
    };
    while i < n && j < m {
        if agree(&p[i], &q[j]) {
            flush(&mut gap_p, &mut gap_q, &mut out);
            out.push((i, j));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            gap_p.push(i);
            i += 1;
        } else {
            gap_q.push(j);
            j += 1;
        }
    }
    gap_p.extend(i..n);
    gap_q.extend(j..m);
    flush(&mut gap_p, &mut gap_q, &mut out);
    (out, left_p, left_q)
}

/// The thread (tid) of a perf-trace-shaped line.
pub(super) fn thread_of(line: &str) -> &str {
    line.find("): ")
        .and_then(|at| line[at + 3..].split_once(' '))
        .and_then(|(task, _)| task.rsplit_once('/'))
        .map_or("", |(_, tid)| tid)
}

/// Which thread of one run is which of the other's (tids differ between runs, and the
/// order in which a script's processes start does too): the pairs of threads with the
/// most calls in common (compared as their normalized text), taken greedily. Gives, for
/// each thread of `b` that has a partner, its partner in `a`.
fn match_threads<'t>(
    a: &'t [(String, Call)],
    b: &'t [(String, Call)],
) -> HashMap<&'t str, &'t str> {
    let shown = |calls: &'t [(String, Call)]| -> Vec<(&'t str, String)> {
        calls.iter().map(|(t, c)| (t.as_str(), show(c))).collect()
    };
    match_threads_by(&shown(a), &shown(b))
}

/// [`match_threads`] for calls given as (thread, a text that says which call it is).
pub(super) fn match_threads_by<'t>(
    a: &[(&'t str, String)],
    b: &[(&'t str, String)],
) -> HashMap<&'t str, &'t str> {
    type Calls<'c> = HashMap<&'c str, usize>;
    fn profile<'s, 't>(calls: &'s [(&'t str, String)]) -> HashMap<&'t str, Calls<'s>> {
        let mut by: HashMap<&'t str, Calls<'s>> = HashMap::new();
        for (tid, c) in calls {
            *by.entry(*tid).or_default().entry(c.as_str()).or_default() += 1;
        }
        by
    }
    let (pa, pb) = (profile(a), profile(b));
    let mut scored: Vec<(usize, &str, &str)> = Vec::new();
    for (ta, ca) in &pa {
        for (tb, cb) in &pb {
            let common: usize = ca
                .iter()
                .filter_map(|(k, n)| cb.get(k).map(|m| (*n).min(*m)))
                .sum();
            if common > 0 {
                scored.push((common, ta, tb));
            }
        }
    }
    // Most in common first; ties in a fixed order.
    scored.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| (x.1, x.2).cmp(&(y.1, y.2))));
    let mut taken_a = std::collections::HashSet::new();
    let mut partner = HashMap::new();
    for (_, ta, tb) in scored {
        if !partner.contains_key(tb) && taken_a.insert(ta) {
            partner.insert(tb, ta);
        }
    }
    partner
}

/// Calls whose return is a pid of this run.
const PID_RETURNS: &[&str] = &[
    "getpid",
    "getppid",
    "gettid",
    "getpgid",
    "getpgrp",
    "getsid",
    "setsid",
    "set_tid_address",
];

type Groups<'c> = HashMap<(&'c str, &'c str), Vec<&'c Call>>;

fn by_thread_and_name<'c>(calls: impl Iterator<Item = (&'c str, &'c Call)>) -> Groups<'c> {
    let mut by: Groups<'c> = HashMap::new();
    for (thread, c) in calls {
        by.entry((thread, c.name.as_str())).or_default().push(c);
    }
    by
}

/// Pairs the calls of each name in both traces (see [`align`]) and compares them.
pub fn compare(perf_text: &str, rtrace_text: &str, strace_text: &str) -> Report {
    let fix = |mut c: Call| {
        if PID_RETURNS.contains(&c.name.as_str()) && c.ret.parse::<i64>().is_ok() {
            c.ret = "N".into();
        }
        c
    };
    // Each call with its thread.
    let calls = |text: &str| -> Vec<(String, Call)> {
        text.lines()
            .filter_map(|l| Some((thread_of(l).to_string(), fix(parse(l)?))))
            .collect()
    };
    let perf = calls(perf_text);
    let mut rt = calls(rtrace_text);
    // The command's own execve: perf's trace starts inside it and shows only its
    // `[continued]` half, which is not compared.
    if perf_text
        .lines()
        .next()
        .is_some_and(|l| l.contains("[continued]: execve()"))
        && rt.first().is_some_and(|(_, c)| c.name == "execve")
    {
        rt.remove(0);
    }
    // Calls are paired within one thread first (a thread of rtrace's run with its
    // partner in perf's, the same syscall), then what is left, by syscall alone: two
    // processes of a shell script that make the same calls are not lined up with each
    // other while each has its own.
    let partner = match_threads(&perf, &rt);
    let perf_by = by_thread_and_name(perf.iter().map(|(t, c)| (t.as_str(), c)));
    let rt_by = by_thread_and_name(rt.iter().map(|(t, c)| {
        // A thread without a partner is keyed so that it meets none.
        (partner.get(t.as_str()).copied().unwrap_or("?"), c)
    }));
    let mut r = Report {
        rtrace_calls: rtrace_text.lines().filter_map(parse).count(),
        strace_calls: strace_calls(strace_text),
        ..Report::default()
    };
    let mut pairs = Vec::new();
    let mut left_perf: HashMap<&str, Vec<&Call>> = HashMap::new();
    let mut left_rt: HashMap<&str, Vec<&Call>> = HashMap::new();
    let mut keys: Vec<&(&str, &str)> = rt_by.keys().chain(perf_by.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let empty = Vec::new();
        let p = perf_by.get(key).unwrap_or(&empty);
        let q = rt_by.get(key).unwrap_or(&empty);
        let (paired, lp, lq) = align(p, q);
        pairs.extend(paired);
        left_perf
            .entry(key.1)
            .or_default()
            .extend(lp.into_iter().map(|i| p[i]));
        left_rt
            .entry(key.1)
            .or_default()
            .extend(lq.into_iter().map(|i| q[i]));
    }
    let mut names: Vec<&&str> = left_rt.keys().collect();
    names.sort();
    for name in names {
        if let (Some(p), Some(q)) = (left_perf.get(*name), left_rt.get(*name)) {
            pairs.extend(align(p, q).0);
        }
    }
    {
        for (a, b) in pairs {
            r.paired += 1;
            if a == b {
                r.identical += 1;
                continue;
            }
            let class = classify(a, b);
            *r.classes.entry(class).or_default() += 1;
            if r.examples.iter().filter(|(k, ..)| *k == class).count() < 3 {
                r.examples.push((class, show(a), show(b)));
            }
            if matches!(class, Class::Format | Class::Missing) {
                let e = r
                    .causes
                    .entry(cause(a, b))
                    .or_insert_with(|| (0, show(a), show(b)));
                e.0 += 1;
            }
        }
    }
    r
}

fn show(c: &Call) -> String {
    let args: Vec<String> = c
        .args
        .iter()
        .map(|(k, v)| {
            if k.is_empty() {
                v.clone()
            } else {
                format!("{k}: {v}")
            }
        })
        .collect();
    format!("{}({}) = {}", c.name, args.join(", "), c.ret)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERF: &str = "     0.338 ( 0.014 ms): cat/15834 openat(dfd: CWD, filename: 0x455a71e0, flags: RDONLY|CLOEXEC) = 3
     1.113 ( 0.011 ms): cat/15834 fcntl(fd: 3</etc/hostname>, cmd: GETFL)                               = RDONLY|LARGEFILE
     1.484 ( 0.148 ms): cat/15834 clone(clone_flags: CHILD_CLEARTID|CHILD_SETTID|0x11, child_tidptr: 0x7f63453b8a10) = 15835 (cat)
     1.500 ( 0.010 ms): cat/15834 read(fd: 3</etc/hostname>, buf: 0x7ffd1902a3b8, count: 832)           = 832
     1.600 ( 0.010 ms): cat/15834 close(fd: 3</etc/hostname>)                                           = 0
     3.244 (         ): cat/15834 exit_group()                                                          = ?
";
    const RTRACE: &str = "     0.100 ( 0.004 ms): cat/99 openat(dfd: CWD, filename: \"/etc/hostname\", flags: RDONLY|CLOEXEC) = 3
     0.777 ( 0.001 ms): cat/99 fcntl(fd: 3</etc/hostname>, cmd: GETFL)                               = RDONLY|LARGEFILE
     0.829 ( 0.085 ms): cat/99 clone(clone_flags: CHILD_CLEARTID|CHILD_SETTID|SIGCHLD, child_tidptr: 0x7f69d1896a10) = 100 (cat)
     1.500 ( 0.010 ms): cat/99 read(fd: 3</etc/hostname>, buf: \"vm\\n\", count: 832)                = 3
     1.600 ( 0.010 ms): cat/99 close(fd: 3</etc/hostname>)                                           = 0
     2.453 (         ): cat/99 exit_group()                                                          = ?
";

    #[test]
    fn lines_parse_without_what_changes_between_runs() {
        let c = parse(PERF.lines().nth(2).unwrap()).unwrap();
        assert_eq!(c.name, "clone");
        assert_eq!(c.args[1], ("child_tidptr".into(), "0x?".into()));
        assert_eq!(c.ret, "N (cat)");
        let c = parse("  1.0 ( 0.1 ms): a/1 write(fd: 1, buf: \"a, b\", count: 4) = 4").unwrap();
        assert_eq!(c.args.len(), 3);
        assert_eq!(normalize("fd: 5<socket:[12345]>"), "fd: 5<socket:[N]>");
        assert_eq!(normalize("fd: 3</proc/4242/stat>"), "fd: 3</proc/N/stat>");
        assert_eq!(
            normalize("= -1 ENOENT (No such file)"),
            "= -1 ENOENT (No such file)"
        );
        assert!(parse("LOST 3 events!").is_none());
        // Unfinished, with perf's padding before the dots.
        let c = parse("  1.9 (         ): sh/7 vfork()                                        ...")
            .unwrap();
        assert_eq!((c.name.as_str(), c.ret.as_str()), ("vfork", "..."));
        assert!(parse("     1.0 ( 0.1 ms): a/1  ... [continued]: wait4()) = 5").is_none());
    }

    #[test]
    fn pairs_are_identical_better_wrong_or_format() {
        let r = compare(PERF, RTRACE, "");
        assert_eq!((r.rtrace_calls, r.paired, r.identical), (6, 6, 3));
        assert_eq!(r.classes.get(&Class::Better), Some(&1), "{r:?}");
        assert_eq!(r.classes.get(&Class::Format), Some(&1), "{r:?}");
        assert_eq!(
            r.classes.get(&Class::Wrong),
            Some(&1),
            "read's 832 against 3: {r:?}"
        );
        assert_eq!(r.shaped(), 4);
        assert_eq!(
            r.causes.get("clone.clone_flags").map(|c| c.0),
            Some(1),
            "{r:?}"
        );
    }

    #[test]
    fn calls_pair_within_their_own_thread_first() {
        // Two processes' reads, in the other order in the second run.
        let perf = "  1.0 ( 0.1 ms): sh/10 read(fd: 3, count: 9) = 5
  2.0 ( 0.1 ms): cat/11 read(fd: 3, count: 9) = 7
  3.0 ( 0.1 ms): cat/11 close(fd: 3) = 0
";
        let rtrace = "  1.0 ( 0.1 ms): cat/21 read(fd: 3, count: 9) = 7
  2.0 ( 0.1 ms): sh/20 read(fd: 3, count: 9) = 5
  3.0 ( 0.1 ms): sh/20 close(fd: 3) = 0
";
        let r = compare(perf, rtrace, "");
        // The reads pair by thread; the closes, made by different processes, pair
        // by syscall alone once nothing else is left.
        assert_eq!((r.paired, r.identical), (3, 3), "{r:?}");
        assert_eq!(r.classes.get(&Class::Wrong), None, "{r:?}");
    }

    #[test]
    fn wrong_is_the_same_call_with_another_result() {
        let call = |l: &str| parse(&format!("  1.0 ( 0.1 ms): a/1 {l}")).unwrap();
        // Other arguments: another call, not a wrong result.
        assert_eq!(
            classify(
                &call(
                    "newfstatat(dfd: CWD, filename: 0x123456, statbuf: 0x654321) = -1 ENOENT (No such file)"
                ),
                &call("newfstatat(dfd: 3</etc/x>, filename: \"\", flag: EMPTY_PATH) = 0"),
            ),
            Class::Format
        );
        // perf never showed rt_sigreturn's return; rtrace shows it and the mask.
        assert_eq!(
            classify(
                &call("rt_sigreturn()                         ..."),
                &call("rt_sigreturn(mask: [USR2])                  = 0"),
            ),
            Class::Better
        );
        // A path perf shows as a pointer: perhaps another of the program's calls.
        assert_eq!(
            classify(
                &call(
                    "readlink(path: 0x123456, buf: 0x654321, bufsiz: 1023) = -1 ENOENT (No such file)"
                ),
                &call(
                    "readlink(path: \"/tmp/a.o\", buf: 0x654321, bufsiz: 1023) = -1 EINVAL (Invalid argument)"
                ),
            ),
            Class::Unsure
        );
        // The same read of a /proc file, shorter this run: the data changed.
        assert_eq!(
            classify(
                &call("read(fd: 3</proc/42/stat>, buf: 0x123456, count: 1024) = 319"),
                &call("read(fd: 3</proc/43/stat>, buf: \"43 (ps)\"..., count: 1024) = 311"),
            ),
            Class::Varies
        );
        // What a socket held when it was read is the peer's timing.
        assert_eq!(
            classify(
                &call("recvfrom(fd: 5<socket:[N]>, ubuf: 0x123456, size: 4096) = 1087"),
                &call("recvfrom(fd: 5<socket:[N]>, ubuf: \"HTTP\", size: 4096) = 187"),
            ),
            Class::Varies
        );
        // How many threads a futex woke is their timing.
        assert_eq!(
            classify(
                &call("futex(uaddr: 0x123456, op: WAKE|PRIVATE_FLAG, val: 1) = 0"),
                &call("futex(uaddr: 0x654321, op: WAKE|PRIVATE_FLAG, val: 1) = 1"),
            ),
            Class::Varies
        );
        assert_eq!(
            classify(
                &call("read(fd: 3</etc/hostname>, buf: 0x123456, count: 64) = 3"),
                &call("read(fd: 3</etc/hostname>, buf: \"vm\", count: 64) = 2"),
            ),
            Class::Wrong
        );
    }

    #[test]
    fn strace_lines_count_calls_once() {
        let s = "123 openat(AT_FDCWD, \"/x\", O_RDONLY) = 3\n\
                 123 wait4(-1,  <unfinished ...>\n\
                 124 exit_group(0)                     = ?\n\
                 124 +++ exited with 0 +++\n\
                 123 <... wait4 resumed>[{WIFEXITED(s)}], 0, NULL) = 124\n\
                 123 --- SIGCHLD {si_signo=SIGCHLD} ---\n";
        assert_eq!(strace_calls(s), 3);
        let s = "openat(AT_FDCWD, \"/x\", O_RDONLY) = 3\n\
                 [pid   124] exit_group(0) = ?\n\
                 [pid   124] +++ exited with 0 +++\n\
                 wait4(-1, [{WIFEXITED(s)}], 0, NULL) = 124\n";
        assert_eq!(strace_calls(s), 3);
    }
}
