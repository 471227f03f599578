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

use crate::decode::numbers;

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

/// Whether printable ASCII byte `b` goes out as itself in `ctx`.
fn plain_ascii(b: u8, ctx: Context) -> bool {
    matches!(b, b' '..=b'~') && b != b'\\' && !(b == b'"' && ctx == Context::Quoted)
}

/// C's name for a character that has one (`\n`), and the quote inside quotes.
fn named(c: char, ctx: Context) -> Option<&'static str> {
    Some(match c {
        '\\' => "\\\\",
        '"' if ctx == Context::Quoted => "\\\"",
        '\n' => "\\n",
        '\t' => "\\t",
        '\r' => "\\r",
        '\x0b' => "\\v",
        '\x0c' => "\\f",
        _ => return None,
    })
}

/// Appends `bytes` escaped for `ctx`. Text that needs no escape is copied a run at a
/// time (most strings are plain ASCII: one scan, one copy).
pub fn escape_into(out: &mut String, bytes: &[u8], ctx: Context) {
    out.reserve(bytes.len());
    let plain = bytes
        .iter()
        .position(|&b| !plain_ascii(b, ctx))
        .unwrap_or(bytes.len());
    if plain > 0 {
        numbers::push_ascii(out, &bytes[..plain]);
    }
    if plain < bytes.len() {
        escape_rest(out, &bytes[plain..], ctx);
    }
}

/// `bytes` as text when they are UTF-8. Most are ASCII, which a word-at-a-time scan
/// says more cheaply than `str::from_utf8`'s validation does for a few bytes.
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII bytes are UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).ok()
}

/// Octal, with three digits when a digit comes next.
fn octal(out: &mut String, b: u8, next: Option<&u8>) {
    numbers::octal_escape(out, b, next.is_some_and(u8::is_ascii_digit));
}

/// The escaping itself. ASCII a byte at a time (a binary buffer's zeros and control
/// bytes need no UTF-8 decoding); from the first byte that is not ASCII, character by
/// character, runs of kept text copied whole.
fn escape_rest(out: &mut String, bytes: &[u8], ctx: Context) {
    // The start of the plain run not yet written.
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !b.is_ascii() {
            numbers::push_ascii(out, &bytes[run..i]);
            return escape_text(out, &bytes[i..], ctx);
        }
        if plain_ascii(b, ctx) {
            continue;
        }
        if run < i {
            numbers::push_ascii(out, &bytes[run..i]);
        }
        run = i + 1;
        match named(char::from(b), ctx) {
            Some(n) => out.push_str(n),
            None => octal(out, b, bytes.get(i + 1)),
        }
    }
    if run < bytes.len() {
        numbers::push_ascii(out, &bytes[run..]);
    }
}

/// Escapes text that may hold UTF-8, character by character.
fn escape_text(out: &mut String, bytes: &[u8], ctx: Context) {
    // Where the current chunk starts in `bytes`.
    let mut at = 0;
    for chunk in bytes.utf8_chunks() {
        let text = chunk.valid();
        // The start of the text not yet written.
        let mut run = 0;
        for (i, c) in text.char_indices() {
            let name = named(c, ctx);
            if name.is_none() && !hides_text(c) {
                continue;
            }
            out.push_str(&text[run..i]);
            run = i + c.len_utf8();
            match name {
                Some(n) => out.push_str(n),
                None => {
                    let mut buf = [0u8; 4];
                    let enc = c.encode_utf8(&mut buf).as_bytes();
                    for (k, &b) in enc.iter().enumerate() {
                        octal(out, b, enc.get(k + 1).or(bytes.get(at + run)));
                    }
                }
            }
        }
        out.push_str(&text[run..]);
        at += text.len();
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

/// The copying by runs writes what escaping one character at a time wrote.
#[cfg(test)]
mod same_as_one_at_a_time {
    use super::*;

    /// The escaping before runs were copied whole, kept to compare with.
    fn one_at_a_time(out: &mut String, bytes: &[u8], ctx: Context) {
        let octal = |out: &mut String, b: u8, next: Option<&u8>| {
            out.push_str(&if next.is_some_and(u8::is_ascii_digit) {
                format!("\\{b:03o}")
            } else {
                format!("\\{b:o}")
            });
        };
        let mut at = 0;
        for chunk in bytes.utf8_chunks() {
            for c in chunk.valid().chars() {
                at += c.len_utf8();
                match named(c, ctx) {
                    Some(n) => out.push_str(n),
                    None if hides_text(c) => {
                        let mut buf = [0u8; 4];
                        let enc = c.encode_utf8(&mut buf).as_bytes();
                        for (k, &b) in enc.iter().enumerate() {
                            octal(out, b, enc.get(k + 1).or(bytes.get(at)));
                        }
                    }
                    None => out.push(c),
                }
            }
            for &b in chunk.invalid() {
                at += 1;
                octal(out, b, bytes.get(at));
            }
        }
    }

    #[test]
    fn mixed_bytes_escape_the_same() {
        // Pieces that meet at every kind of boundary: plain text, digits after
        // escapes, named escapes, quotes, UTF-8 kept and hidden, bytes that are not UTF-8.
        let pieces: [&[u8]; 14] = [
            b"abc",
            b"7",
            b"\"",
            b"\\",
            b"\n",
            b"\x01",
            b"\x7f",
            b"\xff",
            b"\xc3",
            "é".as_bytes(),
            "\u{202e}".as_bytes(),
            "\u{9b}".as_bytes(),
            b" ",
            b"\0",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as usize
        };
        for _ in 0..4000 {
            let mut bytes = Vec::new();
            for _ in 0..next() % 7 {
                bytes.extend_from_slice(pieces[next() % pieces.len()]);
            }
            for ctx in [Context::Quoted, Context::Bare] {
                let (mut new, mut old) = (String::new(), String::new());
                escape_into(&mut new, &bytes, ctx);
                one_at_a_time(&mut old, &bytes, ctx);
                assert_eq!(new, old, "{bytes:?}");
            }
        }
    }
}
