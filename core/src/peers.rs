//! Other guards' jobs ("peers") on this machine, for the pause order
//! ([`headroom_rules::policy::order`] has its rules) and, where memory is counted by pages (macOS),
//! for each job's share of memory in use ([`headroom_rules::policy::share`]), in one place for every
//! driver: where peers are
//! listed ([`PeerSource`]; `crate::jobfile::PeerFiles` reads their job files and says which
//! jobs take part, `PeerFiles::for_job`), a [`PeerBoard`] that reads them at most every [`PEERS_EVERY`] (a guard's driver,
//! the app's ticker), and the ask to one of them to pause in this job's place, over that
//! guard's socket ([`ask`]: [`crate::socket`], `yield`).

use std::time::{Duration, Instant};

use crate::socket::{send_control, socket_path, Sent};
use headroom_model::effects::Control;
use headroom_os::paths::Dirs;
use headroom_rules::policy::order::{Peer, PeerAt};
use headroom_rules::policy::share::OtherJob;

/// How often the job files are read again for the pause order (a guard's own file is
/// written at once when its job pauses or resumes).
pub const PEERS_EVERY: Duration = Duration::from_millis(500);

/// Other guards' jobs as one read of their job files found them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Peers {
    /// Their pausable jobs (the pause order's view of them).
    pub order: Vec<Peer>,
    /// Their running jobs and footprints (what a job's share of memory in use is weighed
    /// against).
    pub others: Vec<OtherJob>,
}

/// Where other guards' jobs are listed (`crate::jobfile::PeerFiles` reads their job files).
pub trait PeerSource {
    /// Other guards' jobs now, this guard's own left out.
    fn peers(&mut self) -> Peers;
}

/// A [`PeerSource`] read on a schedule: at most every [`PEERS_EVERY`] (a guard's driver,
/// and the app's ticker for its jobs).
pub struct PeerBoard {
    source: Box<dyn PeerSource>,
    last: Option<Instant>,
}

impl std::fmt::Debug for PeerBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerBoard")
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl PeerBoard {
    /// The board over `source`.
    pub fn new(source: Box<dyn PeerSource>) -> Self {
        PeerBoard { source, last: None }
    }

    /// The peers, when a new read is due; `None` between reads.
    pub fn read(&mut self) -> Option<Peers> {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|at| now.duration_since(at) < PEERS_EVERY)
        {
            return None;
        }
        self.last = Some(now);
        Some(self.source.peers())
    }
}

/// Asks `peer`'s guard (a terminal guard or the app), whose socket is in `dirs`' run folder
/// (checked ours from its first folder down, [`Dirs::open_private`]), to pause it (`yield`);
/// `Ok` once it is paused (or was already). Waits for the answer at most
/// [`crate::socket::ANSWER_WAIT`].
pub fn ask(dirs: &Dirs, peer: &Peer) -> Result<(), String> {
    let PeerAt::Guard { guard_pid } = peer.at else {
        return Err("not another guard's job".into());
    };
    let run = dirs
        .open_private(&dirs.run_dir)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} does not exist", dirs.run_dir.display()))?;
    match send_control(
        &socket_path(run.path(), guard_pid),
        Control::Yield,
        peer.pid,
    ) {
        Ok(Sent::Done) => Ok(()),
        Ok(Sent::Queued) => Err(format!(
            "the guard of pid {} did not answer in time",
            peer.pid
        )),
        Err(e) => Err(e.to_string()),
    }
}
