//! `headroom mark NAME`: from inside a guarded or watched job, mark the start of a stage.
//! The verdict then says which stage grew swap (see `headroom_core::marks`).

use std::process::ExitCode;

use clap::Args;
use headroom_core::marks::{check_stage, send_mark, sockets, MarkError, MARK_ENV};
use headroom_core::paths::Dirs;

/// Arguments of `headroom mark`.
#[derive(Debug, Args)]
#[command(after_help = "\
Run it from a process of a job that `headroom guard` started (it finds its guard through \
$HEADROOM_MARK) or that `headroom watch` watches. Exit codes: 0 the stage was marked; 2 not \
inside a job, an invalid name, or the guard is gone.

A program can mark without starting a process: one JSON line {\"stage\":\"NAME\"} to the Unix \
socket at $HEADROOM_MARK, answered by `ok`.")]
pub struct MarkArgs {
    /// The stage that starts now (1 to 200 bytes, no control characters).
    #[arg(value_name = "NAME", value_parser = parse_stage)]
    stage: String,
}

fn parse_stage(text: &str) -> Result<String, String> {
    check_stage(text).map(str::to_string)
}

/// Runs `headroom mark`.
pub fn run(args: &MarkArgs) -> anyhow::Result<ExitCode> {
    let fail = |why: String| {
        eprintln!("headroom: error: cannot mark stage '{}': {why}", args.stage);
        Ok(ExitCode::from(2))
    };
    if let Some(path) = std::env::var_os(MARK_ENV).filter(|p| !p.is_empty()) {
        return match send_mark(std::path::Path::new(&path), &args.stage) {
            Ok(_) => Ok(ExitCode::SUCCESS),
            Err(MarkError::Closed { .. }) => fail(format!(
                "the guard of this job is gone (nothing listens at {})",
                std::path::Path::new(&path).display()
            )),
            Err(e) => fail(e.to_string()),
        };
    }
    // No guard of ours: a `headroom watch` (or the app) may watch the job we are in. Each
    // answers only for its own jobs' processes.
    let sockets = match sockets(&Dirs::current()) {
        Ok(sockets) => sockets,
        Err(e) => return fail(e.to_string()),
    };
    for socket in sockets {
        if send_mark(&socket, &args.stage).is_ok() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    fail(format!(
        "not inside a job Headroom guards or watches (${MARK_ENV} is not set, and no watch \
         took the mark)"
    ))
}
