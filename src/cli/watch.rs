//! `headroom watch PID [--guard ...]`: attach to a running process, report swap growth
//! while it runs and the verdict when it ends; with `--guard`, stop it and its descendants
//! when it passes its budget.

use std::process::ExitCode;

use clap::Args;
use headroom_core::counters::Counters;
use headroom_core::enforce::Safety;
use headroom_core::engine::drive::{self, Launch, Sink};
use headroom_core::engine::{JobMode, JobSpec};

use super::budget::JobArgs;
use super::job::{exit_code, identity_of, print_json, Printer, Signals};

/// Flags of `headroom watch`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 when the process ended and fit, 1 when it did not fit (swap grew beyond \
--fits-tolerance), 3 when --guard stopped it, 2 for invalid flags or a pid that is not \
running, 128+N when signal N ended the watch (the process itself is left running, continued \
first if --guard --on-budget pause had paused it).")]
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
            return Ok(ExitCode::from(2));
        }
    };
    let safety = Safety::new(&counters);
    if args.guard {
        if let Err(refusal) = safety.check(&counters, &id) {
            eprintln!("headroom: error: cannot guard pid {}: {refusal}", args.pid);
            return Ok(ExitCode::from(2));
        }
    }
    let command = info.display_command().to_string();
    let trace = args.job.trace_sink(&command)?;
    let interrupts = Signals::install()?;
    let mut sinks: Vec<Box<dyn Sink>> = vec![Box::new(Printer::new(&command))];
    if let Some(trace) = trace {
        sinks.push(Box::new(trace));
    }
    let spec = JobSpec {
        command,
        mode: if args.guard {
            JobMode::Guard
        } else {
            JobMode::Watch
        },
        limits: args.job.limits(),
        poll: args.job.run.poll,
    };
    let outcome = drive::run(
        &counters,
        &safety,
        Launch::Process(id),
        spec,
        args.job.run.grace,
        sinks,
        &interrupts,
    )?;
    let code = exit_code(&outcome.verdict.ended);
    if args.job.run.json {
        print_json(&serde_json::json!({
            "command": outcome.command,
            "pid": outcome.pid,
            "verdict": outcome.verdict,
            "stop": outcome.stop,
            "exit_code": code,
        }))?;
    }
    let code = match code {
        0 if outcome.verdict.fits => 0,
        0 => 1,
        other => u8::try_from(other).unwrap_or(1),
    };
    Ok(ExitCode::from(code))
}
