//! `guard --wait-fit`'s place in line (`headroom_core::queue` has the rules and the files),
//! and `headroom queue`: who waits, for what, in which order.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Args;
use headroom_core::counters::{CounterSource, Counters, SystemCounters};
use headroom_core::fit::Room;
use headroom_core::paths::Dirs;
use headroom_core::policy::{Limits, WaitReason};
use headroom_core::process::ProcessIdentity;
use headroom_core::queue::line::{places, Line};
use headroom_core::queue::Place;
use headroom_core::units::{format_bytes, format_duration, printable, unix_ms};
use serde::Serialize;

use super::exit;
use super::history::Before;
use super::output::{print_json, say};

/// Joins the queue for `guard --wait-fit`. With a prediction the job waits for its need
/// (the fixed `--wait-free` is then not asked: `limits` is changed so); without one it
/// waits by `--wait-free`, in line, and says so. `None` (said) when the queue's folder
/// cannot be used: the guard then waits alone.
pub fn join(
    counters: &Counters,
    before: &Before,
    command_line: &str,
    limits: &mut Limits,
) -> Option<Line> {
    let need_bytes = before.prediction().map(|p| p.need_bytes);
    match need_bytes {
        Some(_) => limits.wait_free_percent = 0.0,
        None => say(&format!(
            "no past run of {}: waiting by --wait-free ({}%)",
            printable(before.key()),
            limits.wait_free_percent
        )),
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
    match Line::join(&dirs.queue_dir(), &dirs.jobs_dir(), place, counters) {
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
    line: &'a mut Line,
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

/// `headroom queue`: the guards of `guard --wait-fit`, in turn.
#[derive(Debug, Args)]
#[command(after_help = "\
Only guards started with --wait-fit are in the queue. A waiting guard leaves it with Ctrl-C in \
its terminal or `headroom stop GUARD-PID` from another (it exits 143); a guard that was killed \
outright is removed from it by the next guard or listing that reads it.")]
pub struct QueueArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// One line of `headroom queue --json`.
#[derive(Debug, Serialize)]
struct Listed<'a> {
    #[serde(flatten)]
    place: &'a Place,
    /// `waiting` or `running`.
    state: &'static str,
    /// Held back for it while it has not used its need yet, bytes.
    reserved_bytes: u64,
}

/// Runs `headroom queue`.
pub fn run_queue(args: &QueueArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let dirs = Dirs::current();
    let list = places(&dirs.queue_dir(), &dirs.jobs_dir(), &counters);
    if args.json {
        let listed: Vec<Listed> = list
            .iter()
            .map(|place| Listed {
                place,
                state: state(place),
                reserved_bytes: place.reserved_bytes(),
            })
            .collect();
        print_json(&listed)?;
        return Ok(exit::status(exit::OK));
    }
    if list.is_empty() {
        println!("no guard waits (only `guard --wait-fit` queues)");
        return Ok(exit::status(exit::OK));
    }
    println!(
        "{:>3}  {:<7}  {:>7}  {:>9}  {:>9}  {:>7}  KEY",
        "#", "STATE", "GUARD", "NEEDS", "RESERVED", "SINCE"
    );
    let now = unix_ms(SystemTime::now());
    let mut waiting = 0;
    for place in &list {
        let turn = if place.is_waiting() {
            waiting += 1;
            waiting.to_string()
        } else {
            "-".to_string()
        };
        let since_ms = place.admitted_at_ms.unwrap_or(place.joined_at_ms);
        let since = Duration::from_millis(u64::try_from(now - since_ms).unwrap_or(0));
        println!(
            "{turn:>3}  {:<7}  {:>7}  {:>9}  {:>9}  {:>7}  {}",
            state(place),
            place.guard.pid,
            place.need_bytes.map_or("?".to_string(), format_bytes),
            format_bytes(place.reserved_bytes()),
            format_duration(since),
            printable(&place.key)
        );
    }
    Ok(exit::status(exit::OK))
}

fn state(place: &Place) -> &'static str {
    if place.is_waiting() {
        "waiting"
    } else {
        "running"
    }
}

/// The waiting guard whose pid is `pid`, if one is in the queue.
pub fn waiting_guard(counters: &impl CounterSource, pid: u32) -> Option<Place> {
    let dirs = Dirs::current();
    places(&dirs.queue_dir(), &dirs.jobs_dir(), counters)
        .into_iter()
        .find(|p| p.guard.pid == pid && p.is_waiting())
}
