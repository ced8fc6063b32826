//! The guard's own signals (INT, TERM, HUP, QUIT, counted; SIGCHLD only wakes the driver),
//! as the driver's [`Interrupts`], and the terminal's keys for the job: SIGTSTP (Ctrl-Z, or
//! a `kill -TSTP` of the guard) once the job runs, SIGINT and SIGQUIT once the driver holds the terminal for a job whose leader has
//! exited (`Interrupts::keys_for_the_job`), kept in order for the driver.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use headroom_core::drive::Interrupts;
use headroom_os::unix::signals;

/// Called on every signal (see `Interrupts::on_signal`).
type Waker = Box<dyn Fn() + Send + Sync>;

/// Signals the guard itself received (INT, TERM, HUP, QUIT), counted; SIGCHLD only wakes.
#[derive(Clone, Default)]
pub struct Signals {
    count: Arc<AtomicUsize>,
    last: Arc<AtomicI32>,
    waker: Arc<Mutex<Option<Waker>>>,
    /// SIGINT and SIGQUIT are keys for the job, not interrupts.
    keys_for_the_job: Arc<AtomicBool>,
    /// Keys not yet taken by the driver, oldest first.
    keys: Arc<Mutex<VecDeque<i32>>>,
    /// Adds SIGTSTP once the job runs (until then Ctrl-Z stops the guard itself, by its
    /// default action, as it should while it waits in line).
    handle: Option<signal_hook::iterator::Handle>,
    /// SIGTSTP is caught (see [`Signals::catch_stops`]).
    stops_caught: Arc<AtomicBool>,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals")
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl Signals {
    /// Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT (and SIGTSTP once the keys are the
    /// job's), except those ignored when we started (they stay ignored, as `nohup` intends).
    pub fn install() -> anyhow::Result<Self> {
        let mut me = Signals::default();
        let wanted: Vec<i32> = [
            signals::SIGINT,
            signals::SIGTERM,
            signals::SIGHUP,
            signals::SIGQUIT,
        ]
        .into_iter()
        .filter(|&s| !signals::is_ignored(s))
        .collect();
        let mut sigs = signal_hook::iterator::Signals::new(&wanted)
            .and_then(|s| s.add_signal(signal_hook::consts::SIGCHLD).map(|()| s))
            .context("installing signal handlers")?;
        me.handle = Some(sigs.handle());
        let (count, last) = (Arc::clone(&me.count), Arc::clone(&me.last));
        let waker = Arc::clone(&me.waker);
        let keeper = me.clone();
        std::thread::Builder::new()
            .name("headroom-signals".into())
            .spawn(move || {
                for sig in sigs.forever() {
                    if keeper.is_key(sig) {
                        keeper
                            .keys
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push_back(sig);
                    } else if sig != signal_hook::consts::SIGCHLD {
                        last.store(sig, Ordering::SeqCst);
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    if let Some(wake) = waker.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                        wake();
                    }
                }
            })
            .context("starting the signal thread")?;
        Ok(me)
    }
}

impl Signals {
    /// Catches SIGTSTP from now on (once; not when it was ignored at our start): a stop of
    /// the guard is the driver's to carry out, with its job.
    fn catch_stops(&self) {
        if self.stops_caught.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(handle) = self.handle.as_ref() {
            if !signals::is_ignored(signals::SIGTSTP) {
                if let Err(e) = handle.add_signal(signals::SIGTSTP) {
                    tracing::warn!(error = %e, "Ctrl-Z will stop the guard alone");
                }
            }
        }
    }

    /// True when `sig` is a key for the job (see the module docs).
    fn is_key(&self, sig: i32) -> bool {
        sig == signals::SIGTSTP
            || (self.keys_for_the_job.load(Ordering::SeqCst)
                && (sig == signals::SIGINT || sig == signals::SIGQUIT))
    }
}

impl Interrupts for Signals {
    fn received(&self) -> Option<i32> {
        (self.count.load(Ordering::SeqCst) > 0).then(|| self.last.load(Ordering::SeqCst))
    }

    fn second(&self) -> bool {
        self.count.load(Ordering::SeqCst) >= 2
    }

    fn on_signal(&self, wake: Waker) {
        *self.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(wake);
    }

    fn keys_for_the_job(&self) {
        self.keys_for_the_job.store(true, Ordering::SeqCst);
        self.catch_stops();
    }

    fn job_runs(&self) {
        self.catch_stops();
    }

    fn key(&self) -> Option<i32> {
        self.keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
    }
}
