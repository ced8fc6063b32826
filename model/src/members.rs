//! A job's members as plain data: one live member and what it was doing ([`Member`]), and
//! who a job is ([`JobIds`]). `headroom-os` follows the members (`members::MemberSet`).

use serde::Serialize;

use crate::counters::{JobCgroup, RunState};
use crate::process::ProcessIdentity;

/// One live member of a job, as last looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Member {
    /// Who it is.
    pub id: ProcessIdentity,
    /// What it was doing (never [`RunState::Dead`]: a dead member is no member).
    pub state: RunState,
}

/// Who a job is, as plain ids: the process it is named by and the cgroup Headroom made for
/// it, if any. What the job engine keeps of a job (`headroom_rules::engine`): the
/// `headroom_os::members::MemberSet` that follows its processes stays with whoever samples
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobIds {
    /// The process the job is named by.
    pub root: ProcessIdentity,
    /// Its own cgroup (see `headroom_os::members::Members::in_cgroup`).
    pub cgroup: Option<JobCgroup>,
}

impl JobIds {
    /// A job named by `root`, without a cgroup of its own.
    pub fn of_process(root: ProcessIdentity) -> Self {
        JobIds { root, cgroup: None }
    }
}
