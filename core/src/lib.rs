//! headroom-core: Headroom's runtime, everything that is not UI above the OS layer and the
//! rules.
//!
//! Headroom judges whether a job fits in memory by **swap growth and system free memory**, not
//! by the process footprint, which drops when pages are compressed or swapped out. Below this
//! crate are two others: `headroom-os` (the OS boundary: [`counters`], [`unix`], [`process`],
//! [`members`], [`enforce`], [`paths`], [`units`]) and `headroom-rules` (the pure decisions:
//! [`policy`], [`stages`], [`fit`], [`defaults`] and the job [`engine`]), re-exported here
//! under their old names. This crate holds the one sampling loop ([`sampler`]), in-memory
//! history ([`history`]), the loop that drives a job live or from a trace ([`drive`], one
//! [`drive::step`] for every driver), JSONL traces ([`trace`], [`summary`]), charts
//! ([`chart`]), settings ([`settings`]), SQLite persistence ([`store`]), the job files of
//! terminal guards ([`jobfile`]), other guards' jobs ([`peers`]), the stage-mark and control
//! socket ([`marks`]) and a job whose guard is gone ([`takeover`]). It calls the OS only
//! through `headroom-os` (no `libc`, no `unsafe`). `ARCHITECTURE.md` is the map. It has no
//! Tauri and no clap in it.

#![forbid(unsafe_code)]

pub mod chart;
#[cfg(unix)]
pub mod drive;
pub mod history;
pub mod jobfile;
#[cfg(unix)]
pub mod marks;
pub mod monitor;
pub mod peers;
pub mod queue;
pub mod sampler;
pub mod settings;
pub mod store;
pub mod summary;
pub mod takeover;
#[doc(hidden)]
pub mod testdata;
pub mod trace;

// The layers below, under the names every crate above has always used
// (`headroom_core::counters`, `headroom_core::policy`, ...): the OS layer, then the rules.
pub use headroom_os::CounterError;
pub use headroom_os::{counters, effects, error, members, paths, process, process_list, units};
#[cfg(unix)]
pub use headroom_os::{enforce, unix};
pub use headroom_rules::{defaults, engine, fit, policy, stages};

#[cfg(test)]
mod fuzz_tests;
#[cfg(all(test, unix))]
mod mac_lineage_tests;
#[cfg(all(test, unix))]
mod mac_memory_tests;
#[cfg(all(test, unix))]
mod mac_tests;
