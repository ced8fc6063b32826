//! `headroom resume PID`, `headroom pause PID`, `headroom stop PID`: act on a job that a
//! guard (`headroom guard`, `headroom watch --guard`) or the app runs, from another terminal.
//! Each Headroom process answers only for its own job (see `headroom_core::marks`).

use std::process::ExitCode;

use clap::Args;
use headroom_core::marks::{is_not_here, send_control, sockets, Control, MarkError};
use headroom_core::paths::Dirs;

/// Arguments of `headroom resume`, `pause` and `stop`.
#[derive(Debug, Args)]
#[command(after_help = "\
PID is the job's process id, as the guard's lines and the app show it. Exit codes: 0 done; 2 no \
guard of yours runs a job with that pid, or the job is not in a state for it (resume: not \
paused).")]
pub struct ControlArgs {
    /// The job's process id.
    #[arg(value_name = "PID")]
    pid: u32,
}

/// Runs `headroom resume|pause|stop PID`.
pub fn run(control: Control, args: &ControlArgs) -> anyhow::Result<ExitCode> {
    let mut why = None;
    for socket in sockets(&Dirs::current().marks_dir()) {
        match send_control(&socket, control, args.pid) {
            Ok(()) => {
                let done = match control {
                    Control::Pause => "paused",
                    Control::Resume => "resumed",
                    Control::Stop => "stopping",
                };
                eprintln!("headroom: {done} the job of pid {}", args.pid);
                return Ok(ExitCode::SUCCESS);
            }
            // Another guard's job: ask the next one. A guard that is gone: the same.
            Err(MarkError::Refused(text)) if !is_not_here(&text) => why = Some(text),
            Err(_) => {}
        }
    }
    let why = why.unwrap_or_else(|| {
        format!(
            "no Headroom guard of yours runs a job with pid {}",
            args.pid
        )
    });
    eprintln!(
        "headroom: error: cannot {} pid {}: {why}",
        control.as_str(),
        args.pid
    );
    Ok(ExitCode::from(2))
}
