//! `headroom guard [flags] -- CMD ARGS`: wait for room, run the command in its own process
//! group, stop it before swap runs away. Flags and exit codes follow `stageload guard`.

use std::io::{IsTerminal, Write};
use std::process::{Command, ExitCode};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use headroom_core::drive::{self, Admit, DriveError, Launch, Outcome, Waited};
use headroom_core::queue::files::PlaceSink;
use headroom_os::counters::Counters;
use headroom_os::enforce::Safety;
use headroom_os::unix::jobctl::Terminal;
use headroom_rules::defaults as d;
use headroom_rules::defaults::text;
use headroom_rules::engine::{JobMode, JobSpec};
use headroom_rules::policy::{Limits, WaitReason};
use regex::Regex;
use serde::Serialize;

use crate::cli::exit;
use crate::cli::job::budget::JobArgs;
use crate::cli::job::report::Report;
use crate::cli::job::signals::Signals;
use crate::cli::job::sinks::job_sinks;
use crate::cli::job::wait_fit;
use crate::cli::output::{print_json, say};
use crate::cli::past::runs::{after_end, before_start, Before, HistoryFlags, KEY_ENV};

/// Flags of `headroom guard`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: the command's own (also after pauses); 3 when the guard stopped it (at the \
budget, past --max-pauses, or on `headroom stop`) and saw every process of it gone; 6 when it \
tried and could not (a process of another user, one that survived SIGKILL: named in a warning \
at once and in the verdict); 4 when there was never room to start it; 127 when it could not be \
started; 128+N when signal N ended it (or ended the guard, which stops the command first: a \
second signal sends SIGKILL at once); 2 for invalid flags or input.

The job is the command's process group and every descendant ever seen (a worker that calls \
setsid() or double-forks included); it runs while any of them lives. Stopping sends SIGTERM to \
each, then SIGKILL to what is left after --grace. In a terminal's foreground the job gets the \
terminal: it can read input, and Ctrl-C, Ctrl-\\ and Ctrl-Z reach it (Ctrl-Z suspends the guard \
too, until fg). Signals the guard was started to ignore (nohup) stay ignored.

With --on-budget pause the job is paused (SIGSTOP to every process) instead of stopped; the \
guard then holds the terminal: Ctrl-C stops the job, `headroom resume PID` (another terminal) \
continues it with a new budget, `headroom stop PID` stops it. A guard ended by a signal while \
its job is paused stops it, continuing it after SIGTERM: a job is never left paused with \
nobody to resume it.")]
pub struct GuardArgs {
    /// Wait until free memory is at least this percent before starting. Above 100 it can
    /// never be met: the guard waits until --start-timeout and exits 4.
    #[arg(long, default_value = text::percent(d::WAIT_FREE_PERCENT), allow_hyphen_values = true, value_parser = parse_wait_free, value_name = "PERCENT")]
    wait_free: f64,
    /// Wait until the job's predicted need (from its past runs: `headroom fit`) fits in free
    /// memory above the free floor, in line with the other guards that wait so (`headroom
    /// queue`); a job with no past run waits by --wait-free, in line, and says so.
    #[arg(long)]
    wait_fit: bool,
    /// Do not start while a process whose command line matches this regex runs, nor until
    /// none has matched for --quiet-for (repeatable; like `pgrep -f`, Headroom and its
    /// ancestors are left out).
    #[arg(long, value_parser = parse_regex, value_name = "REGEX")]
    busy: Vec<Regex>,
    /// How long no --busy process may have run before starting.
    #[arg(long, default_value = text::duration(d::QUIET_FOR), allow_hyphen_values = true, value_parser = crate::cli::values::parse_duration, value_name = "DURATION")]
    quiet_for: Duration,
    /// Give up waiting for room after this long (exit 4).
    #[arg(long, default_value = text::duration(d::START_TIMEOUT), allow_hyphen_values = true, value_parser = crate::cli::values::parse_duration, value_name = "DURATION")]
    start_timeout: Duration,
    #[command(flatten)]
    job: JobArgs,
    /// Write a Markdown report of the job here at the end (verdict, stages, and the chart as
    /// an SVG beside it), for CI. With $GITHUB_STEP_SUMMARY set, the report also goes there.
    #[arg(long, value_name = "FILE.md")]
    report: Option<std::path::PathBuf>,
    /// Do not append the report to $GITHUB_STEP_SUMMARY.
    #[arg(long)]
    no_step_summary: bool,
    #[command(flatten)]
    history: HistoryFlags,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

fn parse_wait_free(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err(format!(
            "invalid percent '{text}': expected a number from 0 (above 100 never starts)"
        )),
    }
}

fn parse_regex(text: &str) -> Result<Regex, String> {
    Regex::new(text).map_err(|e| format!("invalid regex '{text}': {e}"))
}

#[derive(Debug, Serialize)]
struct NoRoom<'a> {
    command: &'a str,
    waited_seconds: f64,
    reason: String,
    exit_code: i32,
}

/// The `--json` summary of a finished job.
#[derive(Debug, Serialize)]
pub struct JsonOutcome<'a> {
    #[serde(flatten)]
    outcome: &'a Outcome,
    exit_code: i32,
}

/// Runs `headroom guard`.
pub fn run(args: &GuardArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let mut limits = Limits {
        wait_free_percent: args.wait_free,
        quiet_for: args.quiet_for,
        start_timeout: args.start_timeout,
        ..args.job.limits()
    };
    let command_line = args.command.join(" ");
    let interrupts = Signals::install()?;
    // What can fail is done before the command starts: the trace file first.
    let trace = args.job.trace_sink(&command_line)?;
    let report = Report::create(
        args.report.as_deref(),
        args.no_step_summary,
        args.job.run.poll,
    )?;

    let mut before = before_start(&counters, &args.command, &args.history);
    let mut line = args
        .wait_fit
        .then(|| wait_fit::join(&counters, &before, &command_line, &mut limits))
        .flatten();
    let waited = {
        let mut admit = line
            .as_mut()
            .map(|line| wait_fit::admitter(line, &counters, &limits));
        let admit = admit.as_mut().map(|a| a as Admit<'_>);
        let wait = Wait {
            busy: &args.busy,
            poll: args.job.run.poll,
            interrupts: &interrupts,
        };
        wait_for_room(&counters, &limits, &wait, admit)?
    };
    if let Err(reason) = waited {
        return no_room(args, &limits, &command_line, reason);
    }
    before.starting(&counters);

    let mut command = Command::new(&args.command[0]);
    // The job's history key, for a job that asks whether it fits (`headroom fit --key`).
    command.args(&args.command[1..]).env(KEY_ENV, before.key());
    let safety = Safety::new(&counters);
    let mut sinks = job_sinks(
        &counters,
        &command_line,
        trace,
        report.as_ref().map(Report::sink),
        before.compared(),
    );
    if let Some(line) = line {
        sinks.push(Box::new(PlaceSink::new(line)));
    }
    let spec = guard_spec(args, &before, &command_line, limits);
    let launch = Launch::Command {
        command,
        terminal: Terminal::foreground(),
    };
    let peers = headroom_core::jobfile::PeerFiles::for_job(
        &spec,
        &headroom_os::paths::Dirs::current(),
        counters.clone(),
    );
    let ran = drive::run(&counters, &safety, launch, spec, sinks, peers, &interrupts);
    let outcome = match ran {
        Err(DriveError::Spawn(e)) => {
            say(&format!("cannot start {}: {e}", args.command[0]));
            return Ok(exit::status(exit::CANNOT_START));
        }
        ran => ran?,
    };
    after_end(&before, &outcome, &args.history);
    finished(&outcome, report.as_ref(), args.job.run.json)
}

/// The job a guard runs: owned (stopped if the guard is interrupted), recorded under the
/// key `before` has.
fn guard_spec(args: &GuardArgs, before: &Before, command_line: &str, limits: Limits) -> JobSpec {
    JobSpec {
        grace: args.job.run.grace,
        key: Some(before.key().to_string()),
        owned: true,
        ..JobSpec::new(
            command_line.to_string(),
            JobMode::Guard,
            limits,
            args.job.run.poll,
        )
    }
}

/// The end of a guarded job: the outputs that could not finish, the report, `--json`, the
/// exit code.
pub fn finished(
    outcome: &Outcome,
    report: Option<&Report>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    for output in &outcome.unfinished_outputs {
        say(&format!(
            "warning: {output} could not be finished: nobody read it"
        ));
    }
    let exit_code = exit::of_end(&outcome.verdict.ended);
    if let Some(report) = report {
        if let Err(e) = report.finish(outcome) {
            say(&format!("warning: the report: {e:#}"));
        }
    }
    if json {
        print_json(&JsonOutcome { outcome, exit_code })?;
    }
    Ok(exit::status(exit_code))
}

/// There was never room, or the guard was interrupted while waiting: the exit code.
fn no_room(
    args: &GuardArgs,
    limits: &Limits,
    command_line: &str,
    reason: Waited,
) -> anyhow::Result<ExitCode> {
    match reason {
        Waited::Interrupted(signal) => Ok(exit::status(exit::SIGNAL_BASE + signal)),
        Waited::GaveUp(reason) => {
            say(&format!("never found room for {command_line}: {reason}"));
            if args.job.run.json {
                print_json(&NoRoom {
                    command: command_line,
                    waited_seconds: limits.start_timeout.as_secs_f64(),
                    reason: reason.to_string(),
                    exit_code: exit::NO_ROOM,
                })?;
            }
            Ok(exit::status(exit::NO_ROOM))
        }
    }
}

/// How `wait_for_room` waits: the `--busy` patterns, the poll, the interrupts.
struct Wait<'a> {
    busy: &'a [Regex],
    poll: Duration,
    interrupts: &'a Signals,
}

/// What makes a waiting reason worth a new plain line: its kind, and in the queue its
/// place and whom it waits behind (not the free memory of each poll).
fn shown_key(reason: &WaitReason) -> String {
    match reason {
        WaitReason::InLine {
            position, behind, ..
        } => format!("in line {position} {behind:?}"),
        other => format!("{:?}", std::mem::discriminant(other)),
    }
}

/// Waits for room (core's start gate loop, `headroom_core::drive::wait_for_room`), showing
/// why on one updating line (a terminal) or plain lines when the reason changes (not a
/// terminal).
fn wait_for_room(
    counters: &Counters,
    limits: &Limits,
    wait: &Wait,
    admit: Option<Admit<'_>>,
) -> anyhow::Result<Result<(), Waited>> {
    let Wait {
        busy,
        poll,
        interrupts,
    } = *wait;
    let tty = std::io::stderr().is_terminal();
    let mut shown: Option<String> = None;
    let mut show = |reason: &WaitReason| {
        let text = format!("waiting for room: {reason}");
        if tty {
            eprint!("\r\x1b[2Kheadroom: {text}");
            let _ = std::io::stderr().flush();
            shown = Some(text);
        } else {
            let key = shown_key(reason);
            if shown.as_deref() != Some(key.as_str()) {
                say(&text);
                shown = Some(key);
            }
        }
    };
    let matches = |command: &str| busy.iter().any(|re| re.is_match(command));
    let busy: Option<&dyn Fn(&str) -> bool> = (!busy.is_empty()).then_some(&matches);
    let waited = drive::wait_for_room(counters, limits, busy, poll, interrupts, admit, &mut show)
        .context("reading memory counters")?;
    if tty && shown.is_some() {
        match waited {
            Ok(()) => eprint!("\r\x1b[2K"),
            Err(_) => eprintln!(),
        }
    }
    Ok(waited)
}
