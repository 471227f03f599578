//! How bytes that came from the traced program are printed: command names, fd paths,
//! strings, buffers, argv, socket paths. The traced program chooses these bytes, so
//! none of them may reach the terminal as a control sequence, and the text must say
//! exactly which bytes they were.
//!
//! One rule everywhere, C's (as strace writes it): `\\`, `\n`, `\t`, `\r`, `\v`, `\f`
//! by name; every other control byte, every byte that is not UTF-8, and the UTF-8 of
//! characters that reorder or hide text (C1 controls, bidirectional overrides,
//! zero-width marks) in octal, three digits when a digit follows so that `\1` then `0`
//! never reads as `\10`. Printable text, UTF-8 included, is kept. Inside quotes the
//! quote is escaped too.

use std::fmt::Write as _;

/// Where the text goes: inside `"…"` (the quote is escaped), or bare (a command name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Quoted,
    Bare,
}

/// Characters that a terminal or a reader would not show as themselves.
fn hides_text(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200b}'..='\u{200f}'   // zero-width spaces and joiners, LRM/RLM
            | '\u{2028}'..='\u{202e}' // separators, bidirectional embeddings and overrides
            | '\u{2060}'..='\u{2069}' // word joiner, invisible operators, isolates
            | '\u{feff}')
}

/// Appends `bytes` escaped for `ctx`.
pub fn escape_into(out: &mut String, bytes: &[u8], ctx: Context) {
    // Octal, with three digits when a digit comes next.
    let octal = |out: &mut String, b: u8, next: Option<&u8>| {
        let _ = if next.is_some_and(u8::is_ascii_digit) {
            write!(out, "\\{b:03o}")
        } else {
            write!(out, "\\{b:o}")
        };
    };
    let mut at = 0;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            at += c.len_utf8();
            match c {
                '\\' => out.push_str("\\\\"),
                '"' if ctx == Context::Quoted => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\x0b' => out.push_str("\\v"),
                '\x0c' => out.push_str("\\f"),
                c if hides_text(c) => {
                    let mut buf = [0u8; 4];
                    let enc = c.encode_utf8(&mut buf).as_bytes();
                    for (k, &b) in enc.iter().enumerate() {
                        octal(out, b, enc.get(k + 1).or(bytes.get(at)));
                    }
                }
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            at += 1;
            octal(out, b, bytes.get(at));
        }
    }
}

/// `bytes` in double quotes, escaped.
pub fn quoted(out: &mut String, bytes: &[u8]) {
    out.push('"');
    escape_into(out, bytes, Context::Quoted);
    out.push('"');
}

/// `bytes` bare (a command name, an fd's path), escaped.
pub fn bare(out: &mut String, bytes: &[u8]) {
    escape_into(out, bytes, Context::Bare);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(b: &[u8]) -> String {
        let mut s = String::new();
        quoted(&mut s, b);
        s
    }

    fn b(bytes: &[u8]) -> String {
        let mut s = String::new();
        bare(&mut s, bytes);
        s
    }

    #[test]
    fn printable_text_is_kept() {
        assert_eq!(q(b"/etc/hostname"), r#""/etc/hostname""#);
        assert_eq!(q("café ü €".as_bytes()), "\"café ü €\"");
        assert_eq!(b(b"a b"), "a b");
    }

    #[test]
    fn quotes_and_backslashes() {
        assert_eq!(q(b"a\"b\\c\td\n"), r#""a\"b\\c\td\n""#);
        assert_eq!(b(b"a\"b\\c"), r#"a"b\\c"#);
    }

    #[test]
    fn terminal_escapes_never_go_out_raw() {
        assert_eq!(b(b"\x1b[2Jx"), r"\33[2Jx");
        assert_eq!(q(b"\x07\x7f\0"), r#""\7\177\0""#);
        // C1 CSI, as UTF-8, and a right-to-left override.
        assert_eq!(b("\u{9b}2J".as_bytes()), r"\302\2332J");
        assert_eq!(b("a\u{202e}b".as_bytes()), r"a\342\200\256b");
    }

    #[test]
    fn a_digit_after_an_escape_is_never_part_of_it() {
        assert_eq!(q(b"\x01\x30"), r#""\0010""#);
        assert_eq!(q(b"\n3"), r#""\n3""#);
        assert_eq!(q(b"\x1b9"), r#""\0339""#);
        assert_eq!(q(b"\xff9"), r#""\3779""#);
        assert_eq!(q(b"\x1bx"), r#""\33x""#);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_kept_exactly() {
        assert_eq!(q(b"a\xffb"), r#""a\377b""#);
        assert_eq!(q(b"\xc3"), r#""\303""#);
        assert_eq!(q(b"\xe2\x82"), r#""\342\202""#);
    }
}
