//! `headroom queue`: who waits, for what, in which order (a guard's place in line is
//! `line.rs`).

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Args;
use headroom_core::queue::files::places;
use headroom_core::queue::Place;
use headroom_model::units::{format_bytes, format_duration, printable, unix_ms};
use headroom_os::counters::Counters;
use headroom_os::paths::Dirs;
use serde::Serialize;

use crate::cli::exit;
use crate::cli::output::print_json;

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
