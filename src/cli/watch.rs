//! `headroom watch PID [--guard ...]`: attach to a running process, report swap growth
//! while it runs and the verdict when it ends; with `--guard`, stop it and its descendants
//! when it passes its budget.

use std::process::ExitCode;

use clap::Args;
use headroom_core::counters::Counters;
use headroom_core::guard::Safety;
use headroom_core::process::ProcessIdentity;

use super::budget::{BudgetArgs, RunArgs};
use super::job::{monitor, print_json, Interrupts, Target};

/// Flags of `headroom watch`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 when the process ended and fit, 1 when it did not fit (swap grew beyond \
--fits-tolerance), 3 when --guard stopped it, 2 for invalid flags or a pid that is not \
running, 128+N when signal N ended the watch (the process itself is left running).")]
pub struct WatchArgs {
    /// The process to watch (its descendants are counted too).
    #[arg(value_name = "PID")]
    pid: u32,
    /// Stop the process and its descendants (SIGTERM, then SIGKILL after --grace) when swap
    /// passes the budget or free memory stays too low. Never pid 1, Headroom itself, its
    /// ancestors, or another user's process.
    #[arg(long)]
    guard: bool,
    #[command(flatten)]
    budget: BudgetArgs,
    #[command(flatten)]
    run: RunArgs,
}

/// Runs `headroom watch`.
pub fn run(args: &WatchArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let (id, info) = match ProcessIdentity::of(&counters, args.pid)
        .and_then(|id| Ok((id, counters.process_info(args.pid)?)))
    {
        Ok(found) => found,
        Err(e) => {
            eprintln!(
                "headroom: error: invalid value '{}' for '<PID>': {e}",
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
    let command = if info.command.is_empty() {
        info.name
    } else {
        info.command
    };
    let interrupts = Interrupts::install()?;
    let target = Target::Process { id, safety };
    let cfg = args.budget.config(args.run.poll);
    let outcome = monitor(
        &counters,
        target,
        id,
        &command,
        &cfg,
        args.guard,
        &args.run,
        &interrupts,
    )?;
    if args.run.json {
        print_json(&outcome)?;
    }
    let code = match outcome.exit_code {
        0 if outcome.verdict.fits => 0,
        0 => 1,
        other => u8::try_from(other).unwrap_or(1),
    };
    Ok(ExitCode::from(code))
}
