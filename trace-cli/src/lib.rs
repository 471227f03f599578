//! rtrace as a library: the session and everything it is made of. The `rtrace` binary
//! is a thin `main` over it; the benchmarks drive its pure parts (decoding, printing)
//! without a kernel.

/// `eprintln!` that never panics: with stderr gone (a full disk, a closed pipe) there
/// is nowhere left to say anything, and rtrace must still clean up and exit as it should.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod build_info;
pub mod cli;
pub mod clock;
pub mod config;
pub mod decode;
pub mod env;
pub mod events;
pub mod faults;
pub mod habits;
pub mod kernel;
pub mod output;
pub mod perfconfig;
pub mod pids;
pub mod record;
pub mod session;
pub mod signals;
pub mod symbols;
pub mod tracefs_format;
pub mod workload;
