//! Numbers as the lines spell them, written without `core::fmt` (the reader prints
//! several per line, millions of lines a second): decimal through `itoa`, `0x…` hex
//! and octal from small digit tables, and milliseconds with a fixed count of decimals
//! in integer arithmetic. Each writer prints exactly what the `format!` spelling named
//! in its comment prints.

use crate::decode::escape;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends ASCII bytes (digits the writers below built, text the escaping kept) in
/// one copy, checked as [`escape::utf8`] checks text (ASCII first).
pub(crate) fn push_ascii(out: &mut String, bytes: &[u8]) {
    match escape::utf8(bytes) {
        Some(text) => out.push_str(text),
        None => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Spaces to pad with, copied a slice at a time.
const SPACES: &str = "                                                                ";

/// `n` spaces (alignment padding).
pub fn spaces(out: &mut String, mut n: usize) {
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Decimal, as `{}` prints any integer.
pub fn dec(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// `{:#x}`: `0x` and lower-case hex digits, no leading zeros (`0x0` for zero).
pub fn hex(out: &mut String, n: u64) {
    let mut buf = [0u8; 18];
    let mut at = buf.len();
    let mut n = n;
    loop {
        at -= 1;
        buf[at] = HEX[(n & 0xf) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    buf[at - 2..at].copy_from_slice(b"0x");
    push_ascii(out, &buf[at - 2..]);
}

/// A byte in octal after a backslash: `\{:o}`, or `\{:03o}` when `three` (so that a
/// digit written next cannot be read as part of it).
pub fn octal_escape(out: &mut String, b: u8, three: bool) {
    let mut text = [
        b'\\',
        b'0' + (b >> 6),
        b'0' + ((b >> 3) & 7),
        b'0' + (b & 7),
    ];
    let skip = match b {
        _ if three => 0,
        0..=7 => 2,
        8..=63 => 1,
        _ => 0,
    };
    // The backslash goes just before the first digit kept: one copy.
    text[skip] = b'\\';
    push_ascii(out, &text[skip..]);
}

/// Room for the longest number [`fixed`] writes: `-`, a u128's 39 digits, `.`, six
/// decimals; and for the padding of the widths the lines use.
const FIXED_MAX: usize = 1 + 39 + 1 + 6;

/// The two digits of each number below 100.
const PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// Writes `n`'s decimal digits (at least one) ending at `buf[at]`, two at a time;
/// where they start.
fn digits_before(buf: &mut [u8], mut at: usize, mut n: u64) -> usize {
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[n as usize * 2..n as usize * 2 + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + n as u8;
    }
    at
}

/// Exactly `decimals` (at most 6) digits of `frac` (below 10^decimals), zeros in
/// front, ending at `buf[end]`: two at a time, no loop over the value.
fn decimals_before(buf: &mut [u8], end: usize, mut frac: u32, decimals: usize) -> usize {
    let mut at = end;
    for _ in 0..decimals / 2 {
        let pair = (frac % 100) as usize * 2;
        frac /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if decimals % 2 == 1 {
        at -= 1;
        buf[at] = b'0' + (frac % 10) as u8;
    }
    at
}

/// `whole.frac` with `decimals` digits of `frac` (zero-padded), right-aligned in
/// `width` with `-` before the digits when `neg`: `{:>width$}` of `{sign}{whole}.{frac:0decimals$}`.
/// Built right to left in a stack buffer, padding included, and appended in one copy.
/// Inlined, so that each caller's count of decimals is a constant.
#[inline(always)]
fn fixed(out: &mut String, neg: bool, whole: u128, frac: u32, decimals: usize, width: usize) {
    let mut buf = [b' '; FIXED_MAX];
    let end = buf.len();
    let mut at = decimals_before(&mut buf, end, frac, decimals.min(6));
    at -= 1;
    buf[at] = b'.';
    at = match u64::try_from(whole) {
        Ok(w) => digits_before(&mut buf, at, w),
        Err(_) => {
            let mut ints = itoa::Buffer::new();
            let digits = ints.format(whole).as_bytes();
            buf[at - digits.len()..at].copy_from_slice(digits);
            at - digits.len()
        }
    };
    if neg {
        at -= 1;
        buf[at] = b'-';
    }
    let len = end - at;
    if width > len && width <= end {
        // The padding is already in the buffer: spaces.
        at = end - width;
    } else {
        spaces(out, width.saturating_sub(len));
    }
    push_ascii(out, &buf[at..]);
}

/// Nanoseconds as milliseconds with three decimals, right-aligned in `width`, in the
/// shape of C's `%*.3f`, without going through floating point: rounded to the nearest
/// microsecond, an exact half up (printf, rounding the double, can go either way on
/// one: 1000500 ns is `1.000` there, `1.001` here, as rtrace printed it before), and no
/// `-` on a value that rounds to zero.
pub fn ms3(out: &mut String, ns: i128, width: usize) {
    let abs = ns.unsigned_abs();
    // The u64 arithmetic covers every clock value; u128 only for what cannot be one.
    match u64::try_from(abs) {
        Ok(n) => {
            let us = n / 1000 + u64::from(n % 1000 >= 500);
            let neg = ns < 0 && us > 0;
            fixed(
                out,
                neg,
                u128::from(us / 1000),
                (us % 1000) as u32,
                3,
                width,
            );
        }
        Err(_) => {
            let us = (abs + 500) / 1000;
            fixed(out, ns < 0, us / 1000, (us % 1000) as u32, 3, width);
        }
    }
}

/// Nanoseconds as milliseconds with all six decimals (exact): `{sign}{ms}.{frac:06}`,
/// `-` on any negative value.
pub fn ms6(out: &mut String, ns: i128) {
    let abs = ns.unsigned_abs();
    match u64::try_from(abs) {
        Ok(n) => fixed(
            out,
            ns < 0,
            u128::from(n / 1_000_000),
            (n % 1_000_000) as u32,
            6,
            0,
        ),
        Err(_) => fixed(out, ns < 0, abs / 1_000_000, (abs % 1_000_000) as u32, 6, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(f: impl FnOnce(&mut String)) -> String {
        let mut s = String::from("<");
        f(&mut s);
        s
    }

    const U64S: [u64; 14] = [
        0,
        1,
        7,
        8,
        9,
        10,
        15,
        16,
        999,
        1000,
        0x7ffd_1234_5000,
        u32::MAX as u64,
        u64::MAX - 1,
        u64::MAX,
    ];

    #[test]
    fn decimal_and_hex_match_format() {
        for n in U64S {
            assert_eq!(with(|o| dec(o, n)), format!("<{n}"));
            assert_eq!(with(|o| hex(o, n)), format!("<{n:#x}"));
            assert_eq!(with(|o| dec(o, n as i64)), format!("<{}", n as i64));
            assert_eq!(
                with(|o| dec(o, n as u32 as i32)),
                format!("<{}", n as u32 as i32)
            );
        }
        for n in [i64::MIN, i64::MIN + 1, -4096, -1, 0, i64::MAX] {
            assert_eq!(with(|o| dec(o, n)), format!("<{n}"));
        }
        assert_eq!(with(|o| dec(o, u128::MAX)), format!("<{}", u128::MAX));
    }

    #[test]
    fn octal_matches_format() {
        for b in 0..=255u8 {
            assert_eq!(with(|o| octal_escape(o, b, false)), format!("<\\{b:o}"));
            assert_eq!(with(|o| octal_escape(o, b, true)), format!("<\\{b:03o}"));
        }
    }

    /// The old spelling: `{:>w$}` of the microseconds rounded half up, no `-0.000`.
    fn old_ms3(ns: i128, width: usize) -> String {
        let us = (ns.unsigned_abs() + 500) / 1000;
        let sign = if ns < 0 && us > 0 { "-" } else { "" };
        let text = format!("{sign}{}.{:03}", us / 1000, us % 1000);
        format!("<{text:>width$}")
    }

    fn old_ms6(ns: i128) -> String {
        let sign = if ns < 0 { "-" } else { "" };
        let n = ns.unsigned_abs();
        format!("<{sign}{}.{:06}", n / 1_000_000, n % 1_000_000)
    }

    #[test]
    fn milliseconds_match_the_old_spelling() {
        let mut values: Vec<i128> = vec![
            0,
            1,
            499,
            500,
            501,
            999,
            1000,
            999_499,
            999_500, // 0.9995 ms: rounds up to 1.000
            999_999,
            1_000_000,
            1_234_567,
            9_999_999_500,
            123_456_789_012_345,
            i128::from(u64::MAX) - 499,
            i128::from(u64::MAX) - 500,
            i128::from(u64::MAX),
            i128::from(u64::MAX) + 1,
            i128::MAX,
            i128::MIN + 1,
            i128::MIN,
        ];
        let negative: Vec<i128> = values.iter().filter(|v| **v > 0).map(|v| -v).collect();
        values.extend(negative);
        for ns in values {
            for width in [0, 6, 10] {
                assert_eq!(
                    with(|o| ms3(o, ns, width)),
                    old_ms3(ns, width),
                    "{ns} {width}"
                );
            }
            assert_eq!(with(|o| ms6(o, ns)), old_ms6(ns), "{ns}");
        }
    }
}
