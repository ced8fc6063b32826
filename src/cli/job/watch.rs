//! `headroom watch PID [--guard ...]`: attach to a running process, report swap growth
//! while it runs and the verdict when it ends; with `--guard`, stop it and its descendants
//! when it passes its budget.

use std::process::ExitCode;

use clap::Args;
use headroom_core::drive::{self, Launch};
use headroom_os::counters::Counters;
use headroom_os::enforce::Safety;
use headroom_rules::engine::{JobMode, JobSpec};

use crate::cli::exit;
use crate::cli::job::budget::JobArgs;
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::CounterSource;

use crate::cli::job::signals::Signals;
use crate::cli::job::sinks::job_sinks;
use crate::cli::output::print_json;
use crate::cli::past::runs::{after_end, before_start, HistoryFlags};

/// Flags of `headroom watch`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 when the process ended and fit, 1 when it did not fit (swap grew beyond \
--fits-tolerance), 3 when --guard stopped it (every process seen gone), 6 when --guard tried \
and could not, 2 for invalid flags or a pid that is not running, 128+N when signal N ended the \
watch (the process itself is left running, continued first if --guard --on-budget pause had \
paused it).")]
pub struct WatchArgs {
    /// The process to watch, with its descendants (also those that outlive it). A thread id
    /// is refused.
    #[arg(value_name = "PID")]
    pid: u32,
    /// Stop the process and its descendants (SIGTERM, then SIGKILL after --grace) when swap
    /// passes the budget or free memory stays too low. Never pid 1, Headroom itself, its
    /// ancestors, or another user's process.
    #[arg(long)]
    guard: bool,
    #[command(flatten)]
    job: JobArgs,
    #[command(flatten)]
    history: HistoryFlags,
}

/// Runs `headroom watch`.
pub fn run(args: &WatchArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let (id, info) = match identity_of(&counters, args.pid) {
        Ok(found) => found,
        Err(e) => {
            eprintln!(
                "headroom: error: invalid value '{}' for '<PID>': {e:#}",
                args.pid
            );
            return Ok(exit::status(exit::INVALID));
        }
    };
    let safety = Safety::new(&counters);
    if args.guard {
        if let Err(refusal) = safety.check(&counters, &id) {
            eprintln!("headroom: error: cannot guard pid {}: {refusal}", args.pid);
            return Ok(exit::status(exit::INVALID));
        }
    }
    let command = info.display_command().to_string();
    let argv: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    let before = before_start(&counters, &argv, &args.history);
    let trace = args.job.trace_sink(&command)?;
    let interrupts = Signals::install()?;
    let sinks = job_sinks(&counters, &command, trace, None, before.compared());
    let mode = if args.guard {
        JobMode::Guard
    } else {
        JobMode::Watch
    };
    let spec = JobSpec {
        grace: args.job.run.grace,
        key: Some(before.key().to_string()),
        ..JobSpec::new(command, mode, args.job.limits(), args.job.run.poll)
    };
    let peers = headroom_core::jobfile::PeerFiles::for_job(
        &spec,
        &headroom_os::paths::Dirs::current(),
        counters.clone(),
    );
    let outcome = drive::run(
        &counters,
        &safety,
        Launch::Process(id),
        spec,
        sinks,
        peers,
        &interrupts,
    )?;
    after_end(&before, &outcome, &args.history);
    let code = match exit::of_end(&outcome.verdict.ended) {
        exit::OK if outcome.verdict.fits => exit::OK,
        exit::OK => exit::DOES_NOT_FIT,
        other => other,
    };
    if args.job.run.json {
        print_json(&serde_json::json!({
            "command": outcome.command,
            "pid": outcome.pid,
            "verdict": outcome.verdict,
            "stop": outcome.stop,
            "exit_code": code,
        }))?;
    }
    Ok(exit::status(code))
}

/// The identity of a process to watch, refusing thread ids and pids that are not running.
pub fn identity_of(
    counters: &headroom_os::counters::Counters,
    pid: u32,
) -> anyhow::Result<(ProcessIdentity, headroom_model::counters::ProcessInfo)> {
    let info = counters.process_info(pid)?;
    Ok((
        ProcessIdentity {
            pid,
            start_time: info.start_time,
        },
        info,
    ))
}
