//! headroom-core: Headroom's runtime, everything that is not UI above the OS layer and the
//! rules.
//!
//! Headroom judges whether a job fits in memory by **swap growth and system free
//! memory**, not by the process footprint, which drops when pages are compressed or
//! swapped out. Below this crate are three others, each named by its own name wherever
//! it is used (nothing here re-exports them): `headroom-model` (the plain data: units,
//! counters' values, identities), `headroom-os` (the OS boundary: counters, signals,
//! members, paths) and `headroom-rules` (the pure decisions: policy, stages, fit,
//! defaults and the job engine). This crate holds the one sampling loop ([`sampler`]),
//! in-memory history ([`history`]), the loop that drives a job live or from a trace
//! ([`drive`], one [`drive::step`] for every driver), JSONL traces ([`trace`],
//! [`summary`]), charts ([`chart`]), settings ([`settings`]), SQLite persistence
//! ([`store`]), the job files of terminal guards ([`jobfile`]), other guards' jobs
//! ([`peers`]), the stage-mark and control socket ([`socket`]) and a job whose guard is
//! gone ([`takeover`]). It calls the OS only through `headroom-os` (no `libc`, no
//! `unsafe`). `ARCHITECTURE.md` is the map. It has no Tauri and no clap in it.

#![forbid(unsafe_code)]
#![cfg_attr(
    test,
    allow(clippy::too_many_lines, reason = "a test reads as one scenario")
)]

pub mod chart;
#[cfg(unix)]
pub mod drive;
pub mod history;
pub mod jobfile;
pub mod monitor;
pub mod peers;
pub mod queue;
pub mod sampler;
pub mod settings;
#[cfg(unix)]
pub mod socket;
pub mod store;
pub mod summary;
pub mod takeover;
#[cfg(any(test, feature = "testdata"))]
pub mod testdata;
pub mod trace;
pub mod words;

#[cfg(test)]
mod fuzz_tests;
#[cfg(all(test, unix))]
mod mac_memory_tests;
