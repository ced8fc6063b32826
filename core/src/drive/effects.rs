//! The live effects of a job: signals to its members under the safety rules
//! ([`headroom_os::enforce`]), the terminal handed to the driver while the job is paused (so
//! Ctrl-C reaches the driver) and back, and its progress to the outputs, which never wait.

use headroom_rules::policy::order::Peer;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::outputs::Outputs;
use super::DriverEffects;
use headroom_model::counters::JobCgroup;
use headroom_model::effects::{JobSignal, SignalReport};
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::Counters;
use headroom_os::enforce::{signal_job, Safety};
use headroom_os::unix::jobctl::Terminal;
use headroom_os::unix::signals::Kernel;
use headroom_rules::engine::{Effects, JobView};
use headroom_rules::policy::JobEvent;
use headroom_rules::sample::Sample;

/// What a live job's actions do.
pub(crate) struct LiveEffects<'a> {
    counters: &'a Counters,
    safety: &'a Safety,
    outputs: Outputs,
    /// The sampler's clock's zero: events are dated on it.
    origin: Instant,
    terminal: Option<Terminal>,
    /// The job as last seen, handed to the outputs with each update.
    view: Arc<JobView>,
    /// The job's own cgroup, where it has one: pause and resume freeze and thaw it.
    cgroup: Option<JobCgroup>,
    /// Where other guards' sockets are (the run folder), to ask one of their jobs to make room.
    dirs: headroom_os::paths::Dirs,
}

impl<'a> LiveEffects<'a> {
    pub(crate) fn new(
        counters: &'a Counters,
        safety: &'a Safety,
        outputs: Outputs,
        origin: Instant,
        terminal: Option<Terminal>,
        view: Arc<JobView>,
    ) -> Self {
        LiveEffects {
            counters,
            safety,
            outputs,
            origin,
            terminal,
            view,
            cgroup: None,
            dirs: headroom_os::paths::Dirs::current(),
        }
    }

    /// Pauses and resumes freeze and thaw `cgroup`, the job's own.
    pub(crate) fn freeze_with(&mut self, cgroup: Option<JobCgroup>) {
        self.cgroup = cgroup;
    }

    /// The job is over: the outputs write what is left (see [`Outputs::finish`]).
    pub(super) fn finish(self, view: Option<JobView>, give_up: &dyn Fn() -> bool) -> Vec<String> {
        let view = view.map_or(self.view, Arc::new);
        self.outputs.finish(&view, give_up)
    }

    fn clock(&self) -> Duration {
        self.origin.elapsed()
    }
}

impl Effects for LiveEffects<'_> {
    fn signal(
        &mut self,
        _job: u64,
        signal: JobSignal,
        members: &[ProcessIdentity],
    ) -> SignalReport {
        let report = signal_job(
            self.counters,
            &Kernel,
            self.safety,
            self.cgroup.as_ref(),
            members,
            signal,
        );
        // While paused, the driver holds the terminal: Ctrl-C reaches it and stops the job.
        // (Once the leader has exited the driver keeps the terminal: `give_to_job` keeps it.)
        if let Some(terminal) = &self.terminal {
            let _ = match signal {
                JobSignal::Pause => terminal.take_back(),
                JobSignal::Resume => terminal.give_to_job(),
                JobSignal::Terminate | JobSignal::Kill | JobSignal::Interrupt | JobSignal::Quit => {
                    Ok(())
                }
            };
        }
        report
    }

    fn notify(&mut self, _job: u64, _command: &str, event: &JobEvent) {
        let t = self.clock();
        self.outputs.event(t, event, &self.view);
    }

    fn make_room(&mut self, _job: u64, peer: &Peer) -> Result<(), String> {
        crate::peers::ask(&self.dirs, peer)
    }
}

impl DriverEffects for LiveEffects<'_> {
    fn sample(&mut self, sample: Sample, view: &JobView) {
        self.view(view);
        self.outputs.sample(&Arc::new(sample), &self.view);
    }

    fn view(&mut self, view: &JobView) {
        if *self.view != *view {
            self.view = Arc::new(view.clone());
        }
    }
}
