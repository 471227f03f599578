//! perf's settings from its config files, where perf looks: the file named by
//! `PERF_CONFIG` alone when it is set (perf's own tests set it), else `/etc/perfconfig`
//! and then `~/.perfconfig`, the later winning. Read: the `[trace]` keys show_timestamp,
//! show_duration, show_arg_names, show_zeros, show_prefix, args_alignment,
//! no_inherit, and `[color] ui`. Parsing is pure; unknown keys are ignored, as perf
//! ignores what it does not know.

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceSettings {
    pub show_timestamp: Option<bool>,
    pub show_duration: Option<bool>,
    pub show_arg_names: Option<bool>,
    pub show_zeros: Option<bool>,
    pub show_prefix: Option<bool>,
    pub args_alignment: Option<usize>,
    pub no_inherit: Option<bool>,
    /// `color.ui`: always (true), never (false), or auto (None).
    pub color: Option<bool>,
    /// Values read but not used, each with why (`args_alignment = 2000000000`).
    pub ignored: Vec<String>,
}

/// The widest `args_alignment` taken: perf pads every line to it, and a value made to
/// be huge would make each line gigabytes long.
pub const MAX_ALIGNMENT: usize = 512;

impl TraceSettings {
    /// These settings, with what `later` sets taking their place.
    fn then(self, later: TraceSettings) -> TraceSettings {
        TraceSettings {
            show_timestamp: later.show_timestamp.or(self.show_timestamp),
            show_duration: later.show_duration.or(self.show_duration),
            show_arg_names: later.show_arg_names.or(self.show_arg_names),
            show_zeros: later.show_zeros.or(self.show_zeros),
            show_prefix: later.show_prefix.or(self.show_prefix),
            args_alignment: later.args_alignment.or(self.args_alignment),
            no_inherit: later.no_inherit.or(self.no_inherit),
            color: later.color.or(self.color),
            ignored: [self.ignored, later.ignored].concat(),
        }
    }
}

fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// The `[trace]` section of a git-config-style file, or the number of the first line
/// that is neither a section, a `key = value`, a comment nor blank (perf refuses the
/// file there).
pub fn parse(text: &str) -> Result<TraceSettings, usize> {
    let mut s = TraceSettings::default();
    let mut section = String::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split(['#', ';']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_ascii_lowercase();
            continue;
        }
        // `key = value`, or a bare `key` meaning true (as git config has it).
        let bare_key = line
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let Some((key, value)) = line.split_once('=').or(bare_key.then_some((line, "true"))) else {
            return Err(n + 1);
        };
        let (key, value) = (key.trim(), value.trim());
        match (section.as_str(), key) {
            ("color", "ui") => {
                s.color = match value.to_ascii_lowercase().as_str() {
                    "always" => Some(true),
                    "never" => Some(false),
                    "auto" => None,
                    v => boolean(v).filter(|&on| !on),
                }
            }
            ("trace", key) => match key {
                "show_timestamp" => s.show_timestamp = boolean(value),
                "show_duration" => s.show_duration = boolean(value),
                "show_arg_names" => s.show_arg_names = boolean(value),
                "show_zeros" => s.show_zeros = boolean(value),
                "show_prefix" => s.show_prefix = boolean(value),
                "args_alignment" => match value.parse() {
                    Ok(a) if a > MAX_ALIGNMENT => s.ignored.push(format!(
                        "args_alignment = {value} (line {}): more than {MAX_ALIGNMENT} columns",
                        n + 1
                    )),
                    a => s.args_alignment = a.ok(),
                },
                "no_inherit" => s.no_inherit = boolean(value),
                _ => {}
            },
            _ => {}
        }
    }
    Ok(s)
}

/// Config files are read up to this size: past it (`PERF_CONFIG=/dev/zero`) the file is
/// bad where the bound cut it.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Opens a config file without ever waiting: a FIFO with no writer (or a terminal)
/// would block rtrace before it starts, so only regular files and devices that answer
/// at once (`/dev/null`, as perf's tests use) are read.
fn open_config(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_fifo() || kind.is_socket() {
        return Err(std::io::Error::other(
            "it is a FIFO or a socket, not a file",
        ));
    }
    Ok(file)
}

/// Reads and parses a config file: its settings, or perf's warning and none.
pub fn from_file(path: &std::path::Path) -> Result<TraceSettings, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_config(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
    let bad = |n: usize| format!("bad config file line {n} in {}", path.display());
    let cut = bytes.len() as u64 > MAX_CONFIG_BYTES;
    bytes.truncate(MAX_CONFIG_BYTES as usize);
    let text = String::from_utf8_lossy(&bytes);
    let settings = parse(&text).map_err(bad)?;
    if cut {
        return Err(bad(text.lines().count().max(1)));
    }
    Ok(settings)
}

/// The settings perf would use, and a warning per file it cannot use: `$PERF_CONFIG`
/// alone when it is set, else `/etc/perfconfig` then `~/.perfconfig`; a file that is
/// not there is no warning.
pub fn from_env(env: &crate::env::Env) -> (TraceSettings, Vec<String>) {
    let files: Vec<std::path::PathBuf> = match &env.perf_config {
        Some(p) => vec![p.into()],
        None => {
            let mut v = vec![std::path::PathBuf::from("/etc/perfconfig")];
            v.extend(
                env.home
                    .as_ref()
                    .map(|h| std::path::Path::new(h).join(".perfconfig")),
            );
            v.retain(|p| p.exists());
            v
        }
    };
    let mut settings = TraceSettings::default();
    let mut warnings = Vec::new();
    for f in files {
        match from_file(&f) {
            Ok(mut s) => {
                warnings.extend(
                    s.ignored
                        .drain(..)
                        .map(|why| format!("ignoring {why} in {}", f.display())),
                );
                settings = settings.then(s);
            }
            Err(w) => warnings.push(w),
        }
    }
    (settings, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_trace_section() {
        let text = "[core]\n\tshow_timestamp = true\n[trace]\n\tshow_timestamp = false\n\
                    \tshow_duration = no\n\targs_alignment = 0\n\tshow_arg_names=false\n\
                    \tshow_prefix = true ; comment\n\tunknown = 3\n[other]\nshow_zeros = true\n";
        let s = parse(text).unwrap();
        assert_eq!(s.show_timestamp, Some(false));
        assert_eq!(s.show_duration, Some(false));
        assert_eq!(s.args_alignment, Some(0));
        assert_eq!(s.show_arg_names, Some(false));
        assert_eq!(s.show_prefix, Some(true));
        assert_eq!(s.show_zeros, None);
        assert_eq!(s.no_inherit, None);
        assert_eq!(parse(""), Ok(TraceSettings::default()));
    }

    #[test]
    fn color_ui_and_later_files_win() {
        let always = parse("[color]\n\tui = always\n").unwrap();
        assert_eq!(always.color, Some(true));
        assert_eq!(parse("[color]\nui = never\n").unwrap().color, Some(false));
        assert_eq!(parse("[color]\nui = auto\n").unwrap().color, None);
        assert_eq!(parse("[trace]\nui = never\n").unwrap().color, None);
        let system = parse("[trace]\nshow_zeros = true\nargs_alignment = 40\n").unwrap();
        let user = parse("[trace]\nargs_alignment = 50\n").unwrap();
        let both = system.then(user);
        assert_eq!(
            (both.show_zeros, both.args_alignment),
            (Some(true), Some(50))
        );
    }

    #[test]
    fn bad_and_endless_files_are_refused_with_perfs_words() {
        assert_eq!(parse("[trace]\nshow_zeros = true\nwhat is this\n"), Err(3));
        assert_eq!(
            parse("[trace]\n\tshow_zeros\n").unwrap().show_zeros,
            Some(true)
        );
        let e = from_file(std::path::Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e, "bad config file line 1 in /dev/zero");
        assert_eq!(
            from_file(std::path::Path::new("/dev/null")),
            Ok(TraceSettings::default())
        );
        let e = from_file(std::path::Path::new("/nonexistent/perfconfig")).unwrap_err();
        assert!(
            e.starts_with("cannot read the config file /nonexistent/perfconfig: "),
            "{e}"
        );
    }

    #[test]
    fn a_huge_alignment_is_ignored_with_a_word() {
        let s = parse("[trace]\nshow_zeros = true\nargs_alignment = 2000000000\n").unwrap();
        assert_eq!((s.show_zeros, s.args_alignment), (Some(true), None));
        assert_eq!(
            s.ignored,
            ["args_alignment = 2000000000 (line 3): more than 512 columns"]
        );
        assert_eq!(
            parse("[trace]\nargs_alignment = 512\n")
                .unwrap()
                .args_alignment,
            Some(512)
        );
    }

    #[test]
    fn a_fifo_with_no_writer_is_refused_at_once() {
        let dir = std::env::temp_dir().join(format!("rtrace-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("perfconfig");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = from_file(&fifo).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(e.ends_with("it is a FIFO or a socket, not a file"), "{e}");
    }
}
