//! headroom-core's integration tests, one binary: the recorded Mac traces through the fit
//! rules and the replay (`fit_fixtures`, `fixture_traces`), and one loop for every driver
//! (`one_loop`). `history_memory` stays a binary of its own: it installs a counting global
//! allocator, which would count every other test's heap too.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test
#![allow(clippy::too_many_lines, reason = "a test reads as one scenario")]

mod fit_fixtures;
mod fixture_traces;
mod one_loop;
