//! The verdict on a finished job (fits, tight or doesn't fit) and its words.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::reasons::EndReason;
use super::Limits;
use crate::stages::{grew_swap, StageFigures};
use headroom_model::units::{format_bytes, format_delta_bytes, format_duration};

/// The verdict on a finished job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// True when swap did not grow beyond the tolerance.
    pub fits: bool,
    /// Peak swap in use minus swap in use at the start.
    pub swap_growth_bytes: u64,
    /// Swap in use at the start.
    pub swap_start_bytes: u64,
    /// Peak footprint of the job's tree, if it was measured.
    pub peak_footprint_bytes: Option<u64>,
    /// Lowest system free memory seen, percent.
    pub lowest_free_percent: Option<f64>,
    /// The most the job took of memory in use, bytes, where the OS counts it by pages
    /// (macOS): its share of the machine's rise since its start, at least its own footprint
    /// ([`super::share`]). What the run held in RAM.
    #[serde(
        default,
        alias = "in_use_rise_bytes",
        skip_serializing_if = "Option::is_none"
    )]
    pub in_use_taken_bytes: Option<u64>,
    /// How long the job ran.
    pub duration: Duration,
    /// How it ended.
    pub ended: EndReason,
    /// How many processes the job had in all (its members ever seen; 0 when unknown).
    #[serde(default)]
    pub processes: u32,
    /// Swap growth up to this still "fits" (the words name the stages that grew more).
    #[serde(default = "default_fits_tolerance_bytes")]
    pub fits_tolerance_bytes: u64,
    /// The job's stages, as its processes marked them (empty without marks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageFigures>,
    /// Set when it fit by the swap rule but was on the edge: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tight: Option<Tightness>,
    /// How many times it was paused (`--on-budget pause`, or on request).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pauses: u32,
    /// How long it was paused in all.
    #[serde(default, skip_serializing_if = "Duration::is_zero")]
    pub paused: Duration,
    /// Set when the kernel's OOM killer ended it: it did not fit, whatever swap did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_killed: Option<OomKilled>,
}

/// The OOM killer ended the job (SIGKILL while the kernel's OOM-kill count went up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OomKilled {
    /// The memory limit it ran under (a cgroup's), when one bound.
    pub limit_bytes: Option<u64>,
}

impl std::fmt::Display for OomKilled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "killed by the OOM killer")?;
        if let Some(limit) = self.limit_bytes {
            write!(f, " (limit {})", format_bytes(limit))?;
        }
        Ok(())
    }
}

/// What a run recorded elsewhere says of itself (a trace's samples summed up, a line of
/// stageload's history): the figures its verdict is judged from by [`Verdict::recorded`].
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRun {
    /// Peak swap in use minus swap in use at the start.
    pub swap_growth_bytes: u64,
    /// Swap in use at the start.
    pub swap_start_bytes: u64,
    /// Peak footprint, where it was measured.
    pub peak_footprint_bytes: Option<u64>,
    /// Lowest system free memory, percent, where it was measured.
    pub lowest_free_percent: Option<f64>,
    /// The most it took of memory in use, where it was measured (macOS).
    pub in_use_taken_bytes: Option<u64>,
    /// How long it ran.
    pub duration: Duration,
    /// How it ended.
    pub ended: EndReason,
    /// Its stages, as it marked them.
    pub stages: Vec<StageFigures>,
}

impl Verdict {
    /// Whether a job fit: its swap grew no more than `fits_tolerance_bytes`, no guard
    /// stopped it at a limit, and the OOM killer did not end it. The one rule for a live
    /// job's verdict ([`super::Ledger::verdict`]) and a recorded one's
    /// ([`Verdict::recorded`]).
    pub fn fit_by(
        swap_growth_bytes: u64,
        fits_tolerance_bytes: u64,
        ended: &EndReason,
        oom_killed: Option<&OomKilled>,
    ) -> bool {
        swap_growth_bytes <= fits_tolerance_bytes
            && ended.at_a_limit().is_none()
            && oom_killed.is_none()
    }

    /// The verdict on a run recorded elsewhere (`history import`), by the rule a live job
    /// is judged by ([`Verdict::fit_by`]).
    pub fn recorded(run: RecordedRun, fits_tolerance_bytes: u64) -> Verdict {
        Verdict {
            fits: Self::fit_by(
                run.swap_growth_bytes,
                fits_tolerance_bytes,
                &run.ended,
                None,
            ),
            swap_growth_bytes: run.swap_growth_bytes,
            swap_start_bytes: run.swap_start_bytes,
            peak_footprint_bytes: run.peak_footprint_bytes,
            lowest_free_percent: run.lowest_free_percent,
            in_use_taken_bytes: run.in_use_taken_bytes,
            duration: run.duration,
            ended: run.ended,
            processes: 0,
            fits_tolerance_bytes,
            stages: run.stages,
            tight: None,
            pauses: 0,
            paused: Duration::ZERO,
            oom_killed: None,
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// "once", "twice", "3 times".
pub fn times(n: u32) -> String {
    match n {
        1 => "once".to_string(),
        2 => "twice".to_string(),
        n => format!("{n} times"),
    }
}

/// Why a run that fits was "tight": what passed its threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tightness {
    /// Growth of compressed memory, when it passed `tight_compressed_bytes`.
    pub compressed_growth_bytes: Option<u64>,
    /// Lowest free memory, when it fell under `tight_free_percent`.
    pub lowest_free_percent: Option<f64>,
}

impl std::fmt::Display for Tightness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(c) = self.compressed_growth_bytes {
            parts.push(format!("compressed {}", format_delta_bytes(c as i64)));
        }
        if let Some(l) = self.lowest_free_percent {
            parts.push(format!("lowest free {l:.0}%"));
        }
        write!(f, "{}", parts.join(", "))
    }
}

fn default_fits_tolerance_bytes() -> u64 {
    Limits::default().fits_tolerance_bytes
}

impl Verdict {
    /// True when anything of the run was measured: its footprint, the free memory or the
    /// memory in use it saw, or swap growth. A job that ended before its first check (or
    /// whose only record holds none of these) was never measured: what it needs is not
    /// known, and no prediction rests on it.
    pub fn measured(&self) -> bool {
        self.peak_footprint_bytes.is_some()
            || self.lowest_free_percent.is_some()
            || self.in_use_taken_bytes.is_some()
            || self.swap_growth_bytes > 0
    }

    /// True when the run was judged: it ran to its end, or its guard stopped it at a limit.
    /// A job stopped on request (or with the guard) is not judged unless swap had already
    /// grown past the tolerance.
    pub fn judged(&self) -> bool {
        let stopped_early = matches!(
            self.ended,
            EndReason::Interrupted { .. }
                | EndReason::Stopped { .. }
                | EndReason::NotStopped { .. }
        ) && self.ended.at_a_limit().is_none();
        !stopped_early || self.swap_growth_bytes > self.fits_tolerance_bytes
    }

    /// `fits`, `tight`, `doesn't fit`, or `stopped` for a job stopped before it could be
    /// judged: the verdict's word, as the lines, notifications and reports say it.
    pub fn word(&self) -> &'static str {
        match self.label() {
            "doesnt_fit" => "doesn't fit",
            label => label,
        }
    }

    /// The verdict as a label (metrics, JSON): `fits`, `tight`, `doesnt_fit`, `stopped`.
    pub fn label(&self) -> &'static str {
        match (self.judged(), &self.tight, self.fits) {
            (false, _, _) => "stopped",
            (true, Some(_), true) => "tight",
            (true, None, true) => "fits",
            (true, _, false) => "doesnt_fit",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.judged(), &self.tight, self.fits) {
            (false, _, _) => match &self.ended {
                EndReason::Interrupted { .. } => {
                    write!(f, "stopped before it could be judged: swap")?
                }
                _ => write!(f, "stopped on request: swap")?,
            },
            (true, Some(tight), true) => write!(f, "tight: {tight}; swap")?,
            (true, None, true) => write!(f, "fits: swap")?,
            (true, _, false) => match &self.oom_killed {
                Some(oom) => write!(f, "doesn't fit: {oom}; swap")?,
                None => write!(f, "doesn't fit: swap")?,
            },
        }
        write!(f, " {}", format_delta_bytes(self.swap_growth_bytes as i64))?;
        let grew = grew_swap(&self.stages, self.fits_tolerance_bytes);
        if !grew.is_empty() {
            let parts: Vec<String> = grew
                .iter()
                .map(|s| {
                    format!(
                        "{} {}",
                        s.stage,
                        format_delta_bytes(s.swap_growth_bytes as i64)
                    )
                })
                .collect();
            write!(f, " ({})", parts.join(", "))?;
        }
        if let Some(p) = self.peak_footprint_bytes {
            write!(f, ", peak footprint {}", format_bytes(p))?;
        }
        if let Some(l) = self.lowest_free_percent {
            write!(f, ", lowest free {l:.0}%")?;
        }
        if self.processes > 1 {
            write!(f, ", {} processes", self.processes)?;
        }
        if self.pauses > 0 {
            let (n, all) = (times(self.pauses), format_duration(self.paused));
            write!(f, ", paused {n}")?;
            write!(
                f,
                "{}",
                if self.pauses > 1 {
                    format!(", {all} in all")
                } else {
                    format!(" for {all}")
                }
            )?;
        }
        write!(f, ", {}, {}", format_duration(self.duration), self.ended)
    }
}
