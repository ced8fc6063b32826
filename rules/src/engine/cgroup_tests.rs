//! A job in a cgroup of its own is judged by that cgroup's OOM count, never the host's, and
//! the two are never mixed across readings.

use super::tests::{id, moment, running, set, spec, t0, MIB};
use super::*;
use crate::policy::{EndReason, Limits};
use crate::sample::{Sample, TrackedSample};

/// Sample `seq` of job `root`: alive or gone, in its own cgroup or not, with the host's and
/// its cgroup's OOM counts.
fn sample(
    seq: u64,
    root: headroom_model::process::ProcessIdentity,
    alive: bool,
    own: bool,
    host_ooms: u64,
    job_ooms: Option<u64>,
) -> Sample {
    let mut system = headroom_model::testdata::system_counters(0, 50.0);
    system.oom_kills = Some(host_ooms);
    Sample {
        aimed: false,
        seq,
        at: t0() + Duration::from_millis(seq * 500),
        since_start: Duration::from_millis(seq * 500),
        system: Some(system),
        tracked: vec![TrackedSample {
            identity: root,
            memory: None,
            members: if alive {
                vec![running(root)]
            } else {
                Vec::new()
            },
            kernel_peak_bytes: Some(100 * MIB),
            in_own_cgroup: own,
            cgroup_oom_kills: job_ooms,
        }],
        error: None,
    }
}

/// The verdict of a job killed by SIGKILL after these counts (host, job's own), first and last.
fn oom_killed(own: bool, first: (u64, Option<u64>), last: (u64, Option<u64>)) -> bool {
    let root = id(40);
    let mut jobs = Engine::default();
    let job = jobs.add(
        set(root),
        spec("x", JobMode::Guard, Limits::default()),
        StartMemory::swap(0),
        moment(0),
    );
    jobs.on_sample(&sample(0, root, true, own, first.0, first.1));
    jobs.set_exit(job, EndReason::Signaled { signal: 9 });
    jobs.on_sample(&sample(1, root, false, own, last.0, last.1));
    jobs.verdict(job).expect("ended").oom_killed.is_some()
}

#[test]
fn the_oom_count_of_a_jobs_own_cgroup_decides() {
    // Its own cgroup's count went up: the OOM killer, whatever the host says.
    assert!(oom_killed(true, (5, Some(0)), (5, Some(1))));
    // The host's went up (another cgroup's OOM), its own did not: a SIGKILL, not an OOM.
    assert!(!oom_killed(true, (5, Some(0)), (9, Some(0))));
    // Its own count unread at the end: the host's is not used in its place.
    assert!(!oom_killed(true, (5, Some(0)), (9, None)));
    // Without a cgroup of its own: the host's count.
    assert!(oom_killed(false, (5, None), (6, None)));
}
