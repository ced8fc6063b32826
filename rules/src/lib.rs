//! headroom-rules: Headroom's decisions, pure.
//!
//! What a job's readings mean and what to do about them: the stop, pause and verdict rules
//! ([`policy`]), a job's stages ([`stages`]), what a run needs, the prediction from past runs
//! and whether it fits the room now ([`fit`]), the one table of defaults ([`defaults`]), and
//! the job engine ([`engine`]) that takes one tick's readings ([`sample`]), requests and
//! marks and answers with actions, each verified by the readings after it. Every function
//! here takes its readings and its time as arguments; a job is plain ids
//! (`headroom_model::members::JobIds`), never a handle that reads processes.
//!
//! The boundary, kept by the compiler: below this crate is `headroom-model` alone (plain
//! data: units, counters' values, identities), so nothing here can name the OS; it forbids
//! `unsafe` and has no `libc`, no SQLite, no clock of its own. `scripts/check-modules` keeps what a crate boundary cannot
//! say: no file, clock, counter read or signal called from here. `ARCHITECTURE.md` is the
//! map.

#![forbid(unsafe_code)]
#![cfg_attr(
    test,
    allow(clippy::too_many_lines, reason = "a test reads as one scenario")
)]

pub mod defaults;
pub mod engine;
pub mod fit;
pub mod policy;
pub mod sample;
pub mod stages;
#[cfg(any(test, feature = "testdata"))]
pub mod testdata;
