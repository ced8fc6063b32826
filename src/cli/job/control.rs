//! `headroom resume PID`, `headroom pause PID`, `headroom stop PID`: act on a job that a
//! guard (`headroom guard`, `headroom watch --guard`) or the app runs, from another terminal.
//! Each Headroom process answers only for its own job (see `headroom_core::socket`); its
//! engine decides whether the request makes sense now. A job whose guard is gone (killed
//! with SIGKILL: its job file says so, see `headroom_core::jobfile`) is taken over for the
//! request and verified as its guard would (`headroom_core::takeover`); this file says what
//! it did. A guard still waiting in line (`guard --wait-fit`, see `headroom queue`) is
//! stopped by its own pid.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use headroom_core::jobfile::JobFile;
use headroom_core::socket::{is_not_here, send_control, sockets, MarkError, Sent};
use headroom_core::takeover::take_over;
use headroom_model::counters::RunState;
use headroom_model::effects::Control;
use headroom_model::effects::JobSignal;
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::enforce::{signal_each, Safety};
use headroom_os::paths::Dirs;
use headroom_os::unix::signals::Kernel;
use headroom_rules::defaults::GRACE;
use headroom_rules::policy::EndReason;

use crate::cli::exit;
use crate::cli::output::say;

/// Arguments of `headroom resume`, `pause` and `stop`.
#[derive(Debug, Args)]
#[command(after_help = "\
PID is the job's process id, as the guard's lines and the app show it; for a guard still \
waiting in line (`headroom queue`), the guard's own pid, which `stop` takes out of the queue. \
Exit codes: 0 done (or \
handed to a busy guard, which says so; `stop` returns once the job is gone); 2 no guard of \
yours runs a job with that pid, or the job is not in a state for it (resume: not paused); 6 \
the job was not stopped, paused or resumed whole (a job whose guard is gone: each process \
left is named; a live guard's job still there when its guard ended). A job whose guard is gone \
(killed outright) is taken over for the request: its own cgroup, or every process of it, \
continued, paused or stopped under the same safety rules and checked as its guard checks, \
before this command returns.")]
pub struct ControlArgs {
    /// The job's process id.
    #[arg(value_name = "PID")]
    pid: u32,
}

/// Runs `headroom resume|pause|stop PID`.
pub fn run(control: Control, args: &ControlArgs) -> anyhow::Result<ExitCode> {
    let dirs = Dirs::current();
    let mut why = None;
    let sockets = sockets(&dirs).unwrap_or_else(|e| {
        why = Some(e.to_string());
        Vec::new()
    });
    for socket in sockets {
        match send_control(&socket, control, args.pid) {
            Ok(Sent::Done) if control == Control::Stop => {
                return Ok(stopped_by_guard(&dirs, args.pid))
            }
            Ok(Sent::Done) => {
                say(&format!("{} the job of pid {}", done(control), args.pid));
                return Ok(exit::status(exit::OK));
            }
            Ok(Sent::Queued) => {
                say(&format!(
                    "asked the guard of pid {} to {} its job; it is busy and will, if the job \
                     is still in a state for it",
                    args.pid,
                    control.as_str()
                ));
                return Ok(exit::status(exit::OK));
            }
            // Another guard's job: ask the next one. A guard that is gone: the same.
            Err(MarkError::Refused(text)) if !is_not_here(&text) => why = Some(text),
            // Another user's socket in our folder: said, never talked to.
            Err(e @ MarkError::Stranger { .. }) => why = Some(e.to_string()),
            Err(_) => {}
        }
    }
    if why.is_none() {
        let counters = Counters::new();
        let orphan = JobFile::list(&dirs.jobs_dir(), &counters)
            .into_iter()
            .find(|f| f.pid == args.pid && f.unguarded);
        if let Some(file) = orphan {
            return unguarded(&counters, &dirs, &file, control);
        }
        if let Some(place) = crate::cli::job::wait_fit::waiting_guard(&counters, args.pid) {
            return waiting(&counters, &place, control);
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
    Ok(exit::status(exit::INVALID))
}

/// How long `stop` waits at most for a live guard to end the job (its grace, the wait for
/// SIGKILL and its last checks take seconds; a guard that is itself stopped would take for
/// ever).
const STOP_WAIT_AT_MOST: Duration = Duration::from_secs(600);

/// A live guard took the stop of the job of `pid`: says "stopped" once the job has ended
/// (its file says so, or is gone with the job), as the stop of a job whose guard is gone
/// does; a job that ignores SIGTERM runs through its guard's grace first. Exit 6, said
/// plainly with every process left, when the guard's stop could not hold, when the guard
/// ended first, or after [`STOP_WAIT_AT_MOST`].
fn stopped_by_guard(dirs: &Dirs, pid: u32) -> ExitCode {
    let counters = Counters::new();
    let start = Instant::now();
    say(&format!(
        "stopping the job of pid {pid}: its guard took the stop"
    ));
    loop {
        let files = JobFile::list(&dirs.jobs_dir(), &counters);
        let file = files.iter().find(|f| f.pid == pid);
        let ended = file.map_or_else(
            || {
                counters
                    .process_state(pid)
                    .map_or(true, |s| s.run == RunState::Dead)
            },
            |f| f.state.ended(),
        );
        if ended {
            let survivors = file
                .and_then(|f| f.verdict.as_ref())
                .map(|v| match &v.ended {
                    EndReason::NotStopped { survivors, .. } => survivors.clone(),
                    _ => Vec::new(),
                })
                .unwrap_or_default();
            if survivors.is_empty() {
                say(&format!("stopped the job of pid {pid}"));
                return exit::status(exit::OK);
            }
            for survivor in &survivors {
                say(&format!(
                    "warning: cannot stop pid {}: {}",
                    survivor.pid, survivor.why
                ));
            }
            let pids: Vec<String> = survivors.iter().map(|s| s.pid.to_string()).collect();
            say(&format!(
                "the job of pid {pid} was NOT stopped: {} of its processes still run: {}",
                pids.len(),
                pids.join(", ")
            ));
            return exit::status(exit::NOT_STOPPED);
        }
        if file.is_some_and(|f| f.unguarded) {
            say(&format!(
                "the job of pid {pid} was NOT stopped: its guard ended first (`headroom stop \
                 {pid}` again stops it without its guard)"
            ));
            return exit::status(exit::NOT_STOPPED);
        }
        if start.elapsed() >= STOP_WAIT_AT_MOST {
            say(&format!(
                "the job of pid {pid} was NOT seen stopped within {} s: its guard goes on \
                 stopping it (`headroom status` shows it)",
                STOP_WAIT_AT_MOST.as_secs()
            ));
            return exit::status(exit::NOT_STOPPED);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn done(control: Control) -> &'static str {
    match control {
        Control::Pause | Control::Yield => "paused",
        Control::Resume => "resumed",
        Control::Stop => "stopped",
    }
}

/// `control` on a guard that waits in line (`guard --wait-fit`): stop takes it out of the
/// queue (SIGTERM to the guard, under the safety rules: it exits 143 and leaves no state);
/// it has no job to pause or resume yet.
fn waiting(
    counters: &Counters,
    place: &headroom_core::queue::Place,
    control: Control,
) -> anyhow::Result<ExitCode> {
    let pid = place.guard.pid;
    if control != Control::Stop {
        eprintln!(
            "headroom: error: cannot {} pid {pid}: it is a guard waiting in line, with no job \
             yet (`headroom stop {pid}` takes it out of the queue)",
            control.as_str()
        );
        return Ok(exit::status(exit::INVALID));
    }
    let safety = Safety::new(counters);
    let report = signal_each(
        counters,
        &Kernel,
        &safety,
        &[place.guard],
        JobSignal::Terminate,
    );
    if let Some(refused) = report.refused.first() {
        eprintln!("headroom: error: cannot stop pid {pid}: {}", refused.why);
        return Ok(exit::status(exit::INVALID));
    }
    say(&format!(
        "stopped the guard of pid {pid}, waiting in line for {}",
        headroom_model::units::printable(&place.key)
    ));
    Ok(exit::status(exit::OK))
}

/// `control` on a job whose guard is gone: carried out and verified in core
/// ([`take_over`]); said here, with an honest exit code: 0 when it holds, 6 when processes
/// of the job were left running (stop, pause) or stopped (resume), each named with why.
fn unguarded(
    counters: &Counters,
    dirs: &Dirs,
    file: &JobFile,
    control: Control,
) -> anyhow::Result<ExitCode> {
    let safety = Safety::new(counters);
    let verb = control.as_str();
    let taken = match take_over(counters, &safety, &dirs.jobs_dir(), file, control, GRACE) {
        Ok(taken) => taken,
        Err(e) => {
            eprintln!("headroom: error: cannot {verb} pid {}: {e}", file.pid);
            return Ok(exit::status(exit::INVALID));
        }
    };
    for problem in taken.file_error.iter().chain(&taken.cgroup_left) {
        say(&format!("warning: {problem}"));
    }
    for survivor in &taken.survivors {
        say(&format!(
            "warning: cannot {verb} pid {}: {}",
            survivor.pid, survivor.why
        ));
    }
    let processes = format!(
        "{} process{}",
        taken.processes,
        if taken.processes == 1 { "" } else { "es" }
    );
    if taken.done {
        say(&format!(
            "{} the job of pid {} (its guard is gone): {processes}",
            done(control),
            file.pid
        ));
        return Ok(exit::status(exit::OK));
    }
    let pids: Vec<String> = taken.survivors.iter().map(|s| s.pid.to_string()).collect();
    say(&format!(
        "the job of pid {} (its guard is gone) was NOT {}: {} of its {processes} {}: {}",
        file.pid,
        done(control),
        pids.len(),
        if control == Control::Resume {
            "are still stopped"
        } else {
            "still run"
        },
        pids.join(", ")
    ));
    Ok(exit::status(exit::NOT_STOPPED))
}
