//! A job's processes: every process that belongs to a job, each remembered by (pid, start
//! time) while it lives, so a worker that calls `setsid()`, double-forks or is re-parented
//! stays a member.
//!
//! - A command Headroom started: its process group's leader and every descendant ever seen.
//!   Where the OS allows it the starting process is a subreaper (`jobctl::become_subreaper`),
//!   so orphans are re-parented to it and found as its descendants, however fast their
//!   parent exits. Where it does not (macOS: no subreaper, orphans go to launchd), the
//!   command's process group is listed at each look (`CounterSource::group_pids`), and
//!   every few looks each process is asked which parent it was forked from
//!   (`CounterSource::lineage`: a `setsid` worker whose parent exited is still found) and,
//!   when it started after the job, whether its environment carries the job's mark
//!   (`CounterSource::carries_job_mark`, `HEADROOM_JOB`, which the guard gives the command and
//!   fork and exec pass on). What xnu keeps and what escapes: the forked-from id
//!   (`p_puniqueid`) survives re-parenting but not an exec after it (`pinsertchild` sets it
//!   to the new parent, launchd) and names a parent only if that parent was seen; the mark
//!   survives both, and a double fork whose middle process lived less than one look. A
//!   process that leaves the group (`setsid`, `setpgid`), whose parent was never seen or which
//!   exec'd after its re-parenting, AND that cleared its environment (`env -i`, a launchd job)
//!   is not found.
//! - A process picked by pid: it and every descendant ever seen.
//!
//! The job runs while any member lives. [`MemberSet::refresh`] runs once a tick on the
//! sampler thread: it drops members that are gone (a failed read never drops one), finds new
//! ones among the children of live members (and of the reaper), reads each one's state
//! (running, stopped) and sums their memory. Every read is complete and fresh: the members
//! and states a tick reports are what a stop or a pause is verified against.

use headroom_model::members::{JobIds, Member};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::counters::{CounterSource, Result};
use crate::unix::exits::{ExitWatch, ExitWatches};
use headroom_model::counters::{JobCgroup, JobCgroupState, ProcessState, RunState};
use headroom_model::process::{ProcessIdentity, TreeMemory};

/// The processes of one job.
#[derive(Debug, Clone)]
pub struct Members {
    root: ProcessIdentity,
    /// A process whose children all belong to the job (the subreaper that started it).
    reaper: Option<u32>,
    /// The command's own process group (a command Headroom started leads it).
    group: Option<u32>,
    live: Vec<Member>,
    ever: HashSet<ProcessIdentity>,
    /// Unique ids of the members seen (where the OS has them), for the lineage search.
    unique_ids: HashSet<u64>,
    /// The root's unique id: a process with a larger one started after the job.
    root_unique: Option<u64>,
    /// The mark the job's command carries in its environment (macOS: the lineage search).
    mark: Option<String>,
    /// Looks so far: the lineage search runs every [`LINEAGE_EVERY`].
    looks: u64,
    /// A job taken over from its file ([`Members::taken_over`]): no subreaper holds what it
    /// forks any more, so each look also searches for the processes that carry its mark.
    orphans_by_mark: bool,
    /// The job's own cgroup, where it has one: its processes are the members, exactly.
    cgroup: Option<JobCgroup>,
    /// The kernel's high-water mark of the cgroup's memory at the last look.
    cgroup_peak_bytes: Option<u64>,
    /// The cgroup as the last look read it (`None` when that read failed).
    cgroup_now: Option<JobCgroupState>,
    /// The members' memory at the last full refresh: what a light one hands on.
    memory_then: Option<TreeMemory>,
    /// Exit watches on up to [`WATCHED_AT_MOST`] live members: a light look asks them all
    /// at once instead of reading each one's state.
    watches: ExitWatches<ProcessIdentity>,
}

/// Members watched for their exit at most (one descriptor each); the others are looked at
/// by their state at every check, while the job has at most [`LIGHT_READS_AT_MOST`] of
/// them (a larger job's at its full looks).
pub const WATCHED_AT_MOST: usize = 64;

/// A light look reads the files of at most this many members (their state, and without a
/// job cgroup their memory): a job with more is looked at by its exit watches alone between
/// full looks, and its memory is the last full look's, so that a light check costs what it
/// costs for one process whatever the job's size (a member gone unwatched, or a peak
/// between two full looks, is seen at the next full one; the stop rules read the system's
/// swap and free memory at every check).
pub const LIGHT_READS_AT_MOST: usize = 16;

/// The lineage search (every pid asked who its parent was) runs once every this many looks:
/// it costs one call per process.
pub const LINEAGE_EVERY: u64 = 8;

impl Members {
    /// The job of a command Headroom started: `leader` (its own group) and descendants. With
    /// `reaper` (our pid, when we are a subreaper that started nothing else), orphaned
    /// descendants are found among the reaper's children.
    pub fn of_command(leader: ProcessIdentity, reaper: Option<u32>) -> Self {
        Members {
            root: leader,
            reaper,
            group: Some(leader.pid),
            live: vec![Member {
                id: leader,
                state: RunState::Running,
            }],
            ever: HashSet::from([leader]),
            unique_ids: HashSet::new(),
            root_unique: None,
            mark: None,
            looks: 0,
            orphans_by_mark: false,
            cgroup: None,
            cgroup_peak_bytes: None,
            cgroup_now: None,
            memory_then: None,
            watches: ExitWatches::default(),
        }
    }

    /// A job whose guard is gone, taken over from its job file: `root` (its leader, alive or
    /// not), the members the file `listed`, and from then on their descendants (no subreaper
    /// catches what they fork any more, and the group is not listed: its id may name another
    /// job's group by now) and, with the guard's mark ([`Members::with_mark`]), every process
    /// started since the job that carries the mark in its environment (what the job forked
    /// after its guard died, re-parented out of every member's tree). Where the job has a
    /// cgroup of its own ([`Members::in_cgroup`]), its processes are the members, exactly.
    pub fn taken_over(root: ProcessIdentity, listed: &[ProcessIdentity]) -> Self {
        let mut members = Self::of_process(root);
        members.orphans_by_mark = true;
        for id in listed {
            if members.ever.insert(*id) {
                members.live.push(Member {
                    id: *id,
                    state: RunState::Running,
                });
            }
        }
        members
    }

    /// The job runs in `cgroup`, its own: every process in it is a member, and a frozen
    /// cgroup's members are stopped.
    pub fn in_cgroup(mut self, cgroup: JobCgroup) -> Self {
        self.cgroup = Some(cgroup);
        self
    }

    /// The mark the guard `guard` gives the command it starts ([`Members::with_mark`]): its
    /// identity, `PID.START`; whoever takes the job over after the guard is gone looks for it.
    pub fn mark_of(guard: ProcessIdentity) -> String {
        format!("{}.{}", guard.pid, guard.start_time)
    }

    /// The job's command carries `mark` in its environment ([`headroom_model::counters::JOB_MARK_ENV`]):
    /// where the OS tracks lineage, a process started after the job that carries it is a
    /// member, however it was re-parented.
    pub fn with_mark(mut self, mark: String) -> Self {
        self.mark = Some(mark);
        self
    }

    /// The job's own cgroup, if it has one.
    pub fn cgroup(&self) -> Option<&JobCgroup> {
        self.cgroup.as_ref()
    }

    /// The job of a picked process: it and its descendants.
    pub fn of_process(root: ProcessIdentity) -> Self {
        Members {
            group: None,
            ..Self::of_command(root, None)
        }
    }

    /// The process the job is named by (the leader, or the picked process).
    pub fn root(&self) -> ProcessIdentity {
        self.root
    }

    /// Live members, parents before their children as found.
    pub fn live(&self) -> &[Member] {
        &self.live
    }

    /// How many distinct processes the job has had.
    pub fn ever(&self) -> u32 {
        u32::try_from(self.ever.len()).unwrap_or(u32::MAX)
    }

    /// Drops members that are gone, reads the state of the others and adds new members: the
    /// processes of its own cgroup when it has one (exact: no tree walked), else new
    /// descendants (and, where the OS needs it, the group's processes and those forked from a
    /// member); returns the live count.
    pub fn discover(&mut self, counters: &impl CounterSource) -> usize {
        self.look_at_known(counters);
        let lineage = counters.tracks_lineage();
        if lineage && self.looks == 0 {
            let root = self.root.pid;
            self.remember_lineage(counters, root);
        }
        let mut queue: Vec<u32> = self.live.iter().map(|m| m.id.pid).collect();
        queue.extend(self.reaper);
        let mut visited: HashSet<u32> = queue.iter().copied().collect();
        let mut found: Vec<u32> = Vec::new();
        if let Some(group) = self.group {
            found.extend(counters.group_pids(group).unwrap_or_default());
        }
        let mut frozen = false;
        self.cgroup_now = self
            .cgroup
            .as_ref()
            .and_then(|c| counters.job_cgroup(c).ok());
        if let Some(state) = &mut self.cgroup_now {
            found.extend(std::mem::take(&mut state.pids));
            frozen = state.frozen;
            self.cgroup_peak_bytes = state.peak_bytes.or(self.cgroup_peak_bytes);
        }
        if lineage && self.looks.is_multiple_of(LINEAGE_EVERY) {
            found.extend(self.forked_from_members(counters, &visited));
        } else if self.orphans_by_mark && !lineage && self.cgroup.is_none() {
            found.extend(self.marked_since_root(counters, &visited));
        }
        self.looks += 1;
        for pid in found {
            if visited.insert(pid) && self.add(counters, pid) {
                queue.push(pid);
            }
        }
        // A cgroup of its own lists every process of the job: no tree to walk (a process
        // moved out of it by root is no member any more).
        if self.cgroup_now.is_some() {
            queue.clear();
        }
        while let Some(parent) = queue.pop() {
            for child in counters.child_pids(parent).unwrap_or_default() {
                if visited.insert(child) && self.add(counters, child) {
                    queue.push(child);
                }
            }
        }
        if frozen {
            // A frozen cgroup's processes run no instruction, whatever /proc says of them.
            for member in &mut self.live {
                member.state = RunState::Stopped;
            }
        }
        self.live.len()
    }

    /// Reads the state of each known member and drops those that are gone; true when one
    /// was. A member not watched yet gets its exit watch here, when one is to be had.
    fn look_at_known(&mut self, counters: &impl CounterSource) -> bool {
        let before = self.live.len();
        let watches = &mut self.watches;
        let mut gone = Vec::new();
        self.live.retain_mut(|member| {
            let now = if watches.watches(member.id) {
                counters.process_state(member.id.pid)
            } else {
                let (now, watch) = state_watched(counters, watches.len(), member.id.pid);
                if let (Ok(state), Some(watch)) = (&now, watch) {
                    if state.start_time == member.id.start_time {
                        watches.add(member.id, watch);
                    }
                }
                now
            };
            let live = still_lives(member, now);
            if !live {
                gone.push(member.id);
            }
            live
        });
        watches.retain(|id| !gone.contains(&id));
        self.live.len() != before
    }

    /// A light look at the known members: true when one is gone. The watched ones are asked
    /// all at once, with no read (their state stays as the last full look read it: while
    /// the job runs, only its pauses and stops read states, and those look fully); the
    /// others by their state, as at a full look.
    fn look_light(&mut self, counters: &impl CounterSource) -> bool {
        if self.watches.any_exited() {
            return true;
        }
        if self.states_unread() {
            return false;
        }
        let before = self.live.len();
        let watches = &self.watches;
        self.live.retain_mut(|member| {
            watches.watches(member.id) || still_lives(member, counters.process_state(member.id.pid))
        });
        self.live.len() != before
    }

    /// Adds `pid` as a member if it lives; true when it does (then its children are looked
    /// at too).
    fn add(&mut self, counters: &impl CounterSource, pid: u32) -> bool {
        let (state, watch) = state_watched(counters, self.watches.len(), pid);
        let Ok(state) = state else {
            return false;
        };
        if state.run == RunState::Dead {
            return false;
        }
        let id = ProcessIdentity {
            pid,
            start_time: state.start_time,
        };
        if !self.live.iter().any(|m| m.id == id) {
            self.live.push(Member {
                id,
                state: state.run,
            });
            if let Some(watch) = watch {
                self.watches.add(id, watch);
            }
            self.ever.insert(id);
            if counters.tracks_lineage() {
                self.remember_lineage(counters, pid);
            }
        }
        true
    }

    fn remember_lineage(&mut self, counters: &impl CounterSource, pid: u32) {
        if let Ok(Some((unique, _))) = counters.lineage(pid) {
            self.unique_ids.insert(unique);
            if pid == self.root.pid {
                self.root_unique.get_or_insert(unique);
            }
        }
    }

    /// The processes not yet members that were forked from a member (by unique id), or that
    /// started after the job and carry its mark.
    fn forked_from_members(&self, counters: &impl CounterSource, known: &HashSet<u32>) -> Vec<u32> {
        if self.unique_ids.is_empty() {
            return Vec::new();
        }
        let marked = |pid: u32, unique: u64| {
            let newer = self.root_unique.is_some_and(|root| unique > root);
            self.mark
                .as_deref()
                .is_some_and(|mark| newer && counters.carries_job_mark(pid, mark).unwrap_or(false))
        };
        let all = counters.all_pids().unwrap_or_default();
        all.into_iter()
            .filter(|pid| !known.contains(pid))
            .filter(|&pid| match counters.lineage(pid) {
                Ok(Some((unique, parent))) => {
                    self.unique_ids.contains(&parent) || marked(pid, unique)
                }
                _ => false,
            })
            .collect()
    }

    /// The processes not yet members that started no earlier than the job's root and carry
    /// the job's mark: where no lineage is tracked, what a job taken over forked after its
    /// guard died (a `setsid`, double-forked worker) is found only so. A process that also
    /// cleared its environment is not found (without a cgroup of its own, nothing else ties
    /// it to the job).
    fn marked_since_root(&self, counters: &impl CounterSource, known: &HashSet<u32>) -> Vec<u32> {
        let Some(mark) = self.mark.as_deref() else {
            return Vec::new();
        };
        let since = self.root.start_time;
        counters
            .all_pids()
            .unwrap_or_default()
            .into_iter()
            .filter(|pid| !known.contains(pid))
            .filter(|&pid| {
                counters
                    .start_time_even_exited(pid)
                    .is_ok_and(|started| started >= since)
                    && counters.carries_job_mark(pid, mark).unwrap_or(false)
            })
            .collect()
    }

    /// [`Members::discover`], then the summed memory of the live members; `None` once no
    /// member lives. A member whose memory cannot be read still counts as alive. A member
    /// that died between the two reads may have left children the look missed (re-parented
    /// to the reaper meanwhile): then the job is looked at again, a few times at most, so a
    /// job is never taken for ended while such a child runs.
    pub fn refresh(&mut self, counters: &impl CounterSource) -> Option<TreeMemory> {
        self.memory_then = self.refresh_full(counters);
        self.memory_then
    }

    fn refresh_full(&mut self, counters: &impl CounterSource) -> Option<TreeMemory> {
        for _ in 0..REFRESH_ATTEMPTS {
            if self.discover(counters) == 0 {
                return None;
            }
            let (total, gone) = self.memory(counters);
            if gone.is_empty() {
                return Some(self.with_cgroup(total));
            }
            self.drop_gone(&gone);
        }
        let (total, gone) = self.memory(counters);
        self.drop_gone(&gone);
        (!self.live.is_empty()).then(|| self.with_cgroup(total))
    }

    /// Drops the members found `gone`, and their exit watches.
    fn drop_gone(&mut self, gone: &[ProcessIdentity]) {
        self.live.retain(|m| !gone.contains(&m.id));
        self.watches.retain(|id| !gone.contains(&id));
    }

    /// A light check's look (between full ones, while the job runs: see `crate::sampler`):
    /// whether each known member still lives, asked of their exit watches in one call (a
    /// member without one: its state read fresh, its `stat`); new members are looked for at
    /// the full ones. The members' memory is read fresh too, but for a job in a memory
    /// cgroup of its own (its figures are the cgroup's, read at the full looks: the kernel
    /// keeps its peak, so none is missed) and a job of more than [`LIGHT_READS_AT_MOST`]
    /// processes (the last full look's). `None` when a light look will not do, and a full
    /// [`Members::refresh`] is due: a member is gone (the job may be ending, and a member's
    /// children are the reaper's now), or there was no full refresh yet.
    pub fn refresh_light(&mut self, counters: &impl CounterSource) -> Option<TreeMemory> {
        let then = self.memory_then?;
        if self.look_light(counters) || self.live.is_empty() {
            return None;
        }
        if self.memory_unread() {
            return Some(then);
        }
        let (total, gone) = self.memory(counters);
        gone.is_empty().then(|| self.with_cgroup(total))
    }

    /// A light look reads no member's state: every live one is watched for its exit, or the
    /// job is too large for their states to be read.
    fn states_unread(&self) -> bool {
        self.watches.len() == self.live.len() || self.live.len() > LIGHT_READS_AT_MOST
    }

    /// A light look reads no member's memory: the job's is its cgroup's, or the job is too
    /// large for each member's to be read (the last full look's is handed on).
    fn memory_unread(&self) -> bool {
        let cgroup_figures = self
            .cgroup_now
            .as_ref()
            .is_some_and(|c| c.working_set_bytes.is_some());
        cgroup_figures || self.live.len() > LIGHT_READS_AT_MOST
    }

    /// A quiet look ([`MemberSet::quiet_look`]): what a light look would find, where that
    /// reads no member's file and no watched member has exited; `None` when a light look
    /// would read something, or find a member gone.
    fn quiet_look(&mut self) -> Option<TreeMemory> {
        let then = self.memory_then?;
        let unread = self.states_unread() && self.memory_unread();
        (unread && !self.live.is_empty() && !self.watches.any_exited()).then_some(then)
    }

    /// The members' summed memory, with the kernel's own numbers where the job has a cgroup
    /// of its own and it was read: its working set as the footprint (every page charged to
    /// it, whichever member or file it is), its accounted swap as the swap.
    fn with_cgroup(&self, mut total: TreeMemory) -> TreeMemory {
        if let Some(state) = &self.cgroup_now {
            if let Some(working_set) = state.working_set_bytes {
                total.footprint_bytes = working_set;
            }
            if state.swap_bytes.is_some() {
                total.swap_bytes = state.swap_bytes;
            }
        }
        total
    }

    /// OOM kills in the job's own cgroup at the last look.
    pub fn cgroup_oom_kills(&self) -> Option<u64> {
        self.cgroup_now.as_ref()?.oom_kills
    }

    /// The summed memory of the live members, and the members found gone meanwhile.
    fn memory(&self, counters: &impl CounterSource) -> (TreeMemory, Vec<ProcessIdentity>) {
        let mut total = TreeMemory {
            pid: self.root.pid,
            ..TreeMemory::default()
        };
        let mut gone = Vec::new();
        for member in &self.live {
            match counters.process_memory(member.id.pid) {
                Ok(m) => total.add(&m),
                Err(e) if e.is_gone() => gone.push(member.id),
                Err(_) => total.processes += 1,
            }
        }
        (total, gone)
    }
}

/// Whether `member` still lives by the state `now` read of its pid (its state updated when
/// it does): not when it exited or the pid names another process now; a failed read drops
/// no member.
fn still_lives(member: &mut Member, now: Result<ProcessState>) -> bool {
    match now {
        Ok(now) if now.start_time == member.id.start_time && now.run != RunState::Dead => {
            member.state = now.run;
            true
        }
        Ok(_) => false,
        Err(e) => !e.is_gone(),
    }
}

/// `pid`'s state, read once, and a watch on its exit when fewer than [`WATCHED_AT_MOST`]
/// are `watched` and the OS has one. The watch is opened before the read and kept only when
/// the process has not exited after it: it then names the process the state is of (see
/// [`crate::unix::exits`]).
fn state_watched(
    counters: &impl CounterSource,
    watched: usize,
    pid: u32,
) -> (Result<ProcessState>, Option<ExitWatch>) {
    // Under a low limit on open files, fewer (half the spare: `limits::spare_descriptors`);
    // a member without a watch is read by its state.
    let most = WATCHED_AT_MOST.min(crate::counters::limits::spare_descriptors() / 2);
    let watch = (watched < most && counters.live_processes())
        .then(|| ExitWatch::open(pid))
        .flatten();
    let state = counters.process_state(pid);
    let alive = matches!(&state, Ok(s) if s.run != RunState::Dead);
    (state, watch.filter(|w| alive && !w.exited()))
}

/// Looks at a job in one refresh at most (see [`Members::refresh`]).
const REFRESH_ATTEMPTS: usize = 3;

/// A job's members shared between the sampler (which refreshes them every tick) and whoever
/// stops, pauses or shows the job.
#[derive(Debug, Clone)]
pub struct MemberSet(Arc<Mutex<Members>>);

impl MemberSet {
    /// Shares `members`.
    pub fn new(members: Members) -> Self {
        MemberSet(Arc::new(Mutex::new(members)))
    }

    fn lock(&self) -> MutexGuard<'_, Members> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The process the job is named by.
    pub fn root(&self) -> ProcessIdentity {
        self.lock().root()
    }

    /// Live members as last refreshed.
    pub fn live(&self) -> Vec<Member> {
        self.lock().live().to_vec()
    }

    /// How many live members the last look found (no read now).
    pub fn live_count(&self) -> usize {
        self.lock().live().len()
    }

    /// True when process `pid` was a live member at the last look (no read now).
    pub fn knows(&self, pid: u32) -> bool {
        self.lock().live().iter().any(|m| m.id.pid == pid)
    }

    /// How many distinct processes the job has had.
    pub fn ever(&self) -> u32 {
        self.lock().ever()
    }

    /// Finds new members and drops gone ones now; returns the live members.
    pub fn discover(&self, counters: &impl CounterSource) -> Vec<Member> {
        let mut members = self.lock();
        members.discover(counters);
        members.live().to_vec()
    }

    /// [`Members::refresh`], and the live members it found.
    pub fn refresh(&self, counters: &impl CounterSource) -> (Option<TreeMemory>, Vec<Member>) {
        let mut members = self.lock();
        let memory = members.refresh(counters);
        (memory, members.live().to_vec())
    }

    /// [`Members::refresh_light`], and the live members it found; `None` when a full
    /// refresh is due.
    pub fn refresh_light(
        &self,
        counters: &impl CounterSource,
    ) -> Option<(Option<TreeMemory>, Vec<Member>)> {
        let mut members = self.lock();
        let memory = members.refresh_light(counters)?;
        Some((Some(memory), members.live().to_vec()))
    }

    /// A quiet look, between the light looks of a job that sits still
    /// (`headroom_rules::policy::quiet`): the memory a light look would hand on, where that
    /// reads no member's file (a job with its own memory cgroup, or one too large for a light
    /// look to read its members), asking the members' exit watches; `None` where a light look
    /// is needed (it would read a member's file, or a member has exited). So a quiet look
    /// finds what a light one would.
    pub fn quiet_look(&self) -> Option<TreeMemory> {
        self.lock().quiet_look()
    }

    /// The live members as the last look found them.
    pub fn live_members(&self) -> Vec<Member> {
        self.lock().live().to_vec()
    }

    /// The job's own cgroup, if it has one.
    pub fn cgroup(&self) -> Option<JobCgroup> {
        self.lock().cgroup().cloned()
    }

    /// Who the job is, as plain ids (what the job engine keeps of it).
    pub fn ids(&self) -> JobIds {
        let members = self.lock();
        JobIds {
            root: members.root(),
            cgroup: members.cgroup().cloned(),
        }
    }

    /// True when the job has a memory cgroup of its own (see [`JobCgroup::memory`]).
    pub fn in_own_memory_cgroup(&self) -> bool {
        self.lock().cgroup().is_some_and(|c| c.memory)
    }

    /// The kernel's high-water mark of the job's memory at the last look, where the job has a
    /// cgroup of its own (`memory.peak`, `max_usage_in_bytes`): measured even when an
    /// allocation outruns the checks, and kept after the job's end.
    pub fn kernel_peak_bytes(&self) -> Option<u64> {
        self.lock().cgroup_peak_bytes
    }

    /// OOM kills in the job's own cgroup at the last look (see [`Members::cgroup_oom_kills`]).
    pub fn cgroup_oom_kills(&self) -> Option<u64> {
        self.lock().cgroup_oom_kills()
    }

    /// True when both handles share one set.
    pub fn same_as(&self, other: &MemberSet) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
mod tests {
    use super::*;
    use crate::process::ProcessLookup;
    use std::process::Command;
    use std::time::Duration;

    #[test]
    fn a_reparented_grandchild_stays_a_member() {
        let counters = crate::counters::Counters::new();
        // sh starts a background sleep and waits a little, then exits: the sleep is
        // re-parented (to init or a subreaper) but must stay a member.
        let mut sh = Command::new("sh")
            .args(["-c", "sleep 30 & echo $! ; sleep 0.3"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let id = ProcessIdentity::of(&counters, sh.id()).unwrap();
        let set = MemberSet::new(Members::of_process(id));
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(sh.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let sleep_pid: u32 = line.trim().parse().unwrap();
        let found = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            set.discover(&counters)
                .iter()
                .any(|m| m.id.pid == sleep_pid)
        });
        assert!(found, "the background child was not found");
        sh.wait().unwrap();
        let live = set.discover(&counters);
        assert_eq!(live.len(), 1, "{live:?}");
        assert_eq!(live[0].id.pid, sleep_pid);
        assert!(set.refresh(&counters).0.is_some_and(|m| m.processes == 1));
        assert_eq!(
            set.ever(),
            3,
            "sh, its foreground sleep, the background one"
        );
        // SAFETY: our own child's child, identified just above.
        unsafe { libc::kill(sleep_pid as i32, libc::SIGKILL) };
        assert!((0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            set.refresh(&counters).0.is_none()
        }));
    }

    #[test]
    fn a_light_look_reads_the_known_members_and_asks_for_a_full_one_when_one_is_gone() {
        let counters = crate::counters::Counters::new();
        // sh with a background sleep it waits for: two members, then a third born later.
        let mut sh = Command::new("sh")
            .args([
                "-c",
                "sleep 30 & echo $!; read line; sleep 30 & echo $!; wait",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(sh.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        let first: u32 = line.trim().parse().unwrap();
        let id = ProcessIdentity::of(&counters, sh.id()).unwrap();
        let set = MemberSet::new(Members::of_process(id));
        assert!(set.refresh_light(&counters).is_none(), "no full look yet");
        let (memory, live) = set.refresh(&counters);
        assert_eq!(live.len(), 2, "{live:?}");
        let (light_memory, light_live) = set.refresh_light(&counters).unwrap();
        assert_eq!(light_live.len(), 2);
        // Tracked by its processes: their memory is read at every look (its peak).
        assert_eq!(
            light_memory.map(|m| m.processes),
            memory.map(|m| m.processes)
        );
        // A member born since: found by the next full look only.
        std::io::Write::write_all(sh.stdin.as_mut().unwrap(), b"go\n").unwrap();
        line.clear();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        let second: u32 = line.trim().parse().unwrap();
        let (_, light_live) = set.refresh_light(&counters).unwrap();
        assert!(!light_live.iter().any(|m| m.id.pid == second));
        assert!(set.refresh(&counters).1.iter().any(|m| m.id.pid == second));
        // A member gone: a light look will not do (the job may be ending).
        // SAFETY: our own child's child, read from its output just above.
        unsafe { libc::kill(first as i32, libc::SIGKILL) };
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            set.refresh_light(&counters).is_none()
        });
        assert!(gone, "the member's end was not seen");
        assert!(!set.refresh(&counters).1.iter().any(|m| m.id.pid == first));
        // SAFETY: as above.
        unsafe { libc::kill(second as i32, libc::SIGKILL) };
        let _ = sh.kill();
        let _ = sh.wait();
    }

    /// The live `/proc`, counting what is read of each process.
    struct Counting {
        inner: crate::counters::Counters,
        reads: std::cell::Cell<usize>,
    }

    impl CounterSource for Counting {
        fn read_system(&self) -> crate::counters::Result<headroom_model::counters::SystemCounters> {
            self.inner.read_system()
        }
        fn list_processes(
            &self,
        ) -> crate::counters::Result<Vec<headroom_model::counters::ProcessInfo>> {
            self.inner.list_processes()
        }
        fn process_info(
            &self,
            pid: u32,
        ) -> crate::counters::Result<headroom_model::counters::ProcessInfo> {
            self.inner.process_info(pid)
        }
        fn identity(
            &self,
            pid: u32,
        ) -> crate::counters::Result<headroom_model::counters::ProcessInfo> {
            self.inner.identity(pid)
        }
        fn process_state(
            &self,
            pid: u32,
        ) -> crate::counters::Result<headroom_model::counters::ProcessState> {
            self.reads.set(self.reads.get() + 1);
            self.inner.process_state(pid)
        }
        fn live_processes(&self) -> bool {
            self.inner.live_processes()
        }
        fn boot_id(&self) -> crate::counters::Result<String> {
            self.inner.boot_id()
        }
        fn process_memory(
            &self,
            pid: u32,
        ) -> crate::counters::Result<headroom_model::counters::ProcessMemory> {
            self.reads.set(self.reads.get() + 1);
            self.inner.process_memory(pid)
        }
        fn scan_footprints(
            &self,
        ) -> crate::counters::Result<Vec<headroom_model::counters::FootprintRow>> {
            self.inner.scan_footprints()
        }
        fn child_pids(&self, pid: u32) -> crate::counters::Result<Vec<u32>> {
            self.inner.child_pids(pid)
        }
    }

    #[test]
    fn a_light_look_at_a_large_job_reads_no_member_and_still_sees_one_end() {
        let counters = Counting {
            inner: crate::counters::Counters::new(),
            reads: std::cell::Cell::new(0),
        };
        // sh and its background sleeps: more members than a light look reads.
        let sleeps = LIGHT_READS_AT_MOST + 4;
        let mut sh = Command::new("sh")
            .args([
                "-c",
                &format!(
                    "i=0; while [ $i -lt {sleeps} ]; do sleep 30 & i=$((i+1)); done; echo $!; wait"
                ),
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(sh.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        let last: u32 = line.trim().parse().unwrap();
        let id = ProcessIdentity::of(&counters.inner, sh.id()).unwrap();
        let set = MemberSet::new(Members::of_process(id));
        let (memory, live) = set.refresh(&counters);
        assert_eq!(live.len(), sleeps + 1, "{live:?}");
        counters.reads.set(0);
        for _ in 0..10 {
            let (light_memory, light_live) = set.refresh_light(&counters).unwrap();
            assert_eq!(light_live.len(), sleeps + 1);
            assert_eq!(light_memory, memory, "the last full look's memory");
        }
        assert_eq!(counters.reads.get(), 0, "no member's file was read");
        // A member ends: its exit watch says so, and a full look is due.
        // SAFETY: our own child's child, read from its output just above.
        unsafe { libc::kill(last as i32, libc::SIGKILL) };
        let seen = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            set.refresh_light(&counters).is_none()
        });
        assert!(seen, "the member's end was not seen");
        let _ = Command::new("pkill")
            .args(["-P", &sh.id().to_string()])
            .status();
        let _ = sh.kill();
        let _ = sh.wait();
    }

    /// Waits until `pid` (a child of ours) shows `state` in its `stat`.
    #[cfg(target_os = "linux")]
    fn wait_for_state(counters: &crate::counters::Counters, pid: u32, state: RunState) {
        let seen = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            counters.process_state(pid).is_ok_and(|s| s.run == state)
        });
        assert!(seen, "{pid} never showed {state:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn light_looks_ask_the_exit_watches_without_reading_and_a_watch_closes_with_its_member() {
        let counters = crate::counters::Counters::new();
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let id = ProcessIdentity::of(&counters, child.id()).unwrap();
        let mut members = Members::of_process(id);
        assert!(members.refresh(&counters).is_some());
        assert!(
            members.watches.watches(id),
            "a full look watches the member"
        );
        // Stopped behind the light looks' back: they ask the watch, not `stat`, so they keep
        // the state the last full look read; the next full look reads it.
        // SAFETY: our own child, identified just above.
        unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
        wait_for_state(&counters, child.id(), RunState::Stopped);
        assert!(members.refresh_light(&counters).is_some());
        assert_eq!(members.live()[0].state, RunState::Running);
        assert!(members.refresh(&counters).is_some());
        assert_eq!(members.live()[0].state, RunState::Stopped);
        // Killed (a zombie of ours, not reaped): the watch says so, and a full look is due;
        // it drops the member and closes the watch.
        child.kill().unwrap();
        let ended = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            members.refresh_light(&counters).is_none()
        });
        assert!(ended, "the light looks never saw the exit");
        assert!(members.refresh(&counters).is_none());
        assert!(members.live().is_empty());
        assert!(
            members.watches.is_empty(),
            "the watch of a gone member is closed"
        );
        child.wait().unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn members_past_the_watched_limit_are_looked_at_by_their_state() {
        let counters = crate::counters::Counters::new();
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let id = ProcessIdentity::of(&counters, child.id()).unwrap();
        let mut members = Members::of_process(id);
        // A copy watches nothing (a descriptor is not shared): as if past the limit.
        assert!(members.refresh(&counters).is_some());
        let mut copy = members.clone();
        assert!(copy.watches.is_empty());
        // SAFETY: our own child, identified just above.
        unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
        wait_for_state(&counters, child.id(), RunState::Stopped);
        assert!(copy.refresh_light(&counters).is_some());
        assert_eq!(
            copy.live()[0].state,
            RunState::Stopped,
            "read from its stat"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(copy.refresh_light(&counters).is_none());
    }
}
