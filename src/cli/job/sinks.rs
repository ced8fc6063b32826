//! The sinks that show a job in a terminal and write its trace, and the set of them a job
//! gets ([`job_sinks`]: with the job file and the report). Each runs on an output thread of
//! the driver's (`headroom_core::drive::Outputs`); nothing here judges a job.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use headroom_core::drive::Sink;
use headroom_core::jobfile::Publisher;
use headroom_core::sampler::recorded::ToTrace;
use headroom_core::trace::{
    round_t, utc_string, EventRecord, Record, RecordedLimits, RunRecord, StartRecord, TraceWriter,
    STAGE_END,
};
use headroom_core::words;
use headroom_model::process::ProcessIdentity;
use headroom_model::units::printable;
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::paths::Dirs;
use headroom_os::unix::fifo;
use headroom_rules::engine::JobView;
use headroom_rules::policy::JobEvent;
use headroom_rules::policy::Limits;
use headroom_rules::sample::Sample;
use headroom_rules::stages::{Reported, MAX_STAGES};
use serde_json::Map;

use crate::cli::output::write_line;

/// Lines on stderr: each event (a stage that repeats and a flood of reports, in short:
/// [`Printer::shown`]), the problems, the verdict. Command lines are printed with
/// control characters escaped (a watched process's argv is someone else's text).
#[derive(Debug)]
pub struct Printer {
    command: String,
    /// The run's prediction: its verdict line says how the run compared.
    compared: Option<crate::cli::past::runs::Compared>,
    /// Stage names whose line was shown (see [`Printer::shown`]).
    stages_seen: HashSet<String>,
    /// Stage names whose end's line was shown: once per name, as their beginning.
    stages_ended: HashSet<String>,
    /// The line saying that repeated stages are not shown was.
    said_repeats: bool,
    /// The window of reports under way: when it began and how many of its lines were shown;
    /// and how many reports since were not.
    reports_window: (Duration, u32),
    reports_not_shown: u64,
}

impl Printer {
    /// A printer for `command`, whose verdict line compares the run with `compared`.
    pub fn new(command: &str, compared: Option<crate::cli::past::runs::Compared>) -> Self {
        Printer {
            command: printable(command).into_owned(),
            compared,
            stages_seen: HashSet::new(),
            stages_ended: HashSet::new(),
            said_repeats: false,
            reports_window: (Duration::ZERO, 0),
            reports_not_shown: 0,
        }
    }

    /// Whether `event` at `t` gets its line: a job that marks in a loop or reports
    /// thousands of events must not flood the terminal. A stage's line is shown the first
    /// time its name begins (once, a line says the repeats are not shown: the verdict sums
    /// them per name); reports at most [`REPORTS_PER_WINDOW`] a [`REPORT_WINDOW`], the count
    /// of those not shown said with the next one that is, or before the verdict.
    fn shown(&mut self, t: Duration, event: &JobEvent) -> std::io::Result<bool> {
        match event {
            JobEvent::Stage { stage } => {
                if self.stages_seen.contains(stage) {
                    if !std::mem::replace(&mut self.said_repeats, true) {
                        write_line(&format!(
                            "stage {stage} begins again: stages that repeat are not shown again \
                             (the verdict sums each stage's visits)"
                        ))?;
                    }
                    return Ok(false);
                }
                if self.stages_seen.len() < MAX_STAGES {
                    self.stages_seen.insert(stage.clone());
                }
                Ok(true)
            }
            JobEvent::StageEnded { stage } => Ok(self.stages_seen.contains(stage)
                && self.stages_ended.len() < MAX_STAGES
                && self.stages_ended.insert(stage.clone())),
            JobEvent::Reported { .. } => {
                let (since, shown) = self.reports_window;
                let in_window = t < since + REPORT_WINDOW;
                if in_window && shown >= REPORTS_PER_WINDOW {
                    self.reports_not_shown += 1;
                    return Ok(false);
                }
                self.reports_window = if in_window {
                    (since, shown + 1)
                } else {
                    (t, 1)
                };
                self.said_reports_not_shown()?;
                Ok(true)
            }
            JobEvent::Finished { .. } => {
                self.said_reports_not_shown()?;
                Ok(true)
            }
            _ => Ok(true),
        }
    }

    fn said_reports_not_shown(&mut self) -> std::io::Result<()> {
        let n = std::mem::take(&mut self.reports_not_shown);
        if n > 0 {
            write_line(&format!("{n} more events (not shown)"))?;
        }
        Ok(())
    }
}

/// Reports (load, release, mark events) shown at most in one window...
const REPORTS_PER_WINDOW: u32 = 10;
/// ... of this long.
const REPORT_WINDOW: Duration = Duration::from_secs(1);

impl Sink for Printer {
    fn name(&self) -> String {
        "standard error".into()
    }

    fn is_terminal(&self) -> bool {
        true
    }

    fn wants_samples(&self) -> bool {
        false
    }

    fn event(&mut self, t: Duration, event: &JobEvent, view: &JobView) -> std::io::Result<()> {
        if !self.shown(t, event)? {
            return Ok(());
        }
        let mut line = words::line(event, &self.command);
        if let (JobEvent::Finished { verdict }, Some(compared)) = (event, &self.compared) {
            line.push_str(&format!("; {}", compared.words(verdict)));
        }
        write_line(&line)?;
        if let JobEvent::Paused { .. } = event {
            let pid = view.pid;
            write_line(&format!(
                "`headroom resume {pid}` continues it, `headroom stop {pid}` (or Ctrl-C here) stops it"
            ))?;
        }
        Ok(())
    }

    fn problem(&mut self, text: &str) {
        let _ = write_line(&format!("warning: {text}"));
    }
}

/// The job's JSONL trace: every reading the guard judged (at the user's poll interval, and
/// faster near the budget, where the guard checks faster) with every fact its rules read of
/// it (`headroom_core::sampler::recorded`), events, and the verdict at the end. `t` strictly
/// increases.
#[derive(Debug)]
pub struct TraceSink {
    path: PathBuf,
    writer: TraceWriter<std::fs::File>,
    /// The `start` record (its interval, command, limits and where the run is), written
    /// once the job has started: with the memory its guard counts from.
    start: Option<StartRecord>,
    last_t: Option<Duration>,
    /// The `end` record, held from the verdict until the outputs finish: the sample that saw
    /// the job end reaches the outputs after its events, and the trace ends after it.
    end: Option<Map<String, serde_json::Value>>,
}

impl TraceSink {
    /// Creates the trace file: done before the job starts, so a trace that cannot be
    /// written stops nothing. A FIFO must have a reader already (else an error at once,
    /// never a wait). The `start` record follows when the job has started.
    pub fn create(
        path: &Path,
        command: &str,
        poll: Duration,
        limits: &Limits,
    ) -> anyhow::Result<Self> {
        let file = fifo::create_for_writing(path)
            .map_err(|e| crate::cli::exit::Invalid(format!("--trace {}: {e}", path.display())))?;
        let run = Counters::new()
            .read_system()
            .map(|system| RunRecord::of_system(&system))
            .unwrap_or_default();
        let start = StartRecord {
            command: Some(command.into()),
            run,
            limits: Some(RecordedLimits::of(limits)),
            ..StartRecord::headroom(SystemTime::now(), poll)
        };
        Ok(TraceSink {
            path: path.to_path_buf(),
            writer: TraceWriter::new(file),
            start: Some(start),
            last_t: None,
            end: None,
        })
    }

    /// Writes the `start` record, once: at the job's start, with the memory it started from
    /// (what its guard counts from) when its view is known.
    fn write_start(&mut self, view: Option<&JobView>) -> std::io::Result<()> {
        let Some(mut start) = self.start.take() else {
            return Ok(());
        };
        if let Some(view) = view {
            start.run.swap_start_bytes = Some(view.swap_start_bytes);
            start.run.free_start_percent = view.free_start_percent;
            start.run.in_use_start_bytes = view.in_use_start_bytes;
        }
        start.utc = Some(utc_string(SystemTime::now()));
        self.writer.start(&start)
    }

    fn write_sample(&mut self, sample: &Sample) -> std::io::Result<()> {
        self.write_start(None)?;
        let t = sample.since_start;
        if self.last_t.is_some_and(|last| t <= last) {
            return Ok(()); // `t` strictly increases
        }
        if let Some(error) = &sample.error {
            self.writer.write(&Record::Error {
                t: Some(round_t(t)),
                error: error.clone(),
            })?;
        }
        if let Some(record) = sample.to_trace_record() {
            self.writer.write(&Record::Sample(record))?;
            self.last_t = Some(t);
        }
        Ok(())
    }
}

impl Sink for TraceSink {
    fn name(&self) -> String {
        format!("the trace {}", self.path.display())
    }

    fn started(&mut self, view: &JobView) -> std::io::Result<()> {
        self.write_start(Some(view))
    }

    fn sample(&mut self, sample: &Sample, _view: &JobView) -> std::io::Result<()> {
        // Every reading the guard judged, also the faster checks near the budget: the
        // trace's replay then judges the very readings the live guard did.
        self.write_sample(sample)
    }

    fn finish(&mut self, _view: &JobView) -> std::io::Result<()> {
        // The verdict's `end` last: nothing follows it in a trace.
        match self.end.take() {
            Some(meta) => self.writer.end(meta),
            None => Ok(()),
        }
    }

    fn event(&mut self, t: Duration, event: &JobEvent, _view: &JobView) -> std::io::Result<()> {
        self.write_start(None)?;
        if let JobEvent::Finished { verdict } = event {
            let mut meta = Map::new();
            meta.insert("verdict".into(), serde_json::to_value(verdict)?);
            self.end = Some(meta);
            return Ok(());
        }
        let what = match event {
            // stageload's own stage event, so its tools read Headroom's traces too.
            JobEvent::Stage { stage } => Reported {
                stage: Some(stage.clone()),
                ..Reported::bare("stage")
            },
            // Headroom's own: stageload's tools skip a kind they do not know.
            JobEvent::StageEnded { stage } => Reported {
                stage: Some(stage.clone()),
                ..Reported::bare(STAGE_END)
            },
            // stageload's own load/reload/release/mark event, as stageload writes it.
            JobEvent::Reported { report } => report.clone(),
            _ => Reported {
                note: Some(serde_json::to_string(event)?),
                ..Reported::bare("guard")
            },
        };
        self.writer.write(&Record::Event(EventRecord {
            t: round_t(t),
            what,
        }))
    }
}

/// A job's sinks: the lines on stderr, the job file (naming this process as its guard, so
/// that the job is seen unguarded if this process dies), the trace and the report when
/// asked for.
pub fn job_sinks(
    counters: &headroom_os::counters::Counters,
    command_line: &str,
    trace: Option<TraceSink>,
    report: Option<crate::cli::job::report::ReportSink>,
    compared: Option<crate::cli::past::runs::Compared>,
) -> Vec<Box<dyn Sink>> {
    let me = std::process::id();
    let guard = ProcessIdentity {
        pid: me,
        start_time: counters.start_time(me).unwrap_or(0),
    };
    let publisher = Publisher::new(Dirs::current().jobs_dir(), guard);
    let mut sinks: Vec<Box<dyn Sink>> = vec![
        Box::new(Printer::new(command_line, compared)),
        Box::new(publisher),
    ];
    if let Some(trace) = trace {
        sinks.push(Box::new(trace));
    }
    if let Some(report) = report {
        sinks.push(Box::new(report));
    }
    sinks
}
