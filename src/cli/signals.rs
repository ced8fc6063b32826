//! The guard's own signals (INT, TERM, HUP, QUIT, counted; SIGCHLD only wakes the driver),
//! as the driver's [`Interrupts`].

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use headroom_core::drive::Interrupts;
use headroom_core::unix::signals;

/// Called on every signal (see `Interrupts::on_signal`).
type Waker = Box<dyn Fn() + Send + Sync>;

/// Signals the guard itself received (INT, TERM, HUP, QUIT), counted; SIGCHLD only wakes.
#[derive(Clone, Default)]
pub struct Signals {
    count: Arc<AtomicUsize>,
    last: Arc<AtomicI32>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals")
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl Signals {
    /// Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT, except those ignored when we started
    /// (they stay ignored, as `nohup` intends).
    pub fn install() -> anyhow::Result<Self> {
        let me = Signals::default();
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
        let (count, last) = (Arc::clone(&me.count), Arc::clone(&me.last));
        let waker = Arc::clone(&me.waker);
        std::thread::Builder::new()
            .name("headroom-signals".into())
            .spawn(move || {
                for sig in sigs.forever() {
                    if sig != signal_hook::consts::SIGCHLD {
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
}
