//! `guard --wait-fit`'s place in line: joining the queue, admission at each look, and the
//! waiting guard a pid names (`headroom_core::queue` has the rules and the files; the
//! `headroom queue` listing is `queue.rs`).

use std::time::SystemTime;

use headroom_core::queue::files::{places, HeldPlace};
use headroom_core::queue::Place;
use headroom_model::counters::SystemCounters;
use headroom_model::process::ProcessIdentity;
use headroom_model::units::{printable, unix_ms};
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::paths::Dirs;
use headroom_rules::fit::Room;
use headroom_rules::policy::{Limits, WaitReason};

use crate::cli::output::say;
use crate::cli::past::runs::Before;
use headroom_os::process::ProcessLookup;

/// Joins the queue for `guard --wait-fit`. With a prediction the job waits for its need
/// (the fixed `--wait-free` is then not asked: `limits` is changed so); without one it
/// waits by `--wait-free`, in line, and says so. `None` (said) when the queue's folder
/// cannot be used: the guard then waits alone.
pub fn join(
    counters: &Counters,
    before: &Before,
    command_line: &str,
    limits: &mut Limits,
) -> Option<HeldPlace> {
    let need_bytes = before.prediction().map(|p| p.need_bytes);
    *limits = headroom_rules::fit::line_gate(limits, need_bytes);
    if need_bytes.is_none() {
        say(&format!(
            "no past run of {}: waiting by --wait-free ({}%)",
            printable(before.key()),
            limits.wait_free_percent
        ));
    }
    let me = std::process::id();
    let guard = match ProcessIdentity::of(counters, me) {
        Ok(guard) => guard,
        Err(e) => {
            say(&format!(
                "warning: not in the queue (own identity: {e}); waiting alone"
            ));
            return None;
        }
    };
    let place = Place {
        guard,
        ticket: 0,
        key: before.key().to_string(),
        command: command_line.to_string(),
        need_bytes,
        run_time_ms: before
            .prediction()
            .and_then(|p| p.run_time)
            .and_then(|t| u64::try_from(t.as_millis()).ok()),
        joined_at_ms: unix_ms(SystemTime::now()),
        admitted_at_ms: None,
        used_bytes: 0,
    };
    let dirs = Dirs::current();
    match HeldPlace::join(&dirs.queue_dir(), &dirs.jobs_dir(), place, counters) {
        Ok(line) => Some(line),
        Err(e) => {
            say(&format!(
                "warning: not in the queue ({}: {e}); waiting alone",
                dirs.queue_dir().display()
            ));
            None
        }
    }
}

/// The queue's last word once the start gate says go: the room of this poll's counters
/// (free less the free floor, of the cgroup's limit where one binds), asked under the
/// queue's lock. A queue that cannot be read is said once and does not hold the job up.
pub fn admitter<'a>(
    line: &'a mut HeldPlace,
    counters: &'a Counters,
    limits: &Limits,
) -> impl FnMut(&SystemCounters) -> Result<(), WaitReason> + 'a {
    let limits = limits.clone();
    let mut warned = false;
    move |system: &SystemCounters| match line.admit(Room::for_guard(system, &limits), counters) {
        Ok(decision) => decision,
        Err(e) => {
            if !warned {
                say(&format!(
                    "warning: the queue cannot be read ({e}); starting by free memory alone"
                ));
                warned = true;
            }
            Ok(())
        }
    }
}

/// The waiting guard whose pid is `pid`, if one is in the queue.
pub fn waiting_guard(counters: &impl CounterSource, pid: u32) -> Option<Place> {
    let dirs = Dirs::current();
    places(&dirs.queue_dir(), &dirs.jobs_dir(), counters)
        .into_iter()
        .find(|p| p.guard.pid == pid && p.is_waiting())
}
