//! A job's outputs, each on a thread of its own: the terminal's lines, the trace, the job
//! file, the report. The driver hands them the job's samples, events and its view through
//! bounded queues and never waits (but once, at the start, for the job file that others act
//! on: [`Sink::written_before_requests`]): a reader that stops reading (`guard … 2>&1 | less`), a
//! FIFO nobody reads or a slow disk holds up that output alone, never a decision or a
//! signal. An output that fails is dropped and the others are told; one that falls a whole
//! queue behind loses updates (counted and said), never the job.

use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use headroom_rules::engine::JobView;
use headroom_rules::policy::JobEvent;
use headroom_rules::sample::Sample;

/// Updates an output may fall behind before it misses some.
pub const OUTPUT_BACKLOG: usize = 4096;
/// How long the end waits for an output other than the terminal to write what it was given.
pub const FINISH_WAIT: Duration = Duration::from_secs(5);

/// How long the start waits for the outputs others act on to have written it
/// ([`Sink::written_before_requests`]).
pub const START_WAIT: Duration = Duration::from_secs(2);

/// A consumer of a job's progress: the terminal's lines, a trace, the app's job file, a
/// report. Each runs on its own thread; its errors drop it, never the job.
pub trait Sink: Send {
    /// What it is, for the message when it fails (`the trace t.jsonl`).
    fn name(&self) -> String;
    /// True for the terminal's lines: the end waits for them however long the terminal
    /// takes (as any program's output does), while other outputs get [`FINISH_WAIT`].
    fn is_terminal(&self) -> bool {
        false
    }
    /// False for a sink that needs no samples (the terminal's lines): its thread is not
    /// woken for each one.
    fn wants_samples(&self) -> bool {
        true
    }
    /// For a sink that needs only some samples (the job file: when it is due), the rule
    /// that picks them, asked on the driver's thread with the job's view at each sample:
    /// its thread is woken for those alone.
    fn sample_gate(&self) -> Option<Box<dyn SampleGate>> {
        None
    }
    /// True for an output that others act on (the job file: `headroom resume|stop` of a job
    /// whose guard is gone read it): the start waits until it has written the job's start
    /// (up to [`START_WAIT`]), so that the job's socket takes no request (a pause) before a
    /// file names the job for whoever must resume it should the guard be killed.
    fn written_before_requests(&self) -> bool {
        false
    }

    /// The job is watched.
    fn started(&mut self, _view: &JobView) -> io::Result<()> {
        Ok(())
    }
    /// One sample (at the check interval, which may be shorter than the poll).
    fn sample(&mut self, _sample: &Sample, _view: &JobView) -> io::Result<()> {
        Ok(())
    }
    /// An event of the job at `t` on the sampler's clock; the last is always `Finished`.
    fn event(&mut self, _t: Duration, _event: &JobEvent, _view: &JobView) -> io::Result<()> {
        Ok(())
    }
    /// Something the user must hear about (another output failed, the driver cannot stop a
    /// member…).
    fn problem(&mut self, _text: &str) {}
    /// A problem this output hit and goes on from (a job file that cannot be written now),
    /// for the others to say (the terminal's lines print it): asked after each update; an
    /// output says each problem once.
    fn take_problem(&mut self) -> Option<String> {
        None
    }
    /// The job is over: write what is left.
    fn finish(&mut self, _view: &JobView) -> io::Result<()> {
        Ok(())
    }
}

/// Which samples a sink is woken for ([`Sink::sample_gate`]).
pub trait SampleGate: Send {
    /// True when the sample whose job's view is `view` is to be handed to the sink.
    fn wants(&mut self, view: &JobView) -> bool;
}

enum Update {
    Started(Arc<JobView>),
    Sample(Arc<Sample>, Arc<JobView>),
    Event(Duration, Box<JobEvent>, Arc<JobView>),
    Problem(String),
    Finish(Arc<JobView>),
}

struct Worker {
    name: String,
    terminal: bool,
    samples: bool,
    gate: Option<Box<dyn SampleGate>>,
    queue: SyncSender<Update>,
    /// Disconnects when the worker's thread ends.
    done: Receiver<()>,
    /// Hears when the start is written, for an output written before requests.
    started: Option<Receiver<()>>,
    dropped: u64,
}

/// The outputs of one job.
pub struct Outputs {
    workers: Vec<Worker>,
    /// Problems the workers hit (their sink failed), for the others to hear.
    problems: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.workers.iter().map(|w| w.name.as_str()).collect();
        f.debug_struct("Outputs").field("sinks", &names).finish()
    }
}

impl Outputs {
    /// No outputs at all (a takeover's: what it did is said from its checks).
    pub fn none() -> Outputs {
        Outputs {
            workers: Vec::new(),
            problems: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Starts one thread per sink.
    pub fn start(sinks: Vec<Box<dyn Sink>>) -> io::Result<Outputs> {
        let problems = Arc::new(Mutex::new(Vec::new()));
        let mut workers = Vec::new();
        for sink in sinks {
            let (queue, updates) = mpsc::sync_channel(OUTPUT_BACKLOG);
            let (alive, done) = mpsc::channel::<()>();
            let name = sink.name();
            let terminal = sink.is_terminal();
            let samples = sink.wants_samples();
            let gate = sink.sample_gate();
            let (written, started) = if sink.written_before_requests() {
                let (tx, rx) = mpsc::sync_channel::<()>(1);
                (Some(tx), Some(rx))
            } else {
                (None, None)
            };
            let problems = Arc::clone(&problems);
            std::thread::Builder::new()
                .name("headroom-output".into())
                .spawn(move || {
                    let _alive = alive;
                    serve(sink, &updates, &problems, written.as_ref());
                })?;
            workers.push(Worker {
                name,
                terminal,
                samples,
                gate,
                queue,
                done,
                started,
                dropped: 0,
            });
        }
        Ok(Outputs { workers, problems })
    }

    /// The job is watched: told to every output, and waited for (up to [`START_WAIT`]) by
    /// those written before requests ([`Sink::written_before_requests`]).
    pub fn started(&mut self, view: &Arc<JobView>) {
        self.send(|| Update::Started(Arc::clone(view)));
        let end = Instant::now() + START_WAIT;
        for worker in &mut self.workers {
            if let Some(written) = worker.started.take() {
                let left = end.saturating_duration_since(Instant::now());
                if written.recv_timeout(left).is_err() {
                    tracing::warn!("{} did not write the job's start in time", worker.name);
                }
            }
        }
    }

    /// One sample (to the outputs that want samples, and want this one).
    pub fn sample(&mut self, sample: &Arc<Sample>, view: &Arc<JobView>) {
        self.send_to(
            |w| w.samples && w.gate.as_mut().is_none_or(|g| g.wants(view)),
            || Update::Sample(Arc::clone(sample), Arc::clone(view)),
        );
    }

    /// One event at `t`.
    pub fn event(&mut self, t: Duration, event: &JobEvent, view: &Arc<JobView>) {
        self.send(|| Update::Event(t, Box::new(event.clone()), Arc::clone(view)));
    }

    /// Tells every output.
    pub fn problem(&mut self, text: &str) {
        self.send(|| Update::Problem(text.to_string()));
    }

    fn send(&mut self, update: impl Fn() -> Update) {
        self.send_to(|_| true, update);
    }

    fn send_to(&mut self, mut to: impl FnMut(&mut Worker) -> bool, update: impl Fn() -> Update) {
        self.relay_problems();
        let mut lagging = Vec::new();
        for worker in self.workers.iter_mut().filter_map(|w| to(w).then_some(w)) {
            match worker.queue.try_send(update()) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    worker.dropped += 1;
                    if worker.dropped == 1 {
                        lagging.push(worker.name.clone());
                    }
                }
                Err(TrySendError::Disconnected(_)) => {}
            }
        }
        for name in lagging {
            let text =
                format!("{name} is not being read: updates are dropped, the job stays guarded");
            tracing::warn!("{text}");
            for worker in &mut self.workers {
                let _ = worker.queue.try_send(Update::Problem(text.clone()));
            }
        }
    }

    /// Passes the problems of failed outputs on to the others.
    fn relay_problems(&mut self) {
        let texts: Vec<String> = {
            let mut problems = self.problems.lock().unwrap_or_else(PoisonError::into_inner);
            std::mem::take(&mut *problems)
        };
        for text in texts {
            for worker in &mut self.workers {
                let _ = worker.queue.try_send(Update::Problem(text.clone()));
            }
        }
    }

    /// The job is over: each output writes what it has, the terminal for as long as it
    /// takes, the others up to [`FINISH_WAIT`] (`give_up()` turning true ends the wait: the
    /// user interrupted it). Names the outputs that could not finish.
    pub fn finish(mut self, view: &Arc<JobView>, give_up: &dyn Fn() -> bool) -> Vec<String> {
        self.relay_problems();
        let started = Instant::now();
        let mut unfinished = Vec::new();
        for worker in &self.workers {
            // Blocking here is fine for the job (it has ended); bounded for all but the
            // terminal.
            let _ = if worker.terminal {
                worker
                    .queue
                    .send(Update::Finish(Arc::clone(view)))
                    .map_err(|_| ())
            } else {
                // A full queue (a flood of events) drains: the finish waits its turn, up to
                // the finish's wait.
                let mut update = Update::Finish(Arc::clone(view));
                loop {
                    match worker.queue.try_send(update) {
                        Err(TrySendError::Full(back)) if started.elapsed() < FINISH_WAIT => {
                            update = back;
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        sent => break sent.map_err(|_| ()),
                    }
                }
            };
        }
        for worker in self.workers.drain(..) {
            let Worker {
                name,
                terminal,
                queue,
                done,
                ..
            } = worker;
            drop(queue);
            loop {
                match done.recv_timeout(Duration::from_millis(50)) {
                    Err(RecvTimeoutError::Disconnected) | Ok(()) => break,
                    Err(RecvTimeoutError::Timeout) => {}
                }
                if give_up() || (!terminal && started.elapsed() >= FINISH_WAIT) {
                    unfinished.push(name);
                    break;
                }
            }
        }
        unfinished
    }
}

/// One output's thread: every update to its sink until the queue closes or it fails.
fn serve(
    mut sink: Box<dyn Sink>,
    updates: &Receiver<Update>,
    problems: &Mutex<Vec<String>>,
    written: Option<&SyncSender<()>>,
) {
    while let Ok(update) = updates.recv() {
        let result = match update {
            Update::Started(view) => {
                let result = sink.started(&view);
                if let Some(written) = written {
                    let _ = written.try_send(());
                }
                result
            }
            Update::Sample(sample, view) => sink.sample(&sample, &view),
            Update::Event(t, event, view) => sink.event(t, &event, &view),
            Update::Problem(text) => {
                sink.problem(&text);
                Ok(())
            }
            Update::Finish(view) => {
                let result = sink.finish(&view);
                if let Err(e) = result {
                    tracing::warn!("{} failed at the end: {e}", sink.name());
                }
                return;
            }
        };
        if let Some(text) = sink.take_problem() {
            tracing::warn!("{text}");
            problems
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(text);
        }
        if let Err(e) = result {
            let text = format!(
                "{} failed: {e}; it is dropped, the job stays watched",
                sink.name()
            );
            tracing::warn!("{text}");
            problems
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(text);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A sink whose start takes `delay`, and says when it is written.
    struct SlowStart {
        delay: Duration,
        before_requests: bool,
        written: Arc<AtomicBool>,
    }

    impl Sink for SlowStart {
        fn name(&self) -> String {
            "a slow start".into()
        }

        fn written_before_requests(&self) -> bool {
            self.before_requests
        }

        fn started(&mut self, _view: &JobView) -> io::Result<()> {
            std::thread::sleep(self.delay);
            self.written.store(true, Ordering::SeqCst);
            Ok(())
        }
    }

    fn slow(delay: Duration, before_requests: bool) -> (Box<dyn Sink>, Arc<AtomicBool>) {
        let written = Arc::new(AtomicBool::new(false));
        let sink = SlowStart {
            delay,
            before_requests,
            written: Arc::clone(&written),
        };
        (Box::new(sink), written)
    }

    #[test]
    fn the_start_waits_for_the_outputs_others_act_on_and_for_no_other() {
        let (job_file, file_written) = slow(Duration::from_millis(100), true);
        let (trace, trace_written) = slow(START_WAIT, false);
        let mut outputs = Outputs::start(vec![job_file, trace]).unwrap();
        outputs.started(&Arc::new(JobView::default()));
        assert!(
            file_written.load(Ordering::SeqCst),
            "not written before requests"
        );
        assert!(
            !trace_written.load(Ordering::SeqCst),
            "the trace held the start up"
        );
        outputs.finish(&Arc::new(JobView::default()), &|| false);
    }

    #[test]
    fn an_output_that_never_writes_its_start_holds_the_job_up_no_longer_than_the_wait() {
        let (stuck, _) = slow(START_WAIT * 3, true);
        let mut outputs = Outputs::start(vec![stuck]).unwrap();
        let at = Instant::now();
        outputs.started(&Arc::new(JobView::default()));
        let waited = at.elapsed();
        assert!(
            waited >= START_WAIT && waited < START_WAIT * 2,
            "{waited:?}"
        );
        outputs.finish(&Arc::new(JobView::default()), &|| true);
    }
}
