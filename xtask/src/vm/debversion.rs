//! Debian version ordering (dpkg's algorithm), used to pick the newest kernel package
//! apt offers.

use std::cmp::Ordering;

/// Orders two Debian versions (`[epoch:]upstream[-revision]`) the way dpkg does.
pub fn compare(a: &str, b: &str) -> Ordering {
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| compare_part(ua, ub))
        .then_with(|| compare_part(ra, rb))
}

fn split(v: &str) -> (u64, &str, &str) {
    let (epoch, rest) = match v.split_once(':') {
        Some((e, r)) => (e.parse().unwrap_or(0), r),
        None => (0, v),
    };
    match rest.rsplit_once('-') {
        Some((u, r)) => (epoch, u, r),
        None => (epoch, rest, ""),
    }
}

/// Weight of a non-digit character: `~` before everything (even the end), then the
/// end, letters, and every other character after the letters.
fn weight(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(b'~') => -1,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => i32::from(c),
        Some(c) => i32::from(c) + 256,
    }
}

fn compare_part(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    let digit = |s: &[u8], k: usize| s.get(k).is_some_and(u8::is_ascii_digit);
    while i < a.len() || j < b.len() {
        // The non-digit run, character by character.
        while (i < a.len() && !digit(a, i)) || (j < b.len() && !digit(b, j)) {
            let (wa, wb) = (weight(a.get(i).copied()), weight(b.get(j).copied()));
            if wa != wb {
                return wa.cmp(&wb);
            }
            i += 1;
            j += 1;
        }
        // The digit run, as a number.
        while a.get(i) == Some(&b'0') {
            i += 1;
        }
        while b.get(j) == Some(&b'0') {
            j += 1;
        }
        let mut first_diff = Ordering::Equal;
        while digit(a, i) && digit(b, j) {
            if first_diff == Ordering::Equal {
                first_diff = a[i].cmp(&b[j]);
            }
            i += 1;
            j += 1;
        }
        if digit(a, i) {
            return Ordering::Greater;
        }
        if digit(b, j) {
            return Ordering::Less;
        }
        if first_diff != Ordering::Equal {
            return first_diff;
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn orders_like_dpkg() {
        let cases = [
            ("6.1.192-3", "6.1.176-1", Greater),
            ("6.12.117-1~deb12u1", "6.12.95-1~bpo12+1", Greater),
            ("1.0~rc1-1", "1.0-1", Less),
            ("1.0-1", "1.0-1", Equal),
            ("1:0.9", "2.0", Greater),
            ("1.0a", "1.0", Greater),
            ("1.0+b1", "1.0a", Greater),
            ("1.01", "1.1", Equal),
            ("6.12.90-1~deb12u1", "6.12.90-1~deb12u1.1", Less),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare(a, b), want, "{a} vs {b}");
            assert_eq!(compare(b, a), want.reverse(), "{b} vs {a}");
        }
    }
}
