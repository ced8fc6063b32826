//! The queue of guards that wait for room (`guard --wait-fit`), with no daemon: each guard
//! keeps its place in a file of the state folder ([`files`]), and at each poll, under the
//! folder's lock, decides for itself by the pure rules here whether it may start.
//!
//! - **Room**: free memory above the free floor, less what jobs admitted a moment ago have
//!   not used yet. A job that has just started has not allocated yet, so free memory still
//!   looks large: each admitted job's predicted need is **reserved** until what it has taken
//!   (measured as its need is: `headroom_rules::fit`) has grown to it (or it ended), and the room
//!   counts the reservations.
//! - **Order**: first come, first admitted (a ticket taken on joining). A job whose need
//!   fits while an earlier one still waits starts ahead of it only when that cannot delay
//!   the earlier one, which is so when either
//!   - the earlier job still fits beside it (its need in the room left after this one's), or
//!   - this job is predicted to end (its longest past run × 1.15) before the earliest moment
//!     the earlier one could start: when enough of the running queued jobs, ending as their
//!     own past runs predict, give their memory back for its need.
//!
//!   When either side has no prediction, nobody passes (EASY backfill, as Slurm's, with the
//!   run times from the job's own history).
//! - A job with no past run waits by `--wait-free` as before, in line: first in line to
//!   start, and it reserves nothing.

pub mod files;

use serde::{Deserialize, Serialize};

use headroom_model::process::ProcessIdentity;
use headroom_rules::fit::Room;
use headroom_rules::policy::WaitReason;

/// One guard's place in the queue, as its file holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Place {
    /// The guard.
    pub guard: ProcessIdentity,
    /// Its turn: lower comes first.
    pub ticket: u64,
    /// The job's key.
    pub key: String,
    /// The command line.
    pub command: String,
    /// The predicted need, bytes (none without a past run).
    pub need_bytes: Option<u64>,
    /// The predicted run time, ms, where known.
    pub run_time_ms: Option<u64>,
    /// When it joined, ms since the Unix epoch.
    pub joined_at_ms: i64,
    /// When it was admitted (started), ms since the Unix epoch.
    pub admitted_at_ms: Option<i64>,
    /// What the job has taken so far as its need counts it, bytes (what it has used of its
    /// reservation: its peak footprint on Linux, the rise of memory in use on a Mac).
    pub used_bytes: u64,
}

impl Place {
    /// True while the guard waits.
    pub fn is_waiting(&self) -> bool {
        self.admitted_at_ms.is_none()
    }

    /// What an admitted job still holds back of its need: the need less what it used.
    pub fn reserved_bytes(&self) -> u64 {
        match (self.admitted_at_ms, self.need_bytes) {
            (Some(_), Some(need)) => need.saturating_sub(self.used_bytes),
            _ => 0,
        }
    }

    /// When an admitted job is predicted to end, ms since the Unix epoch.
    fn predicted_end_ms(&self) -> Option<i64> {
        let run_time = i64::try_from(self.run_time_ms?).ok()?;
        Some(self.admitted_at_ms?.saturating_add(run_time))
    }

    /// What an admitted job gives back when it ends: its need or, past it, what it used.
    fn gives_back_bytes(&self) -> u64 {
        self.need_bytes.unwrap_or(0).max(self.used_bytes)
    }
}

/// The memory of the moment, as admission reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Memory {
    /// The room now and the free floor ([`Room::for_guard`]).
    pub room: Room,
    /// Now, ms since the Unix epoch.
    pub now_ms: i64,
}

/// Whether `me` may start now, beside the other places of the queue: `Ok(())`, or why it
/// waits (see the module docs for the rules).
pub fn decide(me: &Place, others: &[Place], memory: Memory) -> Result<(), WaitReason> {
    let admitted: Vec<&Place> = others.iter().filter(|p| !p.is_waiting()).collect();
    let reserved_bytes: u64 = admitted.iter().map(|p| p.reserved_bytes()).sum();
    let room_bytes = memory
        .room
        .above_floor_bytes()
        .saturating_sub(reserved_bytes);
    let earlier: Vec<&Place> = others
        .iter()
        .filter(|p| p.is_waiting() && p.ticket < me.ticket)
        .collect();
    let waiting = |behind: Option<String>| WaitReason::InLine {
        need_bytes: me.need_bytes,
        room_bytes,
        reserved_bytes,
        position: earlier.len() + 1,
        behind,
    };
    if me.need_bytes.is_some_and(|need| need > room_bytes) {
        return Err(waiting(None));
    }
    let mut earlier_in_order = earlier.clone();
    earlier_in_order.sort_by_key(|p| p.ticket);
    match earlier_in_order
        .iter()
        .find(|e| !may_pass(me, e, room_bytes, &admitted, memory.now_ms))
    {
        Some(first) => Err(waiting(Some(first.key.clone()))),
        None => Ok(()),
    }
}

/// True when `me` starting now cannot delay `earlier` (see the module docs).
fn may_pass(
    me: &Place,
    earlier: &Place,
    room_bytes: u64,
    admitted: &[&Place],
    now_ms: i64,
) -> bool {
    let (Some(need), Some(their_need)) = (me.need_bytes, earlier.need_bytes) else {
        return false;
    };
    if their_need <= room_bytes.saturating_sub(need) {
        return true;
    }
    let (Some(run_time), Some(start)) = (
        me.run_time_ms.and_then(|t| i64::try_from(t).ok()),
        earliest_start_ms(their_need, room_bytes, admitted, now_ms),
    ) else {
        return false;
    };
    now_ms.saturating_add(run_time) <= start
}

/// The earliest moment a need of `need_bytes` could start: now when it fits in the room,
/// else when enough admitted jobs, ending as predicted, have given their memory back; `None`
/// when that is not predicted.
fn earliest_start_ms(
    need_bytes: u64,
    room_bytes: u64,
    admitted: &[&Place],
    now_ms: i64,
) -> Option<i64> {
    if need_bytes <= room_bytes {
        return Some(now_ms);
    }
    let mut ends: Vec<(i64, u64)> = admitted
        .iter()
        .filter_map(|p| Some((p.predicted_end_ms()?, p.gives_back_bytes())))
        .collect();
    ends.sort_unstable();
    let mut room = room_bytes;
    for (end_ms, back) in ends {
        room = room.saturating_add(back);
        if need_bytes <= room {
            return Some(end_ms.max(now_ms));
        }
    }
    None
}

#[cfg(test)]
mod tests;
