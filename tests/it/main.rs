//! The `headroom` crate's integration tests, one binary (rust-analyzer's and cargo's own
//! layout): each module is one area, run against the built `headroom` binary with real
//! processes (`support` holds what they share: the binary, a test home, real swap and memory
//! cgroups, other users). One binary links once; `cargo test --test it real_swap::` runs
//! one area.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test
#![allow(clippy::too_many_lines, reason = "a test reads as one scenario")]

mod support;

mod as_root;
mod bad_files;
mod cgroups;
mod cli_guard;
mod cli_jobs;
mod cli_marks;
mod cli_report;
mod cli_status_record;
mod files;
mod history;
mod macos_illusion;
mod orphans;
mod other_users;
mod pause;
mod queue;
mod quiet;
mod real_swap;
mod real_swap_order;
mod real_swap_pause;
mod terminal;
mod verified;
