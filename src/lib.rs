//! `headroom`: does this job really fit in memory?
//!
//! The command-line tool beside the menu-bar app. It judges memory by swap growth and system
//! free memory, not by a process's footprint. See `headroom --help`.
//!
//! The tool is this library's [`main`], so that two binaries can be it: `headroom`
//! (`src/main.rs`) and, in the Python wheel only, `headroom-memory` (`src/bin/headroom-memory.rs`,
//! behind the `wheel-command` feature), a command name no other package installs.

// The OS is called through headroom-os only (ARCHITECTURE.md).
#![forbid(unsafe_code)]
#![cfg_attr(
    test,
    allow(clippy::too_many_lines, reason = "a test reads as one scenario")
)]

mod cli;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

/// Runs the command line this process was given and returns its exit code.
pub fn main() -> ExitCode {
    let matches = cli::Cli::command().get_matches();
    let args = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli::given::remember(matches);
    init_logging(args.verbose);
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("headroom: error: {}", cli::exit::text_of(&err));
            cli::exit::status(cli::exit::of_error(&err))
        }
    }
}

/// Logs go to stderr: errors only by default (the commands print their own lines), `-v`
/// adds every signal sent and other events, `-vv` debug; `HEADROOM_LOG` overrides.
fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "error",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("HEADROOM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
