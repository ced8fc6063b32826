//! headroom-core: everything in Headroom that is not UI.
//!
//! Headroom judges whether a job fits in memory by **swap growth and system free memory**, not
//! by the process footprint, which drops when pages are compressed or swapped out. This crate
//! holds the OS boundary ([`counters`] reads memory numbers, [`unix`] sends signals), process
//! identity and trees ([`process`], [`members`]), the app's process list ([`process_list`]), the one sampling loop ([`sampler`]), in-memory
//! history ([`history`]), pure decisions ([`policy`], [`stages`]), the job engine ([`engine`])
//! and what its actions did ([`effects`]), the loop that drives a job live or from a trace
//! ([`drive`]), stopping and pausing processes safely ([`enforce`]), JSONL traces ([`trace`], [`summary`]),
//! charts ([`chart`]), units ([`units`]), where files live ([`paths`]), settings
//! ([`settings`]), SQLite persistence ([`store`]) and the job files of terminal guards
//! ([`jobfile`]). `ARCHITECTURE.md` is the map. It has no Tauri and no clap in it.

pub mod chart;
pub mod counters;
pub mod defaults;
#[cfg(unix)]
pub mod drive;
pub mod effects;
#[cfg(unix)]
pub mod enforce;
pub mod engine;
pub mod error;
pub mod fit;
pub mod history;
pub mod jobfile;
#[cfg(unix)]
pub mod marks;
pub mod members;
pub mod monitor;
pub mod paths;
pub mod peers;
pub mod policy;
pub mod process;
pub mod process_list;
pub mod queue;
pub mod sampler;
pub mod settings;
pub mod stages;
pub mod store;
pub mod summary;
pub mod takeover;
#[doc(hidden)]
pub mod testdata;
pub mod trace;
pub mod units;
#[cfg(unix)]
pub mod unix;

pub use error::CounterError;

#[cfg(test)]
mod fuzz_tests;
#[cfg(all(test, unix))]
mod mac_lineage_tests;
#[cfg(all(test, unix))]
mod mac_memory_tests;
#[cfg(all(test, unix))]
mod mac_tests;
