//! The lines the guest's /init and the test harness print on the console, and what the
//! host reads from them.

/// Printed once the host's root and the kernel file systems are mounted; the kernel
/// release follows.
pub const BOOTED: &str = "rtrace-vm: booted, kernel ";
/// Printed when a test ran past its time limit and was killed; its name follows.
pub const TIMED_OUT: &str = "rtrace-vm: killed at its time limit: ";
/// Printed after the last test; the number of tests that failed follows.
pub const DONE: &str = "rtrace-vm: tests done, failed: ";
/// Printed when /init cannot set the guest up; what failed follows.
pub const SETUP_FAILED: &str = "rtrace-vm: setup failed: ";

#[derive(Debug, PartialEq)]
pub enum Event {
    Booted(String),
    TimedOut(String),
    Done(u32),
    SetupFailed(String),
    /// A libtest result line: the test's name and whether it passed.
    Test(String, bool),
    /// The kernel reports an oops, a BUG, a warning or a panic.
    KernelTrouble(String),
}

/// What the kernel prints when something went wrong in it.
const KERNEL_TROUBLE: [&str; 4] = ["Oops:", "BUG:", "WARNING:", "Kernel panic - not syncing"];

/// What a console line tells, if anything.
pub fn parse(line: &str) -> Option<Event> {
    let line = line.trim_end();
    // A kernel message without its newline may come first on the line.
    let after = |marker: &str| line.find(marker).map(|i| &line[i + marker.len()..]);
    if let Some(rest) = after(BOOTED) {
        return Some(Event::Booted(rest.trim().to_string()));
    }
    if let Some(rest) = after(TIMED_OUT) {
        return Some(Event::TimedOut(rest.trim().to_string()));
    }
    if let Some(rest) = after(DONE) {
        return rest.trim().parse().ok().map(Event::Done);
    }
    if let Some(rest) = after(SETUP_FAILED) {
        return Some(Event::SetupFailed(rest.to_string()));
    }
    if let Some(m) = KERNEL_TROUBLE.iter().find_map(|m| line.find(m)) {
        return Some(Event::KernelTrouble(line[m..].to_string()));
    }
    // libtest: `test <name> ... ok` / `... FAILED` (`ignored` counts as neither).
    let rest = line.strip_prefix("test ")?;
    let (name, result) = rest.split_once(" ... ")?;
    match result.trim() {
        "ok" => Some(Event::Test(name.to_string(), true)),
        "FAILED" => Some(Event::Test(name.to_string(), false)),
        _ => None,
    }
}

/// Follows libtest's lines across the console: a test that writes to stderr past
/// libtest's capture (the i386 test's reason for skipping on arm64) puts its words
/// between `test <name> ... ` and the `ok` or `FAILED`, which then come on a line of
/// their own.
#[derive(Default)]
pub struct Reader {
    pending: Option<String>,
}

impl Reader {
    pub fn read(&mut self, line: &str) -> Option<Event> {
        let event = parse(line);
        if event.is_some() {
            self.pending = None;
            return event;
        }
        let trimmed = line.trim();
        if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|rest| rest.split_once(" ..."))
            .map(|(name, _)| name)
            .filter(|name| !name.contains(' '))
        {
            self.pending = Some(name.to_string());
            return None;
        }
        let result = match trimmed {
            "ok" => true,
            "FAILED" => false,
            _ => return None,
        };
        self.pending.take().map(|name| Event::Test(name, result))
    }
}

/// `line` without terminal control sequences (the firmware clears the screen) and
/// carriage returns.
pub fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // ESC [ ... final letter, or ESC and one character.
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
            }
            '\r' => {}
            c if c.is_control() && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_after_the_tests_own_words_counts() {
        let mut r = Reader::default();
        assert_eq!(
            r.read("test decode::m32 ... SKIPPED m32: no arm32 compiler"),
            None
        );
        assert_eq!(r.read("ok"), Some(Event::Test("decode::m32".into(), true)));
        assert_eq!(r.read("ok"), None);
        assert_eq!(
            r.read("test a::b ... ok"),
            Some(Event::Test("a::b".into(), true))
        );
        r.read("test a::c ... ");
        assert_eq!(r.read("FAILED"), Some(Event::Test("a::c".into(), false)));
    }

    #[test]
    fn reads_the_markers() {
        assert_eq!(
            parse("rtrace-vm: booted, kernel 6.1.0-57-amd64"),
            Some(Event::Booted("6.1.0-57-amd64".into()))
        );
        assert_eq!(
            parse("rtrace-vm: tests done, failed: 2\r"),
            Some(Event::Done(2))
        );
        assert_eq!(
            parse("rtrace-vm: killed at its time limit: held::x"),
            Some(Event::TimedOut("held::x".into()))
        );
        assert_eq!(
            parse("rtrace-vm: setup failed: insmod 9p.ko"),
            Some(Event::SetupFailed("insmod 9p.ko".into()))
        );
        assert_eq!(
            parse("Probing EDD (edd=off to disable)... okrtrace-vm: booted, kernel 6.12.1"),
            Some(Event::Booted("6.12.1".into()))
        );
        assert_eq!(parse("[    2.25] reboot: Power down"), None);
        assert_eq!(
            parse("test a ... [   34.88] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"),
            Some(Event::KernelTrouble(
                "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI".into()
            ))
        );
    }

    #[test]
    fn reads_test_results() {
        assert_eq!(
            parse("test lifecycle::a_full_pid_map_is_reported ... ok"),
            Some(Event::Test(
                "lifecycle::a_full_pid_map_is_reported".into(),
                true
            ))
        );
        assert_eq!(
            parse("test targets::x ... FAILED"),
            Some(Event::Test("targets::x".into(), false))
        );
        assert_eq!(parse("test targets::x ... ignored"), None);
        assert_eq!(parse("test result: ok. 3 passed; 0 failed"), None);
    }

    #[test]
    fn strips_control_sequences() {
        assert_eq!(clean("\u{1b}c\u{1b}[?7l\u{1b}[2JSeaBIOS\r"), "SeaBIOS");
        assert_eq!(clean("plain\ttext"), "plain\ttext");
    }
}
