//! The monitoring loop shared by `guard` and `watch`: samples in, policy decisions, events
//! on stderr, an optional trace, stopping the job, and the verdict at the end.

use std::io::Write;
use std::process::Child;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use headroom_core::counters::signals;
use headroom_core::counters::Counters;
use headroom_core::guard::{stop_group, stop_tree, Safety, StopReport};
use headroom_core::history::unix_ms;
use headroom_core::jobfile::{JobFile, JobFileState};
use headroom_core::paths::Dirs;
use headroom_core::policy::{
    EndReason, EventGate, GuardConfig, JobEvent, JobState, Observation, Verdict,
};
use headroom_core::process::ProcessIdentity;
use headroom_core::sampler::Sampler;
use headroom_core::trace::{round_t, EventRecord, Record, TraceWriter};
use headroom_core::units::format_bytes;
use serde::Serialize;
use serde_json::Map;

use super::budget::RunArgs;

/// Poll interval used once swap growth passes half the budget.
const NEAR_BUDGET_POLL: Duration = Duration::from_millis(100);

/// Signals the guard itself received (INT, TERM, HUP), counted.
#[derive(Debug, Clone, Default)]
pub struct Interrupts {
    count: Arc<AtomicUsize>,
    last: Arc<AtomicI32>,
}

impl Interrupts {
    /// Catches SIGINT, SIGTERM and SIGHUP, except those ignored when we started (they stay
    /// ignored, as `nohup` intends).
    pub fn install() -> anyhow::Result<Self> {
        let me = Interrupts::default();
        let wanted: Vec<i32> = [signals::SIGINT, signals::SIGTERM, signals::SIGHUP]
            .into_iter()
            .filter(|&s| !signals::is_ignored(s))
            .collect();
        let mut sigs =
            signal_hook::iterator::Signals::new(&wanted).context("installing signal handlers")?;
        let (count, last) = (Arc::clone(&me.count), Arc::clone(&me.last));
        std::thread::Builder::new()
            .name("headroom-signals".into())
            .spawn(move || {
                for sig in sigs.forever() {
                    last.store(sig, Ordering::SeqCst);
                    count.fetch_add(1, Ordering::SeqCst);
                }
            })
            .context("starting the signal thread")?;
        Ok(me)
    }

    /// The first signal received, if any.
    pub fn received(&self) -> Option<i32> {
        (self.count.load(Ordering::SeqCst) > 0).then(|| self.last.load(Ordering::SeqCst))
    }

    /// True once a second signal arrived (escalate to SIGKILL at once).
    pub fn second(&self) -> bool {
        self.count.load(Ordering::SeqCst) >= 2
    }
}

/// What is being watched: a child we started (in its own group) or a running process.
pub enum Target {
    /// A command `headroom guard` started; stopped as a process group.
    Child(Child),
    /// A process picked by pid; stopped with its descendants.
    Process {
        /// Its identity.
        id: ProcessIdentity,
        /// Safety checks for signalling it.
        safety: Safety,
    },
}

impl Target {
    fn poll_exit(&mut self, counters: &Counters) -> Option<EndReason> {
        match self {
            Target::Child(child) => match child.try_wait() {
                Ok(Some(status)) => Some(exit_reason(status)),
                Ok(None) => None,
                Err(_) => Some(EndReason::Vanished),
            },
            Target::Process { id, .. } => (!id.is_alive(counters)).then_some(EndReason::Vanished),
        }
    }

    fn stop(
        &mut self,
        counters: &Counters,
        grace: Duration,
        interrupts: &Interrupts,
    ) -> StopReport {
        let escalate = || interrupts.second();
        match self {
            Target::Child(child) => stop_group(child, grace, &escalate),
            Target::Process { id, safety } => stop_tree(counters, safety, *id, grace, &escalate)
                .unwrap_or_else(|refusal| StopReport {
                    refused: vec![(id.pid, refusal.to_string())],
                    ..StopReport::default()
                }),
        }
    }
}

fn exit_reason(status: std::process::ExitStatus) -> EndReason {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => EndReason::Exited { code },
        (None, Some(signal)) => EndReason::Signaled { signal },
        (None, None) => EndReason::Vanished,
    }
}

/// The outcome of a monitored job.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// The job's command line.
    pub command: String,
    /// Its pid.
    pub pid: u32,
    /// The verdict.
    pub verdict: Verdict,
    /// What stopping it did, if it was stopped.
    pub stop: Option<StopReport>,
    /// The exit code Headroom exits with.
    pub exit_code: i32,
}

/// Publishes a guarded command's progress for the menu-bar app (`paths::Dirs::jobs_dir`):
/// written at start, every 2 s while it runs, and with the verdict at the end. A failure to
/// write is logged once and never stops the guard.
struct Publisher {
    dir: std::path::PathBuf,
    file: JobFile,
    last_write: Option<std::time::Instant>,
    failed: bool,
}

impl Publisher {
    fn new(id: ProcessIdentity, command: &str, cfg: &GuardConfig, swap_start: u64) -> Self {
        let now = unix_ms(SystemTime::now());
        Publisher {
            dir: Dirs::current().jobs_dir(),
            file: JobFile {
                pid: id.pid,
                start_time: id.start_time,
                command: command.to_string(),
                started_at_ms: now,
                updated_at_ms: now,
                swap_budget_bytes: cfg.swap_budget_bytes,
                swap_start_bytes: swap_start,
                swap_growth_bytes: 0,
                peak_footprint_bytes: None,
                state: JobFileState::Running,
                verdict: None,
            },
            last_write: None,
            failed: false,
        }
    }

    fn update(&mut self, job: &JobState, footprint: Option<u64>, force: bool) {
        self.file.swap_growth_bytes = job.peak_growth_bytes();
        if let Some(f) = footprint {
            self.file.peak_footprint_bytes =
                Some(self.file.peak_footprint_bytes.map_or(f, |p| p.max(f)));
        }
        let due = self
            .last_write
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(2));
        if force || due {
            self.file.updated_at_ms = unix_ms(SystemTime::now());
            self.last_write = Some(std::time::Instant::now());
            if let Err(e) = self.file.write_atomic(&self.dir) {
                if !self.failed {
                    tracing::warn!(error = %e, "cannot publish the job for the app");
                    self.failed = true;
                }
            }
        }
    }
}

/// Monitors `target` until it ends (or is stopped); prints events and the verdict.
#[allow(clippy::too_many_arguments)]
pub fn monitor(
    counters: &Counters,
    mut target: Target,
    id: ProcessIdentity,
    command: &str,
    cfg: &GuardConfig,
    guarded: bool,
    run: &RunArgs,
    interrupts: &Interrupts,
) -> anyhow::Result<Outcome> {
    let sampler = Sampler::start(counters.clone(), run.poll).context("starting the sampler")?;
    let samples = sampler.subscribe();
    sampler.track(id);
    let mut trace = match &run.trace {
        Some(path) => {
            let mut w = TraceWriter::create(path)
                .with_context(|| format!("creating {}", path.display()))?;
            let mut meta = Map::new();
            meta.insert("tool".into(), "headroom".into());
            meta.insert("command".into(), command.into());
            meta.insert("pid".into(), id.pid.into());
            w.start(SystemTime::now(), run.poll, meta)?;
            Some(w)
        }
        None => None,
    };
    let swap_start = counters
        .read_system()
        .map(|s| s.swap_used_bytes)
        .context("reading swap at the start")?;
    let mut job = JobState::new(swap_start);
    let mut publisher =
        matches!(target, Target::Child(_)).then(|| Publisher::new(id, command, cfg, swap_start));
    if let Some(p) = publisher.as_mut() {
        p.update(&job, None, true);
    }
    let mut events = EventGate::default();
    let mut cfg = cfg.clone();
    let mut fast = false;
    let started = std::time::Instant::now();
    let ended = loop {
        if let Some(signal) = interrupts.received() {
            // A command we started is stopped with us; a watched process is left alone.
            let report = matches!(target, Target::Child(_))
                .then(|| target.stop(counters, run.grace, interrupts));
            break (EndReason::Interrupted { signal }, report);
        }
        if let Some(end) = target.poll_exit(counters) {
            break (end, None);
        }
        let Ok(sample) = samples.recv_timeout(Duration::from_millis(20)) else {
            continue;
        };
        if let (Some(w), Some(rec)) = (trace.as_mut(), sample.to_trace_record()) {
            w.write(&Record::Sample(rec))?;
        }
        let Some(system) = &sample.system else {
            continue;
        };
        let obs = Observation {
            t: sample.since_start,
            swap_used_bytes: system.swap_used_bytes,
            free_percent: system.free_percent,
            footprint_bytes: sample.footprint_of(&id),
        };
        let stop = job.observe(guarded.then_some(&cfg), &obs);
        if let Some(p) = publisher.as_mut() {
            p.update(&job, obs.footprint_bytes, false);
        }
        let growth = job.growth_bytes(&obs);
        for event in events.observe(&cfg, guarded, growth, &obs) {
            say(&describe(&event, command));
            write_event(trace.as_mut(), &obs, &event)?;
        }
        if guarded && !fast && growth > cfg.swap_budget_bytes / 2 && run.poll > NEAR_BUDGET_POLL {
            fast = true;
            cfg.lookahead = NEAR_BUDGET_POLL;
            sampler.set_interval(NEAR_BUDGET_POLL);
        }
        if let Some(reason) = stop {
            let event = JobEvent::Stopped {
                reason: reason.clone(),
            };
            say(&describe(&event, command));
            write_event(trace.as_mut(), &obs, &event)?;
            if let Some(p) = publisher.as_mut() {
                p.file.state = JobFileState::Stopping;
                p.update(&job, None, true);
            }
            let report = target.stop(counters, run.grace, interrupts);
            break (EndReason::Stopped { reason }, Some(report));
        }
    };
    sampler.stop();
    let (end, report) = ended;
    let exit_code = exit_code(&end);
    let mut verdict = job.verdict(cfg.fits_tolerance_bytes, end);
    verdict.duration = started.elapsed();
    if let Some(p) = publisher.as_mut() {
        p.file.state = JobFileState::Finished;
        p.file.verdict = Some(verdict.clone());
        p.update(&job, None, true);
    }
    let finished = JobEvent::Finished {
        verdict: verdict.clone(),
    };
    say(&describe(&finished, command));
    if let Some(w) = trace.as_mut() {
        let mut meta = Map::new();
        meta.insert("verdict".into(), serde_json::to_value(&verdict)?);
        w.end(meta)?;
    }
    Ok(Outcome {
        command: command.to_string(),
        pid: id.pid,
        verdict,
        stop: report,
        exit_code,
    })
}

/// Exit codes of stageload guard: 3 stopped, 128+N on a signal, else the command's own.
fn exit_code(end: &EndReason) -> i32 {
    match end {
        EndReason::Exited { code } => *code,
        EndReason::Signaled { signal } | EndReason::Interrupted { signal } => 128 + signal,
        EndReason::Stopped { .. } => i32::from(super::guard::EXIT_STOPPED),
        EndReason::Vanished => 0,
    }
}

fn write_event(
    trace: Option<&mut TraceWriter<std::fs::File>>,
    obs: &Observation,
    event: &JobEvent,
) -> anyhow::Result<()> {
    if let Some(w) = trace {
        w.write(&Record::Event(EventRecord {
            kind: "guard".into(),
            t: round_t(obs.t),
            note: Some(serde_json::to_string(event)?),
            ..EventRecord::default()
        }))?;
    }
    Ok(())
}

/// One line for people about an event (the same words as the app's notifications).
pub fn describe(event: &JobEvent, command: &str) -> String {
    match event {
        JobEvent::SwapGrew { growth_bytes, .. } => format!(
            "swap grew {} while {command} runs: it doesn't fit",
            format_bytes(*growth_bytes)
        ),
        JobEvent::Warning {
            growth_bytes,
            budget_bytes,
        } => format!(
            "warning: swap grew {} of the {} budget; {command} will be stopped at the budget",
            format_bytes(*growth_bytes),
            format_bytes(*budget_bytes)
        ),
        JobEvent::Stopped { reason } => {
            format!("stopping {command}: {reason} (SIGTERM, SIGKILL after the grace period)",)
        }
        JobEvent::Finished { verdict } => format!("{command}: {verdict}"),
    }
}

/// A line on stderr, prefixed.
pub fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "headroom: {line}");
}

/// `--json` output.
pub fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}
