//! A small JSON writer for `--json`'s call lines: objects and arrays appended straight
//! to the output buffer (no tree, no allocation per value), and the one rule for bytes
//! that came from the traced program: a JSON string when they are UTF-8; otherwise the
//! string with U+FFFD for each bad sequence and, beside it, every byte in hex, so that
//! nothing is lost (docs/json.md).

use crate::decode::escape;

/// Whether JSON writes byte `b` of a string as itself: all but the quote, the
/// backslash and the control characters below space.
fn json_plain(b: u8) -> bool {
    b >= b' ' && b != b'"' && b != b'\\'
}

/// Whether every byte of `bytes` is [`json_plain`], eight at a time: a word has a
/// byte below space, or equal to the quote or the backslash, exactly when the
/// classic "has a byte less than n" and "has a zero byte" tests say so.
fn all_plain(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGH;
    let zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let w = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        if below(w, b' ') | zero(quote) | zero(backslash) != 0 {
            return false;
        }
    }
    words.remainder().iter().all(|&b| json_plain(b))
}

/// A JSON string (serde_json's escaping). One with nothing to escape (keys, names, most
/// text) is copied here whole; only one with something to escape goes to serde_json.
#[inline]
pub fn string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if all_plain(bytes) {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    // Writing to memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// A number (an integer of any width, in decimal as serde_json writes it).
pub fn number<N: itoa::Integer>(out: &mut Vec<u8>, n: N) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Lower-case hex, two digits a byte.
pub fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0xf)]);
    }
    out.push(b'"');
}

/// An object being written: `{` on creation, `}` on [`Obj::end`].
pub struct Obj<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Obj<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// Writes `"k":` for one of rtrace's own keys and gives the buffer for its value.
    /// They are written as they are: each is a plain name that needs no escaping,
    /// which debug builds (the tests) assert; a key that comes from outside (an
    /// argument's name in a format, which a record file carries) goes through
    /// [`Obj::key_escaped`].
    #[inline]
    pub fn key(&mut self, k: &'static str) -> &mut Vec<u8> {
        debug_assert!(all_plain(k.as_bytes()), "{k:?}");
        // `,"k":` built in a stack buffer and appended in one copy (rtrace's keys are
        // short; a longer one is appended a piece at a time).
        const ROOM: usize = 32;
        let sep = usize::from(!self.first);
        self.first = false;
        if k.len() + 4 > ROOM {
            self.out.extend_from_slice(&b",\""[1 - sep..]);
            self.out.extend_from_slice(k.as_bytes());
            self.out.extend_from_slice(b"\":");
            return self.out;
        }
        let mut buf = [b','; ROOM];
        buf[sep] = b'"';
        let end = sep + 1 + k.len();
        buf[sep + 1..end].copy_from_slice(k.as_bytes());
        buf[end] = b'"';
        buf[end + 1] = b':';
        self.out.extend_from_slice(&buf[..end + 2]);
        self.out
    }

    /// Writes `"k":`, `k` escaped as JSON needs, and gives the buffer for its value.
    pub fn key_escaped(&mut self, k: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        string(self.out, k);
        self.out.push(b':');
        self.out
    }

    #[inline]
    pub fn num<N: itoa::Integer>(&mut self, k: &'static str, n: N) {
        number(self.key(k), n);
    }

    #[inline]
    pub fn str(&mut self, k: &'static str, s: &str) {
        string(self.key(k), s);
    }

    #[inline]
    pub fn bool(&mut self, k: &'static str, b: bool) {
        self.key(k)
            .extend_from_slice(if b { b"true" } else { b"false" });
    }

    #[inline]
    pub fn null(&mut self, k: &'static str) {
        self.key(k).extend_from_slice(b"null");
    }

    /// `"k":` and bytes from the program as [`text_item`] writes them.
    #[inline]
    pub fn text(&mut self, k: &'static str, bytes: &[u8]) {
        text_item(self.key(k), bytes);
    }

    /// `"k":` and what `value` writes, or nothing when it declines (returns false).
    pub fn try_field(&mut self, k: &'static str, value: impl FnOnce(&mut Vec<u8>) -> bool) -> bool {
        let (mark, first) = (self.out.len(), self.first);
        if value(self.key(k)) {
            return true;
        }
        self.out.truncate(mark);
        self.first = first;
        false
    }

    pub fn end(self) {
        self.out.push(b'}');
    }
}

/// An array being written: `[` on creation, `]` on [`Arr::end`].
pub struct Arr<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Arr<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        out.push(b'[');
        Arr { out, first: true }
    }

    /// Gives the buffer for the next item.
    pub fn item(&mut self) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out
    }

    pub fn end(self) {
        self.out.push(b']');
    }
}

/// Bytes from the program as one value: a string when they are UTF-8, else
/// `{"str": lossy, "hex": every byte}`.
pub fn text_item(out: &mut Vec<u8>, bytes: &[u8]) {
    match escape::utf8(bytes) {
        Some(s) => string(out, s),
        None => {
            let mut o = Obj::new(out);
            text_fields(&mut o, bytes);
            o.end();
        }
    }
}

/// Bytes from the program as fields of `o`: `"str"`, and `"hex"` (every byte) when
/// they are not UTF-8.
pub fn text_fields(o: &mut Obj<'_>, bytes: &[u8]) {
    match escape::utf8(bytes) {
        Some(s) => o.str("str", s),
        None => {
            o.str("str", &String::from_utf8_lossy(bytes));
            hex(o.key("hex"), bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn text_that_is_not_utf8_keeps_its_bytes_in_hex() {
        assert_eq!(written(|o| text_item(o, b"a\"b\n")), r#""a\"b\n""#);
        assert_eq!(
            written(|o| text_item(o, b"a\xffb")),
            r#"{"str":"a�b","hex":"61ff62"}"#
        );
        let out = written(|o| {
            let mut obj = Obj::new(o);
            obj.num("raw", -1i64);
            text_fields(&mut obj, "é".as_bytes());
            obj.bool("truncated", true);
            obj.end();
        });
        assert_eq!(out, r#"{"raw":-1,"str":"é","truncated":true}"#);
    }

    /// serde_json's spelling of every string, short or long, plain or not.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let long = "x".repeat(40);
        for s in [
            "",
            "ts",
            "a\"b",
            "back\\slash",
            "\0",
            "\u{1f}",
            "\u{7f}\u{9b}é€",
            "tab\tnew\nline",
            long.as_str(),
            format!("{long}y").as_str(),
            format!("{long}\n").as_str(),
            format!("\"{long}").as_str(),
        ] {
            let mut v = b"[".to_vec();
            string(&mut v, s);
            assert_eq!(
                v,
                [b"[".as_slice(), &serde_json::to_vec(s).unwrap()].concat(),
                "{s:?}"
            );
        }
    }

    /// The word-at-a-time test agrees with the byte test on every byte, at every
    /// place in a word and in the tail.
    #[test]
    fn the_word_test_finds_every_byte_that_needs_escaping() {
        for b in 0..=255u8 {
            for len in [1usize, 7, 8, 9, 16, 17] {
                for at in 0..len {
                    let mut v = vec![b'a'; len];
                    v[at] = b;
                    assert_eq!(all_plain(&v), json_plain(b), "byte {b:#x} at {at} of {len}");
                }
            }
        }
        assert!(all_plain(b""));
    }

    /// Keys short enough for the stack buffer and longer ones, first and after
    /// another, read back as written.
    #[test]
    fn keys_of_every_length_are_written_whole() {
        const LONG: &str = "a_key_far_longer_than_any_rtrace_writes_itself";
        let out = written(|o| {
            let mut obj = Obj::new(o);
            obj.num(LONG, 1u8);
            obj.num("ts", 2u8);
            obj.str(&LONG[..28], "x");
            obj.null(&LONG[..29]);
            obj.end();
        });
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 4, "{out}");
        assert_eq!((v[LONG].as_u64(), v["ts"].as_u64()), (Some(1), Some(2)));
        assert_eq!(
            (&v[&LONG[..28]], &v[&LONG[..29]]),
            (&"x".into(), &serde_json::Value::Null)
        );
    }

    #[test]
    fn nested_values_are_separated() {
        let out = written(|o| {
            let mut obj = Obj::new(o);
            let mut a = Arr::new(obj.key("items"));
            number(a.item(), 1u8);
            string(a.item(), "x");
            a.end();
            obj.null("n");
            obj.end();
        });
        assert_eq!(out, r#"{"items":[1,"x"],"n":null}"#);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["items"][1], "x");
    }
}
