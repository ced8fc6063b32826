//! The command a driver starts: its own process group, the terminal handed over, its exit
//! status reaped here and nowhere else (never by std), and a Ctrl-Z told from Headroom's own
//! pause by the signal that stopped the leader.

use std::os::unix::process::CommandExt;

use super::{DriveError, Launch};
use crate::socket::MARK_ENV;
use headroom_model::counters::JOB_MARK_ENV;
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::CounterSource;
use headroom_os::members::Members;
use headroom_os::unix::jobctl;
use headroom_os::unix::jobctl::{ChildStatus, Terminal};
use headroom_os::unix::signals::{SIGTSTP, SIGTTIN, SIGTTOU};
use headroom_rules::policy::EndReason;

/// A command this driver started.
#[derive(Debug)]
pub(super) struct Spawned {
    pub(super) leader: u32,
    pub(super) terminal: Option<Terminal>,
    pub(super) exit: Option<EndReason>,
}

/// What reaping found about the leader.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reaped {
    /// It exited (or a signal ended it).
    Exit(EndReason),
    /// The terminal stopped it (Ctrl-Z, or reading from the background): the user
    /// suspended the job, and the driver with it.
    TerminalStop,
}

impl Spawned {
    /// Reaps whatever changed state (adopted orphans of the job included); says what
    /// happened to the leader, if anything. A SIGSTOP of the leader (Headroom's own pause,
    /// or anyone's `kill -STOP`) is not a Ctrl-Z and is left to the engine's checks.
    pub(super) fn reap(&mut self) -> Option<Reaped> {
        let mut news = None;
        while let Ok(Some((pid, status))) = jobctl::reap_any() {
            if pid != self.leader {
                continue; // an adopted orphan of the job, or a stopped member
            }
            let end = match status {
                ChildStatus::Exited(code) => EndReason::Exited { code },
                ChildStatus::Signaled(signal) => EndReason::Signaled { signal },
                ChildStatus::Stopped(signal) if [SIGTSTP, SIGTTIN, SIGTTOU].contains(&signal) => {
                    news = Some(Reaped::TerminalStop);
                    continue;
                }
                ChildStatus::Stopped(_) => continue,
            };
            self.exit = Some(end.clone());
            news = Some(Reaped::Exit(end));
        }
        news
    }

    /// The job ended: the terminal is ours again, as it was; the last children reaped.
    pub(super) fn finish(&mut self) {
        if let Some(terminal) = &self.terminal {
            let _ = terminal.take_back();
            terminal.restore_settings();
        }
        let _ = self.reap();
    }
}

/// The mark this guard gives the command it starts (see `members.rs`): its own identity,
/// `PID.START`.
fn own_mark(counters: &impl CounterSource) -> String {
    let pid = std::process::id();
    let start_time = counters.start_time(pid).unwrap_or(0);
    Members::mark_of(ProcessIdentity { pid, start_time })
}

/// The value of [`JOB_MARK_ENV`] for the command: the marks it inherited (a guard inside a
/// guard), then `mark`.
fn with_mark(inherited: Option<String>, mark: &str) -> String {
    match inherited.filter(|v| !v.is_empty()) {
        Some(outer) => format!("{outer}:{mark}"),
        None => mark.to_string(),
    }
}

/// Starts the command of `launch` (its own process group, the terminal handed over, the
/// mark socket in its environment), or takes the watched process; returns the job's members.
pub(super) fn launch_job(
    counters: &impl CounterSource,
    launch: Launch,
    mark_socket: Option<&std::path::Path>,
) -> Result<(Members, Option<Spawned>, Tracking), DriveError> {
    let (mut command, terminal) = match launch {
        Launch::Process(id) => {
            let why = "a running process: its cgroup is not Headroom's to change".to_string();
            return Ok((Members::of_process(id), None, Tracking::Processes { why }));
        }
        Launch::Command { command, terminal } => (command, terminal),
    };
    let reaper = jobctl::become_subreaper();
    let made = own_cgroup(counters, &mut command);
    let tracking = match &made {
        Ok(cgroup) => Tracking::Cgroup {
            cgroup: cgroup.path.clone(),
            memory: cgroup.memory,
        },
        Err(why) => Tracking::Processes { why: why.clone() },
    };
    let cgroup = made.ok();
    command.process_group(0);
    if let Some(path) = mark_socket {
        command.env(MARK_ENV, path);
    }
    let job_mark = own_mark(counters);
    command.env(
        JOB_MARK_ENV,
        with_mark(std::env::var(JOB_MARK_ENV).ok(), &job_mark),
    );
    if let Some(terminal) = &terminal {
        terminal.hand_over_at_spawn(&mut command);
    }
    headroom_os::counters::limits::restore_for_child(&mut command);
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            #[cfg(target_os = "linux")]
            if let Some(cgroup) = &cgroup {
                headroom_os::unix::cgroup::remove(cgroup, headroom_os::unix::cgroup::REMOVE_WAIT);
            }
            return Err(DriveError::Spawn(e));
        }
    };
    let leader = child.id();
    drop(child); // reaped by `Spawned::reap`, never by std
    if let Some(terminal) = &terminal {
        let _ = terminal.give_to(leader);
    }
    // Not reaped yet, so readable even if it already exited (a zombie).
    let id = ProcessIdentity {
        pid: leader,
        start_time: counters.start_time_even_exited(leader).unwrap_or(0),
    };
    let spawned = Spawned {
        leader,
        terminal,
        exit: None,
    };
    let reaper = reaper.then(std::process::id);
    let members = Members::of_command(id, reaper).with_mark(job_mark);
    let members = match cgroup {
        Some(cgroup) => members.in_cgroup(cgroup),
        None => members,
    };
    Ok((members, Some(spawned), tracking))
}

/// `HEADROOM_JOB_CGROUP=off`: no cgroup of the job's own, its processes tracked as on macOS.
#[cfg(target_os = "linux")]
const JOB_CGROUP_ENV: &str = "HEADROOM_JOB_CGROUP";

/// A cgroup of the job's own beneath ours, joined by `command` at its start, where Headroom
/// may make one (Linux: root, or a delegated subtree); else why not, said once (`-v`).
#[cfg(target_os = "linux")]
fn own_cgroup(
    counters: &impl CounterSource,
    command: &mut std::process::Command,
) -> Result<headroom_model::counters::JobCgroup, String> {
    use headroom_os::unix::cgroup;
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let made = if std::env::var_os(JOB_CGROUP_ENV).is_some_and(|v| v == "off") {
        Err(format!("turned off ({JOB_CGROUP_ENV}=off)"))
    } else {
        counters.own_cgroup_dirs().and_then(|own| {
            let own = own.ok_or_else(|| "no memory cgroup is mounted".to_string())?;
            let orphans = cgroup::remove_orphans(&own);
            if orphans > 0 {
                tracing::info!(
                    orphans,
                    "removed the empty cgroups of jobs whose guard was killed"
                );
            }
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let job = cgroup::create(&own, &cgroup::job_name(std::process::id(), n))?;
            match cgroup::join_at_spawn(command, &job) {
                Ok(()) => Ok(job),
                Err(e) => {
                    cgroup::remove(&job, cgroup::REMOVE_WAIT);
                    Err(format!("cannot join {}: {e}", job.path))
                }
            }
        })
    };
    match &made {
        Ok(job) => tracing::info!(cgroup = %job.path, "the job runs in a cgroup of its own"),
        Err(why) => tracing::info!(%why, "no cgroup of the job's own: tracking its processes"),
    }
    made
}

/// Elsewhere there are no cgroups: the job is tracked by its processes.
#[cfg(not(target_os = "linux"))]
fn own_cgroup(
    _counters: &impl CounterSource,
    _command: &mut std::process::Command,
) -> Result<headroom_model::counters::JobCgroup, String> {
    Err("this OS has no cgroups".to_string())
}

/// How a job's members are found: its own cgroup (exact), or its processes (its group, its
/// descendants, and on macOS its lineage).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "by", rename_all = "lowercase")]
pub enum Tracking {
    /// A cgroup of its own.
    Cgroup {
        /// Its path.
        cgroup: String,
        /// True with the memory controller (the kernel's memory numbers); false: a v2
        /// cgroup for membership and the freezer, its memory its members'.
        memory: bool,
    },
    /// Its processes.
    Processes {
        /// Why not a cgroup of its own.
        why: String,
    },
}
