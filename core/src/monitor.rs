//! The menu-bar app's model: history and jobs fed by the sampler, and the views it shows
//! (header status, tray title, chart). No UI and no OS calls, so it is tested directly.

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::chart::{history_chart_svg, ChartError, HistoryChartOptions};
use crate::drive::{Input, Step};
use crate::history::{History, Metric, METRICS};
use headroom_model::counters::{PressureLevel, SystemCounters};
use headroom_model::units::format_bytes_short;
use headroom_model::units::unix_ms;
use headroom_rules::engine::{Engine, Moment, FINISHED_KEEP};
use headroom_rules::fit::Room;
use headroom_rules::sample::Sample;

/// Swap counts as growing when it rose more than this over the last minute.
pub const GROWING_THRESHOLD_BYTES: u64 = 1 << 20;
/// At most this many points in a chart.
pub const CHART_POINTS: usize = 300;
/// The chart windows the popover offers, seconds (10 min, 1 h, 24 h).
pub const CHART_WINDOWS_SECONDS: [u64; 3] = [600, 3600, 86_400];
/// The swap-change window of the status pushed with each sample (the `tick` event).
pub const TICK_WINDOW_SECONDS: u64 = 600;

/// The header of the popover (and the `tick` event's payload).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusView {
    /// Free memory, percent.
    pub free_percent: f64,
    /// Physical memory.
    pub total_bytes: u64,
    /// Swap in use.
    pub swap_used_bytes: u64,
    /// Swap size.
    pub swap_total_bytes: u64,
    /// Change of swap in use over the chart window.
    pub swap_change_bytes: i64,
    /// Swap grew over the last minute.
    pub swap_growing: bool,
    /// Pressure level.
    pub pressure: Option<PressureLevel>,
    /// Compressed memory.
    pub compressed_bytes: Option<u64>,
    /// When the numbers were read, ms since the epoch.
    pub sampled_at_ms: i64,
}

/// History, jobs and the latest reading.
#[derive(Debug, Default)]
pub struct Monitor {
    /// In-memory history.
    pub history: History,
    /// Watched and guarded processes.
    pub jobs: Engine,
    last: Option<(SystemTime, SystemCounters)>,
}

impl Monitor {
    /// Takes one input (a sample, a request, a mark) into the jobs with the one step every
    /// driver takes ([`crate::drive::step`]); a sample goes to the history first. A job that
    /// ended leaves the list after [`FINISHED_KEEP`] (its verdict stays in the store).
    pub fn step(&mut self, input: Input, now: Moment) -> Step {
        if let Input::Sample(sample) = &input {
            self.ingest(sample);
        }
        let stepped = crate::drive::step(&mut self.jobs, None, input, now);
        if let Some(sample) = &stepped.sample {
            self.jobs.prune(sample.at, FINISHED_KEEP);
        }
        stepped
    }

    /// [`Monitor::step`] with one sample, at the time it was read.
    pub fn on_sample(&mut self, sample: Sample) -> Step {
        let now = Moment {
            at: sample.at,
            clock: sample.since_start,
        };
        self.step(Input::Sample(sample), now)
    }

    /// A sample's system reading into the history.
    fn ingest(&mut self, sample: &Sample) {
        let Some(system) = &sample.system else {
            return;
        };
        let watched: u64 = sample
            .tracked
            .iter()
            .filter_map(|t| t.memory.map(|m| m.footprint_bytes))
            .sum();
        let any_tracked = sample.tracked.iter().any(|t| t.memory.is_some());
        let mut values = [None; METRICS];
        values[Metric::FreePercent as usize] = Some(system.free_percent);
        values[Metric::SwapUsedBytes as usize] = Some(system.swap_used_bytes as f64);
        values[Metric::CompressedBytes as usize] = system.compressed_bytes.map(|b| b as f64);
        values[Metric::WatchedFootprintBytes as usize] = any_tracked.then_some(watched as f64);
        self.history.add(sample.at, values);
        self.last = Some((sample.at, system.clone()));
    }

    /// Swap in use `ago` before the latest reading (the window's first bucket mean).
    fn swap_at(&self, ago: Duration) -> Option<f64> {
        let (at, _) = self.last.as_ref()?;
        self.history
            .query(ago, *at, 1)
            .first()
            .map(|p| f64::from(p.get(Metric::SwapUsedBytes).min))
            .filter(|v| v.is_finite())
    }

    /// The latest reading of the system, if any.
    pub fn last_system(&self) -> Option<&SystemCounters> {
        self.last.as_ref().map(|(_, system)| system)
    }

    /// The room a new job guarded under `limits` has now ([`Room::for_guard`]), from
    /// the latest reading; `None` before the first.
    pub fn room(&self, limits: &headroom_rules::policy::Limits) -> Option<Room> {
        Some(Room::for_guard(self.last_system()?, limits))
    }

    /// The header view for a chart window; `None` before the first reading.
    pub fn status(&self, window: Duration) -> Option<StatusView> {
        let (at, s) = self.last.as_ref()?;
        let now = s.swap_used_bytes as f64;
        let change = self.swap_at(window).map_or(0.0, |then| now - then);
        let minute = self
            .swap_at(Duration::from_secs(60))
            .map_or(0.0, |then| now - then);
        Some(StatusView {
            free_percent: s.free_percent,
            total_bytes: s.total_bytes,
            swap_used_bytes: s.swap_used_bytes,
            swap_total_bytes: s.swap_total_bytes,
            swap_change_bytes: change as i64,
            swap_growing: minute > GROWING_THRESHOLD_BYTES as f64,
            pressure: s.pressure,
            compressed_bytes: s.compressed_bytes,
            sampled_at_ms: unix_ms(*at),
        })
    }

    /// The menu-bar title: `38% · 3.1G↑` (arrow when swap grew in the last minute).
    pub fn tray_title(&self) -> String {
        match self.status(Duration::from_secs(60)) {
            Some(s) => format!(
                "{:.0}% · {}{}",
                s.free_percent,
                format_bytes_short(s.swap_used_bytes),
                if s.swap_growing { "↑" } else { "" }
            ),
            None => "–".to_string(),
        }
    }

    /// The chart for a window, as SVG.
    pub fn chart_svg(&self, window: Duration, dark: bool) -> Result<String, ChartError> {
        let now = self
            .last
            .as_ref()
            .map_or_else(SystemTime::now, |(at, _)| *at);
        let points = self.history.query(window, now, CHART_POINTS);
        history_chart_svg(
            &points,
            &HistoryChartOptions {
                dark,
                transparent: true,
                now_ms: Some(unix_ms(now)),
                stages: self.stage_marks(),
                ..HistoryChartOptions::default()
            },
        )
    }

    /// Every job's stage starts, labelled with the swap each added past the job's
    /// tolerance: (label, ms since the epoch) for the chart.
    fn stage_marks(&self) -> Vec<(String, i64)> {
        let tolerance = headroom_rules::policy::Limits::default().fits_tolerance_bytes;
        let mut marks = Vec::new();
        for job in self.jobs.views() {
            let tolerance = job
                .verdict
                .as_ref()
                .map_or(tolerance, |v| v.fits_tolerance_bytes);
            for stage in &job.stages {
                let at_ms = job.started_at_ms + (stage.start_seconds * 1000.0) as i64;
                marks.push((stage.label(tolerance), at_ms));
            }
        }
        marks.sort_by_key(|m| m.1);
        marks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_rules::engine::StartMemory;

    fn sample(seq: u64, swap: u64) -> Sample {
        Sample {
            aimed: false,
            seq,
            at: SystemTime::UNIX_EPOCH
                + Duration::from_secs(1_700_000_000)
                + Duration::from_millis(seq * 500),
            since_start: Duration::from_millis(seq * 500),
            system: Some(headroom_model::testdata::system_counters(swap, 38.2)),
            tracked: Vec::new(),
            error: None,
        }
    }

    fn watch_spec(command: &str) -> headroom_rules::engine::JobSpec {
        headroom_rules::engine::JobSpec::new(
            command.into(),
            headroom_rules::engine::JobMode::Watch,
            headroom_rules::policy::Limits::default(),
            Duration::from_millis(500),
        )
    }

    fn moment(at: SystemTime) -> headroom_rules::engine::Moment {
        headroom_rules::engine::Moment {
            at,
            clock: Duration::ZERO,
        }
    }

    #[test]
    fn title_shows_free_swap_and_growth_arrow() {
        let mut m = Monitor::default();
        assert_eq!(m.tray_title(), "–");
        for i in 0..200 {
            m.on_sample(sample(i, 3 << 30));
        }
        assert_eq!(m.tray_title(), "38% · 3.0G");
        for i in 200..230 {
            m.on_sample(sample(i, (3 << 30) + (i - 199) * (10 << 20)));
        }
        assert!(m.tray_title().ends_with('↑'), "{}", m.tray_title());
        let s = m.status(Duration::from_secs(600)).unwrap();
        assert_eq!(s.swap_change_bytes, 300 << 20);
        assert!(s.swap_growing);
    }

    #[test]
    fn chart_renders_for_each_window() {
        let mut m = Monitor::default();
        for i in 0..100 {
            m.on_sample(sample(i, i << 20));
        }
        for window in [600, 3600, 86_400] {
            let svg = m
                .chart_svg(Duration::from_secs(window), window == 3600)
                .unwrap();
            assert!(
                svg.starts_with("<svg") && svg.len() < 60_000,
                "{}",
                svg.len()
            );
        }
    }

    #[test]
    fn chart_marks_the_stages_of_a_watched_job() {
        use headroom_model::members::JobIds;
        use headroom_model::process::ProcessIdentity;
        let mut m = Monitor::default();
        // The job's start is wall-clock time: so are these samples'.
        let t0 = SystemTime::now() - Duration::from_secs(50);
        for i in 0..100 {
            m.on_sample(Sample {
                at: t0 + Duration::from_millis(i * 500),
                ..sample(i, 1 << 30)
            });
        }
        let id = ProcessIdentity {
            pid: 4242,
            start_time: 9,
        };
        let spec = watch_spec("python stages.py");
        let job = m.jobs.add(
            JobIds::of_process(id),
            spec,
            StartMemory::swap(1 << 30),
            moment(SystemTime::now()),
        );
        m.jobs.mark(job, "load", Duration::from_secs(50));
        m.jobs.mark(job, "decode", Duration::from_secs(53));
        for i in 100..110 {
            m.on_sample(Sample {
                at: t0 + Duration::from_millis(i * 500),
                ..sample(i, 1 << 30)
            });
        }
        let svg = m.chart_svg(Duration::from_secs(600), false).unwrap();
        for name in ["load", "decode"] {
            assert!(
                svg.contains(&format!(">\n{name}\n</text>")),
                "{name} marked"
            );
        }
    }

    #[test]
    fn an_ended_job_leaves_the_list_after_finished_keep() {
        use headroom_model::members::JobIds;
        use headroom_model::process::ProcessIdentity;
        use headroom_rules::sample::TrackedSample;
        let mut m = Monitor::default();
        let id = ProcessIdentity {
            pid: 4343,
            start_time: 9,
        };
        let spec = watch_spec("python done.py");
        let start = sample(0, 1 << 30);
        m.jobs.add(
            JobIds::of_process(id),
            spec,
            StartMemory::swap(1 << 30),
            moment(start.at),
        );
        // Its process is gone at the first sample: the job ends with a verdict.
        let gone = Sample {
            aimed: false,
            tracked: vec![TrackedSample {
                identity: id,
                memory: None,
                members: Vec::new(),
                kernel_peak_bytes: None,
                in_own_cgroup: false,
                cgroup_oom_kills: None,
            }],
            ..start
        };
        let gone_at = gone.at;
        m.on_sample(gone);
        assert!(m.jobs.views()[0].verdict.is_some());
        let later = |minutes: u64| Sample {
            at: gone_at + Duration::from_secs(minutes * 60),
            ..sample(1, 1 << 30)
        };
        m.on_sample(later(59));
        assert_eq!(m.jobs.views().len(), 1, "still listed within the hour");
        m.on_sample(later(61));
        assert!(m.jobs.views().is_empty(), "gone after an hour");
    }
}
