//! The app among the guards of this machine: its jobs are published in job files
//! (`headroom_core::jobfile::Board`, naming the app as their guard), so that terminal
//! guards weigh them in the pause order and ask the app's socket to pause one (`yield`,
//! answered in `crate::jobs::control`), and `headroom status`, `serve` and
//! `headroom resume|stop` see them; and the terminal guards' jobs are read back for the
//! app's own jobs' pause order ([`Peers`]), asked through `crate::jobs`' effects. The
//! youngest pausing job pauses first, whoever guards it.
//!
//! Files are written on a thread of their own, fed the engine's views after each sample and
//! each request: a slow disk never holds up a sample or a signal, and a batch not yet
//! written is replaced by a newer one (a file always shows its job's latest state).

use std::path::PathBuf;
use std::sync::mpsc;

use headroom_core::jobfile::{Board, PeerFiles, COUNTS_PAGES};
use headroom_core::peers::{PeerBoard, PeerSource};
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::Counters;
use headroom_rules::engine::JobView;

use crate::state::{lock, AppState, Publishing};

/// Starts writing the job files of the app (`guard`) into `dir`; `None` (logged) when the
/// thread cannot start: the app then guards its jobs unseen by terminal guards.
pub fn start(dir: PathBuf, guard: ProcessIdentity) -> Option<Publishing> {
    let (to_thread, batches) = mpsc::channel::<Vec<JobView>>();
    let spawned = std::thread::Builder::new()
        .name("headroom-jobfiles".into())
        .spawn(move || {
            let mut board = Board::new(dir, guard);
            while let Ok(mut views) = batches.recv() {
                // Only the newest batch matters: it holds every job's latest state.
                while let Ok(newer) = batches.try_recv() {
                    views = newer;
                }
                board.publish(&views);
            }
        });
    match spawned {
        Ok(_) => Some(Publishing { to_thread }),
        Err(e) => {
            tracing::warn!(error = %e, "the app's jobs are not published");
            None
        }
    }
}

/// Publishes the app's jobs as the engine has them now (after a sample or a request).
pub fn publish(state: &AppState) {
    if state.job_files.is_some() {
        publish_views(state, lock(&state.monitor).jobs.views());
    }
}

/// [`publish`] of `views`, taken under a lock of the engine the caller held already.
pub fn publish_views(state: &AppState, views: Vec<JobView>) {
    let Some(publishing) = &state.job_files else {
        return;
    };
    // A send fails only once the thread is gone; it said why when it went.
    let _ = publishing.to_thread.send(views);
}

/// The other guards' jobs, read from their job files at most every
/// [`headroom_core::peers::PEERS_EVERY`] while one of the app's jobs is in the pause order
/// or memory is counted by pages (`COUNTS_PAGES`: each job's share of memory in use).
#[derive(Debug)]
pub struct Peers {
    board: PeerBoard,
}

impl Peers {
    /// The job files in `dir` of guards other than this process.
    pub fn new(dir: PathBuf, counters: Counters) -> Peers {
        let files = PeerFiles::new(dir, std::process::id(), counters);
        Peers {
            board: PeerBoard::new(Box::new(files) as Box<dyn PeerSource>),
        }
    }

    /// Gives the engine the other guards' jobs when a new read is due and one of the app's
    /// jobs takes part in the pause order (read outside the engine's lock).
    pub fn update(&mut self, state: &AppState) {
        if !(COUNTS_PAGES || lock(&state.monitor).jobs.in_pause_order()) {
            return;
        }
        if let Some(peers) = self.board.read() {
            let mut monitor = lock(&state.monitor);
            monitor.jobs.set_peers(peers.order);
            monitor.jobs.set_other_jobs(peers.others);
        }
    }
}
