//! Which stage grew swap: per-stage figures of a job, from its stage marks and samples.
//!
//! A stage runs from its mark to the next one. Its swap growth is the highest swap in use
//! within it minus swap in use at its start (the last reading before the mark, or its first
//! reading when there was none), so a stage is charged for what it added, not for what came
//! before; its cumulative growth is the same peak minus swap at the job's start. A job that
//! marks the same names again and again (a training loop: `forward`, `backward`, `optimizer`
//! at every step) has one entry per name: each visit's growth and time are added to its
//! name's, its cumulative growth is the highest of any visit, and the cap
//! ([`MAX_STAGES`]) is on distinct names, never on marks. Pure: the
//! job engine feeds it live, `trace summary` feeds it a recorded trace's samples and stage
//! events, so both attribute growth the same way.

use serde::{Deserialize, Serialize};

use headroom_model::units::{bounded_bytes, bounded_seconds};

/// The figures of one stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageFigures {
    /// Stage name, as marked.
    pub stage: String,
    /// When it first began, seconds on the job's (or trace's) clock.
    pub start_seconds: f64,
    /// Swap in use at its (first) start.
    pub swap_start_bytes: u64,
    /// Highest swap in use within it minus swap at its start (0 if it never rose), each
    /// visit's added.
    pub swap_growth_bytes: u64,
    /// Highest swap in use within it minus swap at the job's start (the highest of its
    /// visits).
    pub cumulative_growth_bytes: u64,
    /// Peak footprint within it, when measured.
    pub peak_footprint_bytes: Option<u64>,
    /// Lowest system free memory within it, percent.
    pub lowest_free_percent: Option<f64>,
    /// Times the job entered it.
    #[serde(default = "one_visit")]
    pub visits: u32,
    /// Seconds spent in it, every visit's added (up to the last reading or mark).
    #[serde(default)]
    pub seconds: f64,
}

fn one_visit() -> u32 {
    1
}

impl StageFigures {
    /// The stage's name for a chart: with the swap it added when that passed
    /// `tolerance_bytes` (`decode +6.3 GiB`), else just the name.
    pub fn label(&self, tolerance_bytes: u64) -> String {
        if self.swap_growth_bytes > tolerance_bytes {
            let growth = i64::try_from(self.swap_growth_bytes).unwrap_or(i64::MAX);
            format!(
                "{} {}",
                self.stage,
                headroom_model::units::format_delta_bytes(growth)
            )
        } else {
            self.stage.clone()
        }
    }
}

/// One reading, for [`StageTracker::observe`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Seconds on the job's clock.
    pub t_seconds: f64,
    /// Swap in use.
    pub swap_used_bytes: u64,
    /// The job's footprint, if measured.
    pub footprint_bytes: Option<u64>,
    /// System free memory, percent.
    pub free_percent: f64,
}

/// What a job reported besides its stages, as stageload's events name it: a model loaded,
/// loaded again or released (`name`, `nbytes`, how long the load took), or a free-text mark.
/// It goes to the job's trace as an `event` line of the same `kind`; the engine decides
/// nothing on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reported {
    /// `load`, `reload`, `release` or `mark` ([`REPORTED_KINDS`]).
    pub kind: String,
    /// The model or object, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The stage the job says it is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// Bytes loaded or released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbytes: Option<u64>,
    /// Seconds a load took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Free text (a mark's label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The kinds a job may report ([`Reported`]); a stage is a mark of its own.
pub const REPORTED_KINDS: [&str; 4] = ["load", "reload", "release", "mark"];

impl Reported {
    /// Checks a report from a job: a known kind, names like a stage's (see `check_name`),
    /// a load time and a size within the bounds a trace holds ([`bounded_seconds`],
    /// [`bounded_bytes`]).
    pub fn check(self) -> Result<Reported, String> {
        if !REPORTED_KINDS.contains(&self.kind.as_str()) {
            return Err(format!(
                "unknown event kind '{}': expected one of {}",
                self.kind,
                REPORTED_KINDS.join(", ")
            ));
        }
        for text in [&self.name, &self.stage, &self.note].into_iter().flatten() {
            check_name(text)?;
        }
        self.check_bounds()
            .map_err(|why| format!("an event's {why}"))?;
        Ok(self)
    }

    /// A report of `kind` with nothing else said.
    pub fn bare(kind: &str) -> Self {
        Reported {
            kind: kind.to_string(),
            name: None,
            stage: None,
            nbytes: None,
            seconds: None,
            note: None,
        }
    }

    /// Its load time and size within the bounds a trace holds ([`bounded_seconds`],
    /// [`bounded_bytes`]): the one check both the control socket (on a report) and the trace
    /// reader (on an `event` line) make, so what the guard writes its own readers read.
    pub fn check_bounds(&self) -> Result<(), String> {
        if let Some(seconds) = self.seconds {
            bounded_seconds(seconds).map_err(|why| format!("seconds: {why}"))?;
        }
        if let Some(nbytes) = self.nbytes {
            bounded_bytes(nbytes).map_err(|why| format!("nbytes: {why}"))?;
        }
        Ok(())
    }
}

/// Longest stage (or reported) name, bytes.
pub const MAX_NAME_BYTES: usize = 200;

/// A stage name (or a reported name), checked: not empty, at most [`MAX_NAME_BYTES`] once
/// trimmed, no control characters; returns it trimmed.
pub fn check_name(name: &str) -> Result<&str, String> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err("a stage name cannot be empty".into());
    }
    if trimmed.len() > MAX_NAME_BYTES {
        return Err(format!(
            "a stage name is at most {MAX_NAME_BYTES} bytes, not {}",
            trimmed.len()
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err("a stage name cannot hold control characters".into());
    }
    Ok(trimmed)
}

/// Distinct stage names a job may have at most; a mark of a new name past it is refused
/// (and said so); a name already seen is always taken.
pub const MAX_STAGES: usize = 256;

/// Per-stage figures as marks and readings come in, in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageTracker {
    job_swap_start: Option<u64>,
    last_swap: Option<u64>,
    stages: Vec<StageFigures>,
    /// The stage the job is in (an index into `stages`), and its visit so far.
    current: Option<(usize, Visit)>,
}

/// The visit of a stage under way.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Visit {
    /// When it began.
    start_seconds: f64,
    /// Swap in use at its start (`None` until the first reading, when there was none).
    swap_start: Option<u64>,
    /// The highest swap in use within it so far.
    swap_peak: Option<u64>,
    /// The stage's growth and time from its earlier visits.
    growth_before: u64,
    seconds_before: f64,
}

impl StageTracker {
    /// A tracker for a job that started with `swap_start_bytes` in use (`None`: its first
    /// reading).
    pub fn new(swap_start_bytes: Option<u64>) -> Self {
        StageTracker {
            job_swap_start: swap_start_bytes,
            ..StageTracker::default()
        }
    }

    /// A stage named `stage` begins at `t_seconds`; the one before ends. False (and nothing
    /// recorded) for a new name once the job has [`MAX_STAGES`] names: a job that marks in a
    /// loop cannot grow its record, its job file or the verdict without bound.
    pub fn mark(&mut self, stage: &str, t_seconds: f64) -> bool {
        let index = match self.stages.iter().position(|s| s.stage == stage) {
            Some(index) => index,
            None if self.stages.len() >= MAX_STAGES => return false,
            None => {
                self.stages.push(StageFigures {
                    stage: stage.to_string(),
                    start_seconds: t_seconds,
                    swap_start_bytes: 0,
                    swap_growth_bytes: 0,
                    cumulative_growth_bytes: 0,
                    peak_footprint_bytes: None,
                    lowest_free_percent: None,
                    visits: 0,
                    seconds: 0.0,
                });
                self.stages.len() - 1
            }
        };
        if let Some((before, visit)) = self.current {
            self.stages[before].seconds = visit.seconds_at(t_seconds);
        }
        let swap_start = self.last_swap.or(self.job_swap_start);
        let figures = &mut self.stages[index];
        if figures.visits == 0 {
            figures.swap_start_bytes = swap_start.unwrap_or(0);
        }
        figures.visits = figures.visits.saturating_add(1);
        self.current = Some((
            index,
            Visit {
                start_seconds: t_seconds,
                swap_start,
                swap_peak: None,
                growth_before: figures.swap_growth_bytes,
                seconds_before: figures.seconds,
            },
        ));
        true
    }

    /// The stage under way ends at `t_seconds`; what follows is charged to no stage until
    /// the next mark. The stage that ended, if one was under way.
    pub fn end(&mut self, t_seconds: f64) -> Option<&str> {
        let (index, visit) = self.current.take()?;
        self.stages[index].seconds = visit.seconds_at(t_seconds);
        Some(&self.stages[index].stage)
    }

    /// One reading, at or after the last mark.
    pub fn observe(&mut self, r: &Reading) {
        let job_start = *self.job_swap_start.get_or_insert(r.swap_used_bytes);
        self.last_swap = Some(r.swap_used_bytes);
        let Some((index, visit)) = self.current.as_mut() else {
            return;
        };
        let stage = &mut self.stages[*index];
        // No reading before its mark at all: its first reading sets its start.
        let visit_start = *visit.swap_start.get_or_insert_with(|| {
            if stage.visits == 1 {
                stage.swap_start_bytes = r.swap_used_bytes;
            }
            r.swap_used_bytes
        });
        let peak = visit
            .swap_peak
            .map_or(r.swap_used_bytes, |p| p.max(r.swap_used_bytes));
        visit.swap_peak = Some(peak);
        stage.swap_growth_bytes = visit
            .growth_before
            .saturating_add(peak.saturating_sub(visit_start));
        stage.cumulative_growth_bytes = stage
            .cumulative_growth_bytes
            .max(peak.saturating_sub(job_start));
        stage.seconds = visit.seconds_at(r.t_seconds);
        if let Some(f) = r.footprint_bytes {
            stage.peak_footprint_bytes = Some(stage.peak_footprint_bytes.map_or(f, |p| p.max(f)));
        }
        stage.lowest_free_percent = Some(
            stage
                .lowest_free_percent
                .map_or(r.free_percent, |l| l.min(r.free_percent)),
        );
    }

    /// The stages so far, one per name, in the order they first began (empty without marks).
    pub fn stages(&self) -> &[StageFigures] {
        &self.stages
    }

    /// The stage the job is in now, if it marked one.
    pub fn current(&self) -> Option<&StageFigures> {
        self.current.map(|(index, _)| &self.stages[index])
    }
}

impl Visit {
    /// The stage's time in all if this visit lasts until `t_seconds`.
    fn seconds_at(&self, t_seconds: f64) -> f64 {
        self.seconds_before + (t_seconds - self.start_seconds).max(0.0)
    }
}

/// The stages whose own swap growth passed `tolerance_bytes`, for a verdict's words:
/// `denoise +3.5 GiB, decode +6.3 GiB`.
pub fn grew_swap(stages: &[StageFigures], tolerance_bytes: u64) -> Vec<&StageFigures> {
    stages
        .iter()
        .filter(|s| s.swap_growth_bytes > tolerance_bytes)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn reading(t: f64, swap_mib: u64) -> Reading {
        Reading {
            t_seconds: t,
            swap_used_bytes: swap_mib * MIB,
            footprint_bytes: Some(swap_mib * 2 * MIB),
            free_percent: 50.0 - t,
        }
    }

    #[test]
    fn each_stage_is_charged_for_what_it_added() {
        // (t, swap MiB) readings; marks: load at 0, work at 2, decode at 4.
        let mut s = StageTracker::new(Some(100 * MIB));
        s.mark("load", 0.0);
        for (t, swap) in [(0.0, 100), (1.0, 150), (1.5, 140)] {
            s.observe(&reading(t, swap));
        }
        s.mark("work", 2.0);
        for (t, swap) in [(2.0, 140), (3.0, 130)] {
            s.observe(&reading(t, swap));
        }
        s.mark("decode", 4.0);
        for (t, swap) in [(4.0, 130), (5.0, 400), (6.0, 390)] {
            s.observe(&reading(t, swap));
        }
        let got: Vec<(&str, u64, u64)> = s
            .stages()
            .iter()
            .map(|x| {
                (
                    x.stage.as_str(),
                    x.swap_growth_bytes / MIB,
                    x.cumulative_growth_bytes / MIB,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![("load", 50, 50), ("work", 0, 40), ("decode", 270, 300)]
        );
        let decode = &s.stages()[2];
        assert_eq!(decode.swap_start_bytes, 130 * MIB);
        assert_eq!(decode.peak_footprint_bytes, Some(800 * MIB));
        assert_eq!(decode.lowest_free_percent, Some(44.0));
        let grew: Vec<&str> = grew_swap(s.stages(), 64 * MIB)
            .iter()
            .map(|x| x.stage.as_str())
            .collect();
        assert_eq!(grew, vec!["decode"]);
    }

    #[test]
    fn after_its_end_a_stage_is_charged_nothing() {
        let mut s = StageTracker::new(Some(100 * MIB));
        s.mark("train", 0.0);
        for (t, swap) in [(0.0, 100), (1.0, 150)] {
            s.observe(&reading(t, swap));
        }
        assert_eq!(s.end(2.0), Some("train"));
        assert_eq!(s.end(2.5), None, "nothing under way");
        assert!(s.current().is_none());
        // Swap grows and time passes after the end: not the stage's.
        for (t, swap) in [(3.0, 900), (9.0, 950)] {
            s.observe(&reading(t, swap));
        }
        let train = &s.stages()[0];
        assert_eq!((train.swap_growth_bytes / MIB, train.seconds), (50, 2.0));
        // A second visit picks up where the first left off.
        s.mark("train", 10.0);
        s.observe(&reading(11.0, 960));
        s.end(12.0);
        let train = &s.stages()[0];
        assert_eq!((train.visits, train.seconds), (2, 4.0));
        assert_eq!(train.swap_growth_bytes / MIB, 60);
    }

    #[test]
    fn a_loop_of_marks_sums_per_name_and_is_never_capped() {
        // A training loop: forward, backward, optimizer, step after step, far past the cap.
        let mut s = StageTracker::new(Some(100 * MIB));
        let names = ["forward", "backward", "optimizer"];
        let mut t = 0.0;
        let mut swap = 100;
        for step in 0..1000 {
            for (k, name) in names.iter().enumerate() {
                assert!(s.mark(name, t), "step {step}: {name} refused");
                // Only backward grows swap: 1 MiB each step, given back by the optimizer.
                if k == 1 {
                    swap += 1;
                } else if k == 2 && step % 2 == 1 {
                    swap -= 1;
                }
                t += 0.5;
                s.observe(&reading(t, swap));
            }
        }
        let got: Vec<(&str, u32, u64)> = s
            .stages()
            .iter()
            .map(|x| (x.stage.as_str(), x.visits, x.swap_growth_bytes / MIB))
            .collect();
        assert_eq!(
            got,
            vec![
                ("forward", 1000, 0),
                ("backward", 1000, 1000),
                ("optimizer", 1000, 0)
            ]
        );
        // Each visit lasted 0.5 s; the last one is the optimizer's, still under way.
        for x in s.stages() {
            assert!(
                (x.seconds - 500.0).abs() < 1e-6,
                "{}: {}",
                x.stage,
                x.seconds
            );
        }
        assert_eq!(s.current().unwrap().stage, "optimizer");
        // The highest swap any visit of backward saw, over the job's start.
        assert_eq!(s.stages()[1].cumulative_growth_bytes / MIB, 501);
        // New names past the cap are refused; the names seen are always taken.
        for i in 0..MAX_STAGES {
            let name = format!("n{i}");
            assert_eq!(s.mark(&name, t), i + 3 < MAX_STAGES, "{name}");
        }
        assert!(s.mark("forward", t));
    }

    #[test]
    fn a_mark_before_any_reading_starts_at_the_first_one() {
        let mut s = StageTracker::new(None);
        s.mark("only", 0.0);
        s.observe(&reading(0.5, 300));
        s.observe(&reading(1.0, 500));
        assert_eq!(s.stages()[0].swap_start_bytes, 300 * MIB);
        assert_eq!(s.stages()[0].swap_growth_bytes, 200 * MIB);
        assert_eq!(s.stages()[0].cumulative_growth_bytes, 200 * MIB);
        // Without marks there are no stages, whatever the readings.
        let mut none = StageTracker::new(None);
        none.observe(&reading(0.0, 1));
        assert!(none.stages().is_empty());
    }
}
