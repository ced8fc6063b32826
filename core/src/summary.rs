//! Trace summaries: the figures stageload publishes. (What the guard would have done over a
//! trace, a replay, is the driver's own loop: `crate::drive::replay`.)
//!
//! Samples are ordered by `t`, not file position (a meter thread and the pipeline write
//! concurrently). The samples before the first stage event belong to `setup`. A stage's own
//! window starts after the `release` events that entering it set off (releases tagged with the
//! stage, after its `stage` event and before its first load or the next stage): until they
//! finish, memory still belongs to the stage before. This rule reproduces the published
//! per-stage peaks of every fixture trace.

use serde::Serialize;

use crate::trace::{SampleRecord, Trace, STAGE_END};
use headroom_rules::stages::{Reading, StageFigures, StageTracker};

/// Name of the implicit stage before the first `stage` event.
pub const FIRST_STAGE: &str = "setup";

/// Peak footprint of one stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StagePeak {
    /// Stage name.
    pub stage: String,
    /// Peak footprint in the stage's window; `None` when no sample fell in it.
    pub peak_footprint_bytes: Option<u64>,
}

/// The published figures of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Number of samples.
    pub samples: usize,
    /// Highest footprint.
    pub peak_footprint_bytes: u64,
    /// Swap in use at the first sample.
    pub swap_start_bytes: u64,
    /// Highest swap in use.
    pub swap_peak_bytes: u64,
    /// Swap in use at the last sample.
    pub swap_end_bytes: u64,
    /// Peak minus start.
    pub swap_rise_bytes: u64,
    /// Lowest free memory, percent.
    pub lowest_level_percent: f64,
    /// How much the memory in use rose from the first sample to its highest, where the
    /// samples carry it (Headroom's Mac traces; see [`headroom_rules::fit`]).
    pub in_use_rise_bytes: Option<u64>,
    /// What the job took of memory in use, where the samples carry it: the rise at each
    /// sample, at least the job's footprint then up to the room at its start
    /// ([`headroom_rules::policy::share`]; a trace does not say what other jobs ran beside it, so the
    /// rise is the job's whole).
    pub in_use_taken_bytes: Option<u64>,
    /// `t` of the last sample, seconds.
    pub duration_seconds: f64,
    /// Per-stage peaks, in the order stages began (empty without stage events).
    pub stages: Vec<StagePeak>,
    /// Which stage grew swap: per-stage swap growth, cumulative growth, peak footprint and
    /// lowest free %, from the stage events' own times (`headroom_rules::stages`); empty without
    /// stage events.
    pub stage_swap: Vec<StageFigures>,
    /// Read errors recorded in the trace.
    pub errors: usize,
    /// Whether the trace has its `end` record.
    pub ended: bool,
    /// Whether a half-written last line was dropped.
    pub truncated: bool,
}

/// What the job of `trace` took of memory in use (`start` in use at its first sample): the
/// highest of [`headroom_rules::policy::share::taken_bytes`] over its samples, alone on the machine.
fn in_use_taken(trace: &Trace, samples: &[&SampleRecord], start: u64) -> u64 {
    // The room at its start, where the trace says what memory the kernel hands out.
    let usable = trace.start.as_ref().and_then(|start| {
        let run = &start.run;
        run.usable_bytes
            .or_else(|| (run.total_bytes > 0).then_some(run.total_bytes))
    });
    let room_start = usable.map_or(u64::MAX, |u| u.saturating_sub(start));
    samples
        .iter()
        .filter_map(|s| {
            let rise = s.in_use?.saturating_sub(start);
            let own = headroom_rules::policy::share::own_bytes(s.footprint, room_start);
            Some(headroom_rules::policy::share::taken_bytes(rise, own, 0))
        })
        .max()
        .unwrap_or(0)
}

fn sorted_samples(trace: &Trace) -> Vec<&SampleRecord> {
    let mut samples: Vec<&SampleRecord> = trace.samples.iter().collect();
    samples.sort_by(|a, b| a.t.total_cmp(&b.t));
    samples
}

/// Stage windows `(name, start t)`, in order, with the release rule applied; a window after
/// a stage's end ([`STAGE_END`]) and before the next mark has no name: no stage's.
pub fn stage_windows(trace: &Trace) -> Vec<(Option<String>, f64)> {
    let stages: Vec<_> = trace
        .events
        .iter()
        .filter(|e| e.what.kind == "stage" || e.what.kind == STAGE_END)
        .collect();
    let mut windows = vec![(Some(FIRST_STAGE.to_string()), f64::NEG_INFINITY)];
    for (i, ev) in stages.iter().enumerate() {
        if ev.what.kind == STAGE_END {
            windows.push((None, ev.t));
            continue;
        }
        let Some(name) = ev.what.stage.clone() else {
            continue;
        };
        let next = stages.get(i + 1).map_or(f64::INFINITY, |n| n.t);
        let in_stage = |kinds: &[&str]| {
            trace
                .events
                .iter()
                .filter(|e| kinds.contains(&e.what.kind.as_str()))
                .filter(|e| e.what.stage.as_deref() == Some(name.as_str()) && e.t >= ev.t)
                .map(|e| e.t)
                .collect::<Vec<f64>>()
        };
        let first_load = in_stage(&["load", "reload"])
            .into_iter()
            .fold(next, f64::min);
        let start = in_stage(&["release"])
            .into_iter()
            .filter(|&t| t <= first_load)
            .fold(ev.t, f64::max);
        windows.push((Some(name), start));
    }
    windows
}

/// The stage windows that have a name ([`stage_windows`]), as a chart draws them: a stage's
/// end draws no line of its own, the next mark does.
pub fn named_stage_windows(trace: &Trace) -> Vec<(String, f64)> {
    stage_windows(trace)
        .into_iter()
        .filter_map(|(name, t)| Some((name?, t)))
        .collect()
}

/// Summarises a trace; `None` when it has no samples.
pub fn summarize(trace: &Trace) -> Option<Summary> {
    let samples = sorted_samples(trace);
    let first = samples.first()?;
    let last = samples.last()?;
    let swap_peak = samples.iter().map(|s| s.swap_used).max().unwrap_or(0);
    // Swap at the run's start as the guard read it before the job (the trace's `start`
    // keeps it), else its first reading: the baseline a replay judges by too.
    let swap_start = crate::trace::RunRecord::of(trace)
        .swap_start_bytes
        .unwrap_or(first.swap_used);
    let has_stage_events = trace.events.iter().any(|e| e.what.kind == "stage");
    let mut stages: Vec<StagePeak> = Vec::new();
    if has_stage_events {
        let windows = stage_windows(trace);
        for (i, (name, start)) in windows.iter().enumerate() {
            let Some(name) = name else {
                continue;
            };
            let end = windows.get(i + 1).map_or(f64::INFINITY, |w| w.1);
            let peak = samples
                .iter()
                .filter(|s| s.t >= *start && s.t < end)
                .map(|s| s.footprint)
                .max();
            match stages.iter_mut().find(|p| &p.stage == name) {
                Some(existing) => {
                    existing.peak_footprint_bytes = existing.peak_footprint_bytes.max(peak)
                }
                None => stages.push(StagePeak {
                    stage: name.clone(),
                    peak_footprint_bytes: peak,
                }),
            }
        }
    }
    let stage_swap = if has_stage_events {
        stage_figures(trace, &samples)
    } else {
        Vec::new()
    };
    Some(Summary {
        samples: samples.len(),
        peak_footprint_bytes: samples.iter().map(|s| s.footprint).max().unwrap_or(0),
        swap_start_bytes: swap_start,
        swap_peak_bytes: swap_peak,
        swap_end_bytes: last.swap_used,
        swap_rise_bytes: swap_peak.saturating_sub(swap_start),
        in_use_rise_bytes: first.in_use.map(|start| {
            let peak = samples
                .iter()
                .filter_map(|s| s.in_use)
                .max()
                .unwrap_or(start);
            peak.saturating_sub(start)
        }),
        in_use_taken_bytes: first
            .in_use
            .map(|start| in_use_taken(trace, &samples, start)),
        lowest_level_percent: samples
            .iter()
            .map(|s| s.level)
            .fold(f64::INFINITY, f64::min),
        duration_seconds: last.t,
        stages,
        stage_swap,
        errors: trace.errors.len(),
        ended: trace.ended,
        truncated: trace.truncated,
    })
}

/// Per-stage figures from the stage events (their own `t`) and the samples in time order;
/// samples before the first stage event form [`FIRST_STAGE`].
fn stage_figures(trace: &Trace, samples: &[&SampleRecord]) -> Vec<StageFigures> {
    // (the stage that begins, or `None` for an end; when)
    let mut marks: Vec<(Option<&str>, f64)> = trace
        .events
        .iter()
        .filter_map(|e| match e.what.kind.as_str() {
            "stage" => Some((Some(e.what.stage.as_deref()?), e.t)),
            STAGE_END => Some((None, e.t)),
            _ => None,
        })
        .collect();
    marks.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut tracker = StageTracker::new(samples.first().map(|s| s.swap_used));
    if let (Some(first), Some(mark)) = (samples.first(), marks.first()) {
        if first.t < mark.1 {
            tracker.mark(FIRST_STAGE, first.t);
        }
    }
    let mut next = marks.iter().peekable();
    for s in samples {
        while let Some((name, t)) = next.next_if(|m| m.1 <= s.t) {
            stage_turn(&mut tracker, *name, *t);
        }
        tracker.observe(&Reading {
            t_seconds: s.t,
            swap_used_bytes: s.swap_used,
            footprint_bytes: Some(s.footprint),
            free_percent: s.level,
        });
    }
    for (name, t) in next {
        stage_turn(&mut tracker, *name, *t);
    }
    tracker.stages().to_vec()
}

/// A stage begins (`Some`) or the one under way ends (`None`) at `t`.
fn stage_turn(tracker: &mut StageTracker, stage: Option<&str>, t: f64) {
    match stage {
        Some(name) => {
            tracker.mark(name, t);
        }
        None => {
            tracker.end(t);
        }
    }
}
