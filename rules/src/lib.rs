//! headroom-rules: Headroom's decisions, pure.
//!
//! What a job's readings mean and what to do about them: the stop, pause and verdict rules
//! ([`policy`]), a job's stages ([`stages`]), what a run needs, the prediction from past runs
//! and whether it fits the room now ([`fit`]), the one table of defaults ([`defaults`]), and
//! the job engine ([`engine`]) that takes one tick's readings ([`sample`]), requests and
//! marks and answers with actions, each verified by the readings after it. Every function
//! here takes its readings and its time as arguments; a job is plain ids
//! (`headroom_os::members::JobIds`), never a handle that reads processes.
//!
//! The boundary, kept by the compiler: this crate depends on `headroom-os` for its plain
//! types only (counters, identities, units) and forbids `unsafe`; it has no `libc`, no
//! SQLite, no clock of its own. `scripts/check-modules` keeps what a crate boundary cannot
//! say: no file, clock, counter read or signal called from here. `ARCHITECTURE.md` is the
//! map.

#![forbid(unsafe_code)]

pub mod defaults;
pub mod engine;
pub mod fit;
pub mod policy;
pub mod sample;
pub mod stages;
#[doc(hidden)]
pub mod testdata;

// The OS layer's plain types, under the names the rules use (`crate::units`, ...).
#[cfg(unix)]
use headroom_os::enforce;
use headroom_os::{counters, effects, members, process, units};
