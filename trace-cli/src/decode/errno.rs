//! errno names (the kernel's, from the `syscalls` crate's table, which includes the
//! kernel-internal ones such as ERESTARTSYS) and their text (the C library's, as perf
//! and strace print it).

use std::ffi::CStr;

/// Largest value the kernel returns as `-errno`.
pub const MAX_ERRNO: i64 = 4095;

pub struct ErrnoTable {
    text: Vec<Option<Box<str>>>,
}

impl Default for ErrnoTable {
    fn default() -> Self {
        Self::new()
    }
}

impl ErrnoTable {
    pub fn new() -> Self {
        Self { text: Vec::new() }
    }

    pub fn name(errno: i32) -> Option<&'static str> {
        syscalls::Errno::new(errno)
            .name_and_description()
            .map(|(name, _)| name)
    }

    /// strerror(errno), looked up once per distinct errno.
    pub fn text(&mut self, errno: i32) -> &str {
        let i = errno.clamp(0, MAX_ERRNO as i32) as usize;
        if self.text.len() <= i {
            self.text.resize(i + 1, None);
        }
        self.text[i].get_or_insert_with(|| strerror(errno).into_boxed_str())
    }
}

fn strerror(errno: i32) -> String {
    let mut buf = [0 as libc::c_char; 128];
    // SAFETY: the buffer and its length are valid; the XSI variant (which the libc
    // crate binds as strerror_r) always writes a NUL-terminated string on success.
    let rc = unsafe { libc::strerror_r(errno, buf.as_mut_ptr(), buf.len()) };
    if rc != 0 {
        return format!("Unknown error {errno}");
    }
    // SAFETY: NUL-terminated by strerror_r.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_texts() {
        let mut t = ErrnoTable::new();
        assert_eq!(ErrnoTable::name(2), Some("ENOENT"));
        assert_eq!(t.text(2), "No such file or directory");
        assert_eq!(ErrnoTable::name(11), Some("EAGAIN"));
        assert_eq!(t.text(11), "Resource temporarily unavailable");
        assert_eq!(ErrnoTable::name(512), Some("ERESTARTSYS"));
        assert_eq!(ErrnoTable::name(4000), None);
    }
}
