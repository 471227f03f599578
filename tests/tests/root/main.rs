//! Integration tests: the real `rtrace` binary, as root, on small workloads. One test
//! binary; run one test at a time (`--test-threads=1`): they share kernel state.

mod callchains;
mod command;
mod decode;
mod events;
mod faults;
mod held;
mod json_schema;
mod lifecycle;
mod output;
mod record;
mod scope;
mod signals;
mod summary;
mod targets;
mod threads;
mod timeline;
mod trust;
