//! What strace names that rtrace does not: rtrace's calls paired with those of a
//! `strace -f -y -yy -o FILE` run of the same program, argument by argument (strace's
//! arguments by position, rtrace's by the names of the call's tracefs format). Pure text
//! in, counts out.
//!
//! Two counts come of it, per `syscall.argument`:
//! - a value strace writes as a name (`O_RDONLY`, `SOL_SOCKET`, `S_IFDIR|S_ISVTX|0777`)
//!   where rtrace writes a bare number: a value left undecoded;
//! - an fd strace writes with what it is (`3</etc/passwd>`, `5<pipe:[1234]>`) where
//!   rtrace writes the number alone. mmap's fd is left out: perf shows none there either.
//!
//! An argument rtrace hides (a zero, as perf hides it) is counted apart, as the choice
//! it is. Calls are paired as [`compare`] says; where a pair is two different calls of
//! one syscall, their values are still both decoded or both not, so the counts per
//! argument hold, while an fd's count can be off by such a pair.

use std::collections::{BTreeMap, HashMap};

use super::compare::{
    Call, align_with, match_threads_by, normalize, outside_strings, split_args, thread_of,
};

/// One call of a `strace -f -o` trace: `PID  name(args) = ret`, a call that strace
/// showed unfinished and resumed joined into one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StraceCall {
    pub tid: String,
    pub name: String,
    pub args: Vec<String>,
    pub ret: String,
}

/// The byte index of the `)` closing the `(` at `open`, skipping quoted strings and
/// nested brackets.
fn closing(s: &str, open: usize) -> Option<usize> {
    let mut at = None;
    outside_strings(s.as_bytes(), open, |i, c, depth| {
        if c == b')' && depth == 0 {
            at = Some(i);
        }
        at.is_some()
    });
    at
}

/// `name(args) = ret` as a call; `None` for what is not one.
fn parse_call(tid: &str, text: &str) -> Option<StraceCall> {
    let open = text.find('(')?;
    let name = &text[..open];
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        return None;
    }
    let close = closing(text, open)?;
    let ret = text[close + 1..].trim_start();
    let ret = ret.strip_prefix("= ").unwrap_or("?").trim();
    Some(StraceCall {
        tid: tid.to_string(),
        name: name.to_string(),
        args: split_args(&text[open + 1..close])
            .into_iter()
            .map(str::to_string)
            .collect(),
        ret: ret.to_string(),
    })
}

/// The calls of a `strace -f -o FILE` trace (each line `PID  …`), in order; signals,
/// exits and lines of another shape are left out.
pub fn parse(text: &str) -> Vec<StraceCall> {
    const UNFINISHED: &str = " <unfinished ...>";
    let mut pending: HashMap<&str, String> = HashMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((tid, rest)) = line.split_once(' ') else {
            continue;
        };
        if tid.is_empty() || !tid.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let rest = rest.trim_start();
        if let Some(head) = rest.strip_suffix(UNFINISHED) {
            pending.insert(tid, head.to_string());
            continue;
        }
        let joined;
        let text = match rest.strip_prefix("<... ") {
            Some(resumed) => {
                let Some((_, tail)) = resumed.split_once(" resumed>") else {
                    continue;
                };
                let Some(head) = pending.remove(tid) else {
                    continue;
                };
                joined = format!("{head}{tail}");
                joined.as_str()
            }
            None => rest,
        };
        out.extend(parse_call(tid, text));
    }
    out
}

/// Whether strace wrote this value as a name: it starts with a constant's name
/// (`O_RDONLY|O_CLOEXEC`, `SOL_SOCKET`, `[SIGCHLD]`, `S_IFREG|0644`), `NULL` aside.
pub fn is_named(v: &str) -> bool {
    let v = v.trim_start_matches(['~', '[']);
    let ident: String = v
        .chars()
        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
        .collect();
    ident.len() >= 2 && ident.starts_with(|c: char| c.is_ascii_uppercase()) && ident != "NULL"
}

/// Whether rtrace wrote this value as a bare number (after the fidelity tool's
/// normalizing: a long hex number is `0x?`).
pub fn is_bare_number(v: &str) -> bool {
    let digits = v.strip_prefix('-').unwrap_or(v);
    match digits.strip_prefix("0x") {
        Some(hex) => hex == "?" || (!hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit())),
        None => !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()),
    }
}

/// Whether strace wrote this value as an fd with what it is: `3</etc/passwd>`.
pub fn is_named_fd(v: &str) -> bool {
    let digits = v.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && v[digits..].starts_with('<') && v.ends_with('>')
}

/// Calls whose fd argument neither perf nor rtrace names.
const FD_LEFT_OUT: &[&str] = &["mmap", "mmap2"];

/// One `syscall.argument`'s count, with the first pair of values seen (strace's, rtrace's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    pub count: usize,
    pub strace: String,
    pub rtrace: String,
}

/// What one program's (or the whole corpus's) pairs say.
#[derive(Clone, Debug, Default)]
pub struct Naming {
    /// Calls paired with strace's.
    pub paired: usize,
    /// Arguments strace names that rtrace shows (its hidden zeros aside).
    pub named: usize,
    /// Of those, shown by rtrace as a bare number, by `syscall.argument`.
    pub numbers: BTreeMap<String, Seen>,
    /// Arguments strace names that rtrace hides (zeros, as perf hides them).
    pub hidden: BTreeMap<String, Seen>,
    /// fds strace names that rtrace shows (mmap's aside).
    pub fds: usize,
    /// Of those, shown by rtrace without what they are, by `syscall.argument`.
    pub fds_bare: BTreeMap<String, Seen>,
}

fn count(into: &mut BTreeMap<String, Seen>, key: String, strace: &str, rtrace: &str) {
    let seen = into.entry(key).or_insert_with(|| Seen {
        count: 0,
        strace: strace.to_string(),
        rtrace: rtrace.to_string(),
    });
    seen.count += 1;
}

fn total(m: &BTreeMap<String, Seen>) -> usize {
    m.values().map(|s| s.count).sum()
}

impl Naming {
    pub fn numbers(&self) -> usize {
        total(&self.numbers)
    }
    pub fn hidden(&self) -> usize {
        total(&self.hidden)
    }
    pub fn fds_bare(&self) -> usize {
        total(&self.fds_bare)
    }

    /// Adds another program's counts.
    pub fn add(&mut self, other: &Naming) {
        self.paired += other.paired;
        self.named += other.named;
        self.fds += other.fds;
        for (mine, theirs) in [
            (&mut self.numbers, &other.numbers),
            (&mut self.hidden, &other.hidden),
            (&mut self.fds_bare, &other.fds_bare),
        ] {
            for (k, s) in theirs {
                let e = mine.entry(k.clone()).or_insert_with(|| Seen {
                    count: 0,
                    ..s.clone()
                });
                e.count += s.count;
            }
        }
    }

    /// Compares one pair's arguments; `names` are the call's arguments in order.
    fn pair(&mut self, s: &StraceCall, r: &Call, names: &[String]) {
        self.paired += 1;
        let shown: HashMap<&str, &str> = r
            .args
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for (i, sv) in s.args.iter().enumerate() {
            let Some(name) = names.get(i) else { break };
            // strace's own `name=value` form (x86_64's clone): another order.
            if sv.split_once('=').is_some_and(|(k, _)| {
                !k.is_empty() && k.bytes().all(|c| c.is_ascii_lowercase() || c == b'_')
            }) {
                continue;
            }
            let key = format!("{}.{name}", s.name);
            let rv = shown.get(name.as_str()).copied();
            if is_named_fd(sv) && !FD_LEFT_OUT.contains(&s.name.as_str()) {
                match rv {
                    None => count(&mut self.hidden, key, sv, ""),
                    Some(rv) => {
                        self.fds += 1;
                        if !rv.contains('<') {
                            count(&mut self.fds_bare, key, sv, rv);
                        }
                    }
                }
            } else if is_named(sv) {
                match rv {
                    None => count(&mut self.hidden, key, sv, ""),
                    Some(rv) => {
                        self.named += 1;
                        if is_bare_number(rv) {
                            count(&mut self.numbers, key, sv, rv);
                        }
                    }
                }
            }
        }
    }
}

/// What says which call a call is, in either trace: its name and its whole strings
/// (paths, mostly; a string cut short is left out, as the two tracers cut at other
/// lengths), normalized as the perf comparison normalizes.
fn signature<'v>(name: &str, values: impl Iterator<Item = &'v str>) -> String {
    let mut sig = name.to_string();
    for v in values.filter(|v| v.len() >= 2 && v.starts_with('"') && v.ends_with('"')) {
        sig.push(' ');
        sig.push_str(&normalize(v));
    }
    sig
}

/// Pairs rtrace's lines with strace's calls and counts what strace names that rtrace
/// does not. `names` gives a syscall's argument names in order (its tracefs format);
/// calls without one are not compared.
///
/// Threads of the two runs are matched by the calls they have in common (as the perf
/// comparison matches them), then the calls of each syscall in a pair of threads by a
/// longest common subsequence of their signatures, the rest in order between those;
/// what is left, by syscall alone.
pub fn compare(
    rtrace_text: &str,
    strace: &[StraceCall],
    names: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Naming {
    let rt: Vec<(&str, Call)> = rtrace_text
        .lines()
        .filter_map(|l| Some((thread_of(l), super::compare::parse(l)?)))
        .collect();
    let rt_sigs: Vec<(&str, String)> = rt
        .iter()
        .map(|(t, c)| {
            (
                *t,
                signature(&c.name, c.args.iter().map(|(_, v)| v.as_str())),
            )
        })
        .collect();
    let st_sigs: Vec<(&str, String)> = strace
        .iter()
        .map(|c| {
            (
                c.tid.as_str(),
                signature(&c.name, c.args.iter().map(String::as_str)),
            )
        })
        .collect();
    let partner = match_threads_by(&st_sigs, &rt_sigs);
    // Indexes into rt / strace, grouped by (strace's thread, syscall).
    type Groups<'c> = BTreeMap<(&'c str, &'c str), Vec<usize>>;
    let mut rt_by: Groups = BTreeMap::new();
    for (i, (t, c)) in rt.iter().enumerate() {
        // A thread without a partner is keyed so that it meets none.
        let t = partner.get(t).copied().unwrap_or("?");
        rt_by.entry((t, c.name.as_str())).or_default().push(i);
    }
    let mut st_by: Groups = BTreeMap::new();
    for (i, c) in strace.iter().enumerate() {
        st_by
            .entry((c.tid.as_str(), c.name.as_str()))
            .or_default()
            .push(i);
    }
    let agree = |&s: &usize, &r: &usize| st_sigs[s].1 == rt_sigs[r].1;
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut left_rt: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut left_st: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (key, s) in &st_by {
        let r = rt_by.remove(key).unwrap_or_default();
        let (paired, ls, lr) = align_with(s, &r, agree);
        pairs.extend(paired.into_iter().map(|(i, j)| (s[i], r[j])));
        left_st
            .entry(key.1)
            .or_default()
            .extend(ls.into_iter().map(|i| s[i]));
        left_rt
            .entry(key.1)
            .or_default()
            .extend(lr.into_iter().map(|j| r[j]));
    }
    for ((_, name), r) in rt_by {
        left_rt.entry(name).or_default().extend(r);
    }
    for (name, s) in &left_st {
        if let Some(r) = left_rt.get(name) {
            let (paired, ..) = align_with(s, r, agree);
            pairs.extend(paired.into_iter().map(|(i, j)| (s[i], r[j])));
        }
    }
    let mut cache: HashMap<&str, Option<Vec<String>>> = HashMap::new();
    let mut out = Naming::default();
    for (s, r) in pairs {
        let s = &strace[s];
        if let Some(args) = cache
            .entry(s.name.as_str())
            .or_insert_with(|| names(&s.name))
        {
            out.pair(s, &rt[r].1, args);
        }
    }
    out
}

/// A syscall's argument names from its tracefs format (`field:… NAME;` lines after
/// `__syscall_nr`).
pub fn format_args(format: &str) -> Vec<String> {
    format
        .lines()
        .filter_map(|l| l.trim().strip_prefix("field:"))
        .filter_map(|f| f.split(';').next())
        .filter_map(|decl| decl.rsplit([' ', '*']).next())
        .filter(|n| !n.starts_with("common_") && *n != "__syscall_nr")
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRACE: &str = r#"100  openat(AT_FDCWD</tmp>, "/etc/hostname", O_RDONLY) = 3</etc/hostname>
100  fcntl(3</etc/hostname>, F_GETFL) = 0x8000 (flags O_RDONLY|O_LARGEFILE)
100  clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f9fd1d12a10) = 101
101  setsockopt(4<socket:[99]>, SOL_SOCKET, SO_REUSEADDR, [1], 4 <unfinished ...>
100  wait4(-1,  <unfinished ...>
101  <... setsockopt resumed>) = 0
101  +++ exited with 0 +++
100  <... wait4 resumed>[{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 101
100  --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---
100  mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 3</etc/hostname>, 0) = 0x7f0000000000
100  lseek(3</etc/hostname>, 0, SEEK_SET) = 0
"#;

    const RTRACE: &str = "     0.1 ( 0.001 ms): cat/7 openat(dfd: CWD, filename: \"/etc/hostname\") = 3
     0.2 ( 0.001 ms): cat/7 fcntl(fd: 3</etc/hostname>, cmd: GETFL) = RDONLY|LARGEFILE
     0.3 ( 0.010 ms): cat/7 clone(clone_flags: CHILD_CLEARTID|CHILD_SETTID|SIGCHLD, child_tidptr: 0x7f9fd1d12a10) = 8 (cat)
     0.4 ( 0.001 ms): cat/8 setsockopt(fd: 4, level: 1, optname: REUSEADDR, optval: 0x7ffd00001234, optlen: 4) = 0
     0.5 ( 0.020 ms): cat/7 wait4(upid: -1, stat_addr: 0x7ffd00004321) = 8
     0.6 ( 0.001 ms): cat/7 mmap(len: 4096, prot: READ, flags: PRIVATE, fd: 3) = 0x7f0000000000
     0.7 ( 0.001 ms): cat/7 lseek(fd: 3</etc/hostname>) = 0
";

    fn names(call: &str) -> Option<Vec<String>> {
        let v: &[&str] = match call {
            "openat" => &["dfd", "filename", "flags", "mode"],
            "fcntl" => &["fd", "cmd", "arg"],
            "clone" => &[
                "clone_flags",
                "newsp",
                "parent_tidptr",
                "child_tidptr",
                "tls",
            ],
            "setsockopt" => &["fd", "level", "optname", "optval", "optlen"],
            "wait4" => &["upid", "stat_addr", "options", "ru"],
            "mmap" => &["addr", "len", "prot", "flags", "fd", "off"],
            "lseek" => &["fd", "offset", "whence"],
            _ => return None,
        };
        Some(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn strace_lines_become_calls_with_unfinished_ones_joined() {
        let calls = parse(STRACE);
        let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "openat",
                "fcntl",
                "clone",
                "setsockopt",
                "wait4",
                "mmap",
                "lseek"
            ]
        );
        assert_eq!(
            calls[3].args,
            ["4<socket:[99]>", "SOL_SOCKET", "SO_REUSEADDR", "[1]", "4"]
        );
        assert_eq!((calls[3].tid.as_str(), calls[3].ret.as_str()), ("101", "0"));
        assert_eq!(calls[4].args.len(), 4, "{:?}", calls[4]);
        assert_eq!(calls[1].ret, "0x8000 (flags O_RDONLY|O_LARGEFILE)");
        assert_eq!(calls[0].ret, "3</etc/hostname>");
    }

    #[test]
    fn values_are_names_numbers_or_named_fds() {
        for v in [
            "O_RDONLY",
            "SOL_SOCKET",
            "[SIGCHLD]",
            "~[RTMIN RT_1]",
            "S_IFREG|0644",
            "AT_FDCWD</tmp>",
        ] {
            assert!(is_named(v), "{v}");
        }
        for v in [
            "NULL",
            "0",
            "\"O_RDONLY\"",
            "{st_mode=S_IFREG}",
            "[1]",
            "0x8000",
            "X",
        ] {
            assert!(!is_named(v), "{v}");
        }
        for v in ["1", "-1", "4294967295", "0x?", "0x11"] {
            assert!(is_bare_number(v), "{v}");
        }
        for v in ["RDONLY", "3</x>", "0x", "-", "\"1\""] {
            assert!(!is_bare_number(v), "{v}");
        }
        assert!(is_named_fd("3</etc/hostname>") && is_named_fd("12<pipe:[5]>"));
        assert!(!is_named_fd("3") && !is_named_fd("AT_FDCWD</tmp>"));
    }

    #[test]
    fn what_strace_names_and_rtrace_shows_as_a_number_is_counted_per_argument() {
        let n = compare(RTRACE, &parse(STRACE), &names);
        assert_eq!(n.paired, 7);
        // setsockopt's level is a number in rtrace; its optname is named.
        assert_eq!(n.numbers.keys().collect::<Vec<_>>(), ["setsockopt.level"]);
        assert_eq!(n.numbers["setsockopt.level"].strace, "SOL_SOCKET");
        // openat's O_RDONLY (0) and lseek's SEEK_SET (0) are hidden, as perf hides them.
        assert_eq!(
            n.hidden.keys().collect::<Vec<_>>(),
            ["lseek.whence", "openat.flags"]
        );
        // Named and shown: fcntl.cmd, setsockopt's two, mmap's prot and flags (openat's
        // AT_FDCWD is named too). clone's strace-named arguments are not compared.
        assert_eq!(n.named, 6, "{n:?}");
        // fds: fcntl's and lseek's have their path, setsockopt's has none; mmap's is
        // left out.
        assert_eq!((n.fds, n.fds_bare()), (3, 1));
        assert_eq!(n.fds_bare["setsockopt.fd"].rtrace, "4");
    }

    #[test]
    fn threads_pair_by_the_order_they_appear() {
        // The second thread's call, made first in strace's run, still pairs with the
        // second thread's in rtrace's.
        let strace = "5  getpid() = 5\n6  close(3</a>) = 0\n5  close(4</b>) = 0\n";
        let rtrace = "  1.0 ( 0.1 ms): a/7 getpid() = 7
  1.1 ( 0.1 ms): a/7 close(fd: 4</b>) = 0
  1.2 ( 0.1 ms): b/8 close(fd: 3) = 0
";
        let n = compare(rtrace, &parse(strace), &|c: &str| {
            Some(vec![if c == "close" { "fd" } else { "x" }.to_string()])
        });
        assert_eq!((n.paired, n.fds, n.fds_bare()), (3, 2, 1));
        assert_eq!(n.fds_bare["close.fd"].strace, "3</a>");
    }

    #[test]
    fn tracefs_formats_give_the_argument_names_in_order() {
        let format = "name: sys_enter_openat
ID: 640
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;
\tfield:int dfd;\toffset:16;\tsize:8;\tsigned:0;
\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;
\tfield:int flags;\toffset:32;\tsize:8;\tsigned:0;
\tfield:umode_t mode;\toffset:40;\tsize:8;\tsigned:0;
";
        assert_eq!(format_args(format), ["dfd", "filename", "flags", "mode"]);
        assert_eq!(
            format_args("\tfield:char *buf;\toffset:24;"),
            ["buf"],
            "a pointer's star against the name"
        );
    }
}
