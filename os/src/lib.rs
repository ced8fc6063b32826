//! headroom-os: the one crate of Headroom that calls into the OS.
//!
//! It reads memory numbers ([`counters`]: `/proc` and cgroups on Linux, xnu's counters on
//! macOS), sends signals and reads processes ([`unix`]), names a process by its (pid, start
//! time) identity and reads its memory ([`process`]), follows who belongs to a job
//! ([`members`]), lists processes for the app ([`process_list`]), stops and pauses them under
//! the safety rules ([`enforce`], reporting through `headroom_model::effects`) and knows where files live
//! ([`paths`]). The data it fills is `headroom-model`'s.
//!
//! The boundary, kept by the compiler: `libc` and `mach2` are dependencies of this crate
//! only, and every crate above it forbids `unsafe`. `ARCHITECTURE.md` is the map.

#![cfg_attr(
    test,
    allow(clippy::too_many_lines, reason = "a test reads as one scenario")
)]
pub mod counters;
#[cfg(unix)]
pub mod enforce;
pub mod error;
pub mod members;
pub mod paths;
pub mod process;
pub mod process_list;
#[cfg(any(test, feature = "testdata"))]
pub mod testdata;
#[cfg(unix)]
pub mod unix;

pub use error::CounterError;

#[cfg(test)]
mod fuzz_tests;
