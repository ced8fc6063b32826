//! The order of pauses among several guarded jobs under pressure (`--on-budget pause` on
//! each): the youngest is paused first and resumed first, as GNU parallel's `--memsuspend`
//! suspends its youngest job. Pure: the job and the others it knows of in, a decision out.
//!
//! Swap is one pool: when it grows, every running guard's budget is crossed at about the
//! same moment, whichever job grew it. So a crossing is answered by **one** pause, of the
//! youngest pausable job that runs:
//!
//! - a younger job was paused a moment ago ([`ANSWERED_WITHIN`]), since this job's budget
//!   last counted anew: that pause answers this crossing too; the job goes on and its budget counts again from swap in use now;
//! - else a younger pausable job runs: the youngest of them is asked to pause in its place
//!   (its own guard pauses it, counts the pause and verifies it), and this job's budget
//!   counts again from now;
//! - else this job is the youngest that runs: it pauses itself.
//!
//! Pausing frees nothing (SIGSTOP keeps the pages), so if swap goes on growing, the next
//! crossings pause the next youngest, and last the oldest. Resuming goes the same way: a
//! paused job resumes by itself (`--resume-free`) only once no younger paused job that
//! resumes by itself is still paused, and no job resumed in the last `--resume-calm` (each
//! resume is given time to show whether it brings swap back).
//!
//! "Younger" is by start time (wall clock, ms), ties by pid. Only pausable guards take part:
//! guards with `--on-budget pause` that have pauses left.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How recently a younger job must have been paused for its pause to answer a crossing.
pub const ANSWERED_WITHIN: Duration = Duration::from_secs(3);

/// Where another job is, to ask it to pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PeerAt {
    /// A job of the same engine (the app's jobs), by id.
    Job {
        /// The engine's job id.
        id: u64,
    },
    /// A job of another guard process (`headroom guard` in a terminal), asked on that
    /// guard's socket.
    Guard {
        /// The guard process.
        guard_pid: u32,
    },
}

/// Another pausable guarded job, as one job sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peer {
    /// Where to ask it.
    pub at: PeerAt,
    /// Its leader's pid (what messages name).
    pub pid: u32,
    /// When it started, ms since the Unix epoch.
    pub started_at_ms: i64,
    /// Since when it is paused, ms since the epoch; `None` while it runs.
    pub paused_since_ms: Option<i64>,
    /// When it was last resumed, ms since the epoch.
    pub resumed_at_ms: Option<i64>,
    /// It resumes by itself once memory is back (`--resume-free`).
    pub resumes_by_itself: bool,
    /// It may still be paused for room (pauses left).
    pub pausable: bool,
}

/// The job deciding: when it started and its pid (for ties), and since when its budget
/// counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Me {
    /// When it started, ms since the Unix epoch.
    pub started_at_ms: i64,
    /// Its leader's pid.
    pub pid: u32,
    /// Since when its budget counts (its start, its last resume, the last pause that made
    /// room for it), ms since the epoch: only a pause after it answers a crossing.
    pub budget_since_ms: i64,
}

impl Me {
    /// True when `peer` is younger than this job.
    fn older_than(&self, peer: &Peer) -> bool {
        (peer.started_at_ms, peer.pid) > (self.started_at_ms, self.pid)
    }
}

/// What answers a crossing of a pausable job.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<'a> {
    /// A younger job was just paused: its pause answers this crossing.
    Answered(&'a Peer),
    /// Ask this younger job to pause in this one's place.
    Ask(&'a Peer),
    /// No younger job runs: pause this one.
    PauseSelf,
}

/// The answer to a crossing of `me` at `now_ms`, given the other pausable jobs `peers`
/// (those in `declined` refused a request already and are not asked again).
pub fn answer_crossing<'a>(
    me: Me,
    now_ms: i64,
    peers: &'a [Peer],
    declined: &[PeerAt],
) -> Answer<'a> {
    let younger = || peers.iter().filter(|p| me.older_than(p));
    let window = i64::try_from(ANSWERED_WITHIN.as_millis()).unwrap_or(i64::MAX);
    if let Some(paused) = younger()
        .filter(|p| {
            p.paused_since_ms
                .is_some_and(|at| at > me.budget_since_ms && now_ms - at <= window)
        })
        .max_by_key(|p| p.paused_since_ms)
    {
        return Answer::Answered(paused);
    }
    match younger()
        .filter(|p| p.paused_since_ms.is_none() && p.pausable && !declined.contains(&p.at))
        .max_by_key(|p| (p.started_at_ms, p.pid))
    {
        Some(peer) => Answer::Ask(peer),
        None => Answer::PauseSelf,
    }
}

/// Whether paused job `me` may resume by itself at `now_ms` (its own conditions met): no
/// younger job that resumes by itself is still paused, and none resumed in the last `calm`.
pub fn may_resume(me: Me, now_ms: i64, calm: Duration, peers: &[Peer]) -> bool {
    let calm_ms = i64::try_from(calm.as_millis()).unwrap_or(i64::MAX);
    let younger_waits = peers
        .iter()
        .any(|p| me.older_than(p) && p.paused_since_ms.is_some() && p.resumes_by_itself);
    let just_resumed = peers
        .iter()
        .any(|p| p.resumed_at_ms.is_some_and(|at| now_ms - at < calm_ms));
    !younger_waits && !just_resumed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(pid: u32, started_at_ms: i64, paused_since_ms: Option<i64>) -> Peer {
        Peer {
            at: PeerAt::Guard { guard_pid: pid + 1 },
            pid,
            started_at_ms,
            paused_since_ms,
            resumed_at_ms: None,
            resumes_by_itself: true,
            pausable: true,
        }
    }

    const ME: Me = Me {
        started_at_ms: 1_000,
        pid: 50,
        budget_since_ms: 1_000,
    };

    #[test]
    fn a_crossing_pauses_the_youngest_that_runs() {
        let now = 100_000;
        let old = peer(10, 500, None);
        let young = peer(20, 2_000, None);
        let younger = peer(30, 3_000, None);
        let paused_long_ago = peer(40, 4_000, Some(now - 60_000));
        let spent = Peer {
            pausable: false,
            ..peer(60, 5_000, None)
        };
        let all = vec![old.clone(), young.clone(), younger.clone()];
        let cases: Vec<(&str, Vec<Peer>, Vec<PeerAt>, Answer)> = vec![
            ("alone", vec![], vec![], Answer::PauseSelf),
            (
                "only older ones",
                vec![old.clone()],
                vec![],
                Answer::PauseSelf,
            ),
            (
                "the youngest of two",
                all.clone(),
                vec![],
                Answer::Ask(&all[2]),
            ),
            (
                "a declined one is skipped",
                all.clone(),
                vec![younger.at],
                Answer::Ask(&all[1]),
            ),
            (
                "a long-paused younger one answers nothing",
                vec![paused_long_ago.clone(), young.clone()],
                vec![],
                Answer::Ask(&young),
            ),
            (
                "one without pauses left is not asked",
                vec![spent.clone()],
                vec![],
                Answer::PauseSelf,
            ),
        ];
        for (what, peers, declined, want) in &cases {
            let got = answer_crossing(ME, now, peers, declined);
            let want = match want {
                Answer::Ask(p) => {
                    Answer::Ask(peers.iter().find(|q| q.pid == p.pid).expect("in the list"))
                }
                other => other.clone(),
            };
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn a_younger_job_paused_a_moment_ago_answers_the_crossing() {
        let now = 100_000;
        let just = peer(20, 2_000, Some(now - 1_000));
        let runs = peer(30, 3_000, None);
        let peers = [just.clone(), runs];
        assert_eq!(
            answer_crossing(ME, now, &peers, &[]),
            Answer::Answered(&just)
        );
        // An older job paused a moment ago answers nothing for this one.
        let older = peer(5, 100, Some(now - 500));
        assert_eq!(
            answer_crossing(ME, now, std::slice::from_ref(&older), &[]),
            Answer::PauseSelf
        );
        // Past the window it does not answer any more.
        let later = now + ANSWERED_WITHIN.as_millis() as i64 + 1;
        assert_eq!(
            answer_crossing(ME, later, &peers, &[]),
            Answer::Ask(&peers[1])
        );
        // Nor does a pause that came before this job's budget last counted anew: it answered
        // an earlier crossing.
        let rebased = Me {
            budget_since_ms: now - 500,
            ..ME
        };
        assert_eq!(
            answer_crossing(rebased, now, &peers, &[]),
            Answer::Ask(&peers[1])
        );
    }

    #[test]
    fn ties_of_start_time_go_by_pid() {
        let same = peer(60, ME.started_at_ms, None);
        let lower = peer(40, ME.started_at_ms, None);
        let peers = [same, lower];
        assert_eq!(answer_crossing(ME, 0, &peers, &[]), Answer::Ask(&peers[0]));
    }

    #[test]
    fn the_youngest_paused_resumes_first_and_one_at_a_time() {
        let now = 100_000;
        let calm = Duration::from_secs(5);
        let cases: Vec<(&str, Vec<Peer>, bool)> = vec![
            ("alone", vec![], true),
            ("an older one paused", vec![peer(10, 500, Some(now))], true),
            (
                "a younger one still paused",
                vec![peer(20, 2_000, Some(now - 9_000))],
                false,
            ),
            (
                "a younger one paused that never resumes by itself",
                vec![Peer {
                    resumes_by_itself: false,
                    ..peer(20, 2_000, Some(now - 9_000))
                }],
                true,
            ),
            (
                "a younger one resumed a moment ago",
                vec![Peer {
                    resumed_at_ms: Some(now - 1_000),
                    ..peer(20, 2_000, None)
                }],
                false,
            ),
            (
                "a younger one resumed a calm period ago",
                vec![Peer {
                    resumed_at_ms: Some(now - 5_000),
                    ..peer(20, 2_000, None)
                }],
                true,
            ),
        ];
        for (what, peers, want) in cases {
            assert_eq!(may_resume(ME, now, calm, &peers), want, "{what}");
        }
    }
}
