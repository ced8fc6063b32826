//! headroom-model: the plain data every layer of Headroom shares, with no OS call and no
//! `libc` under it.
//!
//! Byte sizes, durations and percents ([`units`]), the memory numbers of the system and of a
//! process ([`counters`]), a process named by (pid, start time) ([`process`]), a job's
//! members ([`members`]) and what carrying out a job's actions did ([`effects`]).
//! `headroom-os` reads and acts on the OS and fills these; `headroom-rules` decides from
//! them and cannot reach the OS, because nothing below it can name it. `ARCHITECTURE.md` is
//! the map.

#![forbid(unsafe_code)]
#![cfg_attr(
    test,
    allow(clippy::too_many_lines, reason = "a test reads as one scenario")
)]

pub mod counters;
pub mod effects;
pub mod members;
pub mod process;
#[cfg(any(test, feature = "testdata"))]
pub mod testdata;
pub mod units;
