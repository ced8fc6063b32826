//! `headroom mark NAME`: from inside a guarded or watched job, mark the start of a stage
//! (`--end`: end the stage under way). The verdict then says which stage grew swap (see
//! `headroom_core::socket`).

use std::process::ExitCode;

use clap::Args;
use headroom_core::socket::{check_stage, send_end_stage, send_mark, sockets, MarkError, MARK_ENV};
use headroom_os::paths::Dirs;

/// Arguments of `headroom mark`.
#[derive(Debug, Args)]
#[command(after_help = "\
Run it from a process of a job that `headroom guard` started (it finds its guard through \
$HEADROOM_MARK) or that `headroom watch` watches. Exit codes: 0 the stage was marked; 2 not \
inside a job, an invalid name, or the guard is gone.

A program can mark without starting a process: one JSON line {\"stage\":\"NAME\"} to the Unix \
socket at $HEADROOM_MARK, answered by `ok` ({\"stage\":null} ends the stage under way; protocol version 2 keeps one connection open and \
hears the guard's warning: see `headroom_core::socket`; the Python package headroom-memory \
speaks it). `--run-dir` prints the folder where guards, watches and the app listen, for \
clients that look for the watch of their job themselves.")]
pub struct MarkArgs {
    /// The stage that starts now (1 to 200 bytes, no control characters).
    #[arg(
        value_name = "NAME",
        value_parser = parse_stage,
        required_unless_present_any = ["run_dir", "end"]
    )]
    stage: Option<String>,
    /// End the stage under way: what follows belongs to no stage until the next mark.
    #[arg(long, conflicts_with_all = ["stage", "run_dir"])]
    end: bool,
    /// Print the folder of the sockets (one per guard, watch and the app) and exit.
    #[arg(long, conflicts_with = "stage")]
    run_dir: bool,
}

fn parse_stage(text: &str) -> Result<String, String> {
    check_stage(text).map(str::to_string)
}

/// Runs `headroom mark`.
pub fn run(args: &MarkArgs) -> anyhow::Result<ExitCode> {
    if args.run_dir {
        println!("{}", Dirs::current().run_dir().display());
        return Ok(ExitCode::SUCCESS);
    }
    let stage = args.stage.as_deref();
    let send = |path: &std::path::Path| match stage {
        Some(stage) => send_mark(path, stage),
        None => send_end_stage(path),
    };
    let fail = |why: String| {
        match stage {
            Some(stage) => eprintln!("headroom: error: cannot mark stage '{stage}': {why}"),
            None => eprintln!("headroom: error: cannot end the stage: {why}"),
        }
        Ok(ExitCode::from(2))
    };
    if let Some(path) = std::env::var_os(MARK_ENV).filter(|p| !p.is_empty()) {
        return match send(std::path::Path::new(&path)) {
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
        if send(&socket).is_ok() {
            return Ok(ExitCode::SUCCESS);
        }
    }
    fail(format!(
        "not inside a job Headroom guards or watches (${MARK_ENV} is not set, and no watch \
         took the mark)"
    ))
}
