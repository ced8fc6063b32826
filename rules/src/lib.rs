//! headroom-rules: Headroom's decisions, pure.
//!
//! What a job's readings mean and what to do about them: the stop, pause and verdict rules
//! ([`policy`]), a job's stages ([`stages`]), what a run needs, the prediction from past runs
//! and whether it fits the room now ([`fit`]), and the one table of defaults ([`defaults`]).
//! Every function here takes its readings and its time as arguments.
//!
//! The boundary, kept by the compiler: this crate depends on `headroom-os` for its plain
//! types only (counters, identities, units) and forbids `unsafe`; it has no `libc`, no
//! SQLite, no clock of its own. `scripts/check-modules` keeps what a crate boundary cannot
//! say: no file, clock, counter read or signal called from here. `ARCHITECTURE.md` is the
//! map.

#![forbid(unsafe_code)]

pub mod defaults;
pub mod fit;
pub mod policy;
pub mod stages;

// The OS layer's plain types, under the names the rules use (`crate::units`, ...).
use headroom_os::{counters, units};
