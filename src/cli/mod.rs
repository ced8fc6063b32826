//! Command-line parsing (clap derive) and dispatch.
//!
//! Flags are parsed and validated into typed values before anything runs: an invalid value
//! exits 2 with a message naming the flag (clap's usage error).

pub mod exit;
pub mod given;
mod job;
mod output;
mod past;
mod serve;
mod status;
mod traces;
mod values;

use job::{control, guard, mark, queue, watch};
use past::{fit, history};
use traces::{record, trace_cmd};

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use headroom_model::effects::Control;

/// Does this job really fit in memory?
///
/// Headroom judges memory by swap growth and system free memory, not by a process's
/// footprint: on Apple Silicon a job's footprint drops when its pages are compressed or
/// swapped out, so it can look small while the machine swaps itself to death.
#[derive(Debug, Parser)]
#[command(name = "headroom", version, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug); HEADROOM_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show system memory, swap and the processes with the largest footprint.
    Status(status::StatusArgs),
    /// Record a memory trace (JSONL, stageload-compatible) until stopped.
    Record(record::RecordArgs),
    /// Wait for room, run a command, stop it before swap runs away.
    Guard(guard::GuardArgs),
    /// Watch a running process: swap growth while it runs, a verdict when it ends.
    Watch(watch::WatchArgs),
    /// Mark the start of a stage, from inside a guarded or watched job.
    Mark(mark::MarkArgs),
    /// Continue a job its guard paused (--on-budget pause), with a new budget.
    Resume(control::ControlArgs),
    /// Pause a guarded job now (SIGSTOP to each of its processes).
    Pause(control::ControlArgs),
    /// Stop a guarded job now (SIGTERM, then SIGKILL after the grace), paused or not.
    Stop(control::ControlArgs),
    /// Serve metrics for Prometheus on http://127.0.0.1:9101/metrics.
    Serve(serve::ServeArgs),
    /// Summarise, plot or replay a memory trace.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCommand),
    /// Past runs: of one key, every key, forget them, import traces as runs.
    History(history::HistoryArgs),
    /// Will a job fit now, from its past runs? Runs nothing.
    Fit(fit::FitArgs),
    /// The guards waiting in line (`guard --wait-fit`): who, for what, in which order.
    Queue(queue::QueueArgs),
}

/// Runs the parsed command; the exit code is the command's.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Status(args) => status::run(&args),
        Command::Record(args) => record::run(&args),
        Command::Guard(args) => guard::run(&args),
        Command::Watch(args) => watch::run(&args),
        Command::Mark(args) => mark::run(&args),
        Command::Resume(args) => control::run(Control::Resume, &args),
        Command::Pause(args) => control::run(Control::Pause, &args),
        Command::Stop(args) => control::run(Control::Stop, &args),
        Command::Serve(args) => serve::run(&args),
        Command::Trace(cmd) => trace_cmd::run(&cmd),
        Command::History(args) => history::run_history(&args),
        Command::Fit(args) => fit::run_fit(&args),
        Command::Queue(args) => queue::run_queue(&args),
    }
}

#[cfg(test)]
mod tests {
    //! Property test: no command line, however mangled, makes the parser panic; every
    //! refusal is a usage error (exit 2), except `--help`/`--version` (exit 0).

    use clap::error::ErrorKind;
    use proptest::prelude::*;

    use super::Cli;
    use clap::Parser;

    fn config() -> ProptestConfig {
        ProptestConfig {
            cases: headroom_os::testdata::fuzz_cases(),
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    fn word() -> impl Strategy<Value = String> {
        let known = "(status|record|guard|watch|mark|resume|pause|stop|serve|trace|summary|plot|\
                     replay|queue|--wait-fit|--|-v|-vv|--json|--help|--version|--top|--wait-free|--swap-budget|\
                     --swap-limit|--kill-free|--poll|--grace|--trace|--busy|--quiet-for|\
                     --start-timeout|--fits-tolerance|--tight-compressed|--tight-free|\
                     --notify-step|--on-budget|--max-pauses|--resume-free|--resume-calm|--report|\
                     --no-step-summary|--listen|--interval|--guard|--pid|--duration|-o|--output|\
                     --title)";
        let value = "(-?[0-9]{0,22}(\\.[0-9]{0,4})?(ms|s|m|h|K|M|G|T|%)?|pause|stop|127\\.0\\.0\\.1:[0-9]{0,6}|\
                     \\(|\\[|\\*|\\PC{0,12})";
        prop_oneof![
            3 => proptest::string::string_regex(known).expect("regex"),
            2 => proptest::string::string_regex(value).expect("regex"),
            1 => any::<String>(),
        ]
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn fuzz_command_lines_never_panic(args in prop::collection::vec(word(), 0..8)) {
            let argv = std::iter::once("headroom".to_string()).chain(args.iter().cloned());
            if let Err(e) = Cli::try_parse_from(argv) {
                // (Help shown for a missing subcommand is a usage error: exit 2.)
                let info = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
                prop_assert_eq!(e.exit_code(), if info { 0 } else { 2 }, "{:?}: {}", args, e);
            }
        }
    }
}
