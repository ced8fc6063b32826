//! Which stage grew swap: per-stage figures of a job, from its stage marks and samples.
//!
//! A stage runs from its mark to the next one. Its swap growth is the highest swap in use
//! within it minus swap in use at its start (the last reading before the mark, or its first
//! reading when there was none), so a stage is charged for what it added, not for what came
//! before; its cumulative growth is the same peak minus swap at the job's start. Pure: the
//! job engine feeds it live, `trace summary` feeds it a recorded trace's samples and stage
//! events, so both attribute growth the same way.

use serde::{Deserialize, Serialize};

/// The figures of one stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageFigures {
    /// Stage name, as marked.
    pub stage: String,
    /// When it began, seconds on the job's (or trace's) clock.
    pub start_seconds: f64,
    /// Swap in use at its start.
    pub swap_start_bytes: u64,
    /// Highest swap in use within it minus swap at its start (0 if it never rose).
    pub swap_growth_bytes: u64,
    /// Highest swap in use within it minus swap at the job's start.
    pub cumulative_growth_bytes: u64,
    /// Peak footprint within it, when measured.
    pub peak_footprint_bytes: Option<u64>,
    /// Lowest system free memory within it, percent.
    pub lowest_free_percent: Option<f64>,
}

impl StageFigures {
    /// The stage's name for a chart: with the swap it added when that passed
    /// `tolerance_bytes` (`decode +6.3 GB`), else just the name.
    pub fn label(&self, tolerance_bytes: u64) -> String {
        if self.swap_growth_bytes > tolerance_bytes {
            let growth = i64::try_from(self.swap_growth_bytes).unwrap_or(i64::MAX);
            format!(
                "{} {}",
                self.stage,
                crate::units::format_delta_bytes(growth)
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
    /// a finite, non-negative load time.
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
        if self.seconds.is_some_and(|s| !s.is_finite() || s < 0.0) {
            return Err("an event's seconds must be a finite number, not negative".into());
        }
        Ok(self)
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

/// Stages a job may have at most; later marks are refused (and said so).
pub const MAX_STAGES: usize = 256;

/// Per-stage figures as marks and readings come in, in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageTracker {
    job_swap_start: Option<u64>,
    last_swap: Option<u64>,
    swap_peak_in_stage: Option<u64>,
    stages: Vec<StageFigures>,
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
    /// recorded) once the job has [`MAX_STAGES`]: a job that marks in a loop cannot grow
    /// its record, its job file or the verdict without bound.
    pub fn mark(&mut self, stage: &str, t_seconds: f64) -> bool {
        if self.stages.len() >= MAX_STAGES {
            return false;
        }
        let swap_start = self.last_swap.or(self.job_swap_start);
        self.swap_peak_in_stage = None;
        self.stages.push(StageFigures {
            stage: stage.to_string(),
            start_seconds: t_seconds,
            swap_start_bytes: swap_start.unwrap_or(0),
            swap_growth_bytes: 0,
            cumulative_growth_bytes: 0,
            peak_footprint_bytes: None,
            lowest_free_percent: None,
        });
        // No reading yet at all: the stage's first reading sets its start.
        if swap_start.is_none() {
            self.swap_peak_in_stage = Some(u64::MAX);
        }
        true
    }

    /// One reading, at or after the last mark.
    pub fn observe(&mut self, r: &Reading) {
        let job_start = *self.job_swap_start.get_or_insert(r.swap_used_bytes);
        self.last_swap = Some(r.swap_used_bytes);
        let Some(stage) = self.stages.last_mut() else {
            return;
        };
        if self.swap_peak_in_stage == Some(u64::MAX) {
            stage.swap_start_bytes = r.swap_used_bytes;
            self.swap_peak_in_stage = None;
        }
        let peak = self
            .swap_peak_in_stage
            .map_or(r.swap_used_bytes, |p| p.max(r.swap_used_bytes));
        self.swap_peak_in_stage = Some(peak);
        stage.swap_growth_bytes = peak.saturating_sub(stage.swap_start_bytes);
        stage.cumulative_growth_bytes = peak.saturating_sub(job_start);
        if let Some(f) = r.footprint_bytes {
            stage.peak_footprint_bytes = Some(stage.peak_footprint_bytes.map_or(f, |p| p.max(f)));
        }
        stage.lowest_free_percent = Some(
            stage
                .lowest_free_percent
                .map_or(r.free_percent, |l| l.min(r.free_percent)),
        );
    }

    /// The stages so far, in the order they began (empty without marks).
    pub fn stages(&self) -> &[StageFigures] {
        &self.stages
    }
}

/// The stages whose own swap growth passed `tolerance_bytes`, for a verdict's words:
/// `denoise +3.5 GB, decode +6.3 GB`.
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
