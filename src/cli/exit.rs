//! Every exit code of the CLI in one place, the one conversion to a process exit status,
//! and the error that means "bad input" (exit 2). Codes follow `stageload guard`: 3 stopped,
//! 4 never found room, 127 cannot start, 128+N a signal.

use std::process::ExitCode;

use headroom_rules::policy::EndReason;

/// Done; the job fits (watch), or ended with status 0.
pub const OK: i32 = 0;
/// `watch`: the process did not fit (swap grew past the tolerance).
pub const DOES_NOT_FIT: i32 = 1;
/// Invalid flags or input (a trace that is not one, a pid that is not running), or a
/// request that was refused.
pub const INVALID: i32 = 2;
/// The guard stopped the job, and every member was seen gone.
pub const STOPPED: i32 = 3;
/// There was never room to start.
pub const NO_ROOM: i32 = 4;
/// `fit`: no past run of the job's key to predict from.
pub const NO_HISTORY: i32 = 5;
/// The guard tried to stop the job and could not: members still run (another user's, one
/// that survived SIGKILL).
pub const NOT_STOPPED: i32 = 6;
/// The command could not be started.
pub const CANNOT_START: i32 = 127;
/// 128+N: signal N ended the job (or the guard, which stopped the job first).
pub const SIGNAL_BASE: i32 = 128;

/// Bad input, reported as an error with exit [`INVALID`] (a trace line that is not a
/// record names its file and line).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// The exit status for code `n`, the one conversion (codes past 255 wrap as the OS does).
pub fn status(n: i32) -> ExitCode {
    ExitCode::from(u8::try_from(n.rem_euclid(256)).unwrap_or(1))
}

/// The exit code of a job that ended as `end`, as `guard` and `watch --guard` exit.
pub fn of_end(end: &EndReason) -> i32 {
    match end {
        EndReason::Exited { code } => *code,
        EndReason::Signaled { signal } | EndReason::Interrupted { signal } => SIGNAL_BASE + signal,
        EndReason::Stopped { .. } => STOPPED,
        EndReason::NotStopped { .. } => NOT_STOPPED,
        EndReason::Vanished => OK,
    }
}

/// What an error says, its causes after it (`a: b: c`), each said once: a cause whose text
/// the error already holds (one that prints its source and also gives it as its cause, as
/// SQLite's errors do) is not said again.
pub fn text_of(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

/// The code an error exits with: [`INVALID`] for bad input, else 1.
pub fn of_error(err: &anyhow::Error) -> i32 {
    let invalid = err
        .chain()
        .any(|cause| cause.is::<Invalid>() || cause.is::<headroom_core::trace::TraceError>());
    if invalid {
        INVALID
    } else {
        1
    }
}
