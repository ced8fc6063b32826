//! `headroom fit [--key KEY | --need SIZE] [--json] [--free SIZE|PERCENT] [-- CMD...]`: will
//! the job fit now, from its past runs (or a need given)? Runs nothing; when it won't, names
//! what would make room.

use std::process::ExitCode;

use clap::Args;
use headroom_core::store::RunRow;
use headroom_model::counters::SystemCounters;
use headroom_model::units::{format_bytes, percent_of_bytes, printable};
use headroom_os::counters::{CounterSource, Counters};
use headroom_rules::defaults as d;
use headroom_rules::fit::{answer, job_key, Prediction, Room};
use headroom_rules::policy::Limits;
use serde::Serialize;

use crate::cli::exit;
use crate::cli::output::{print_json, say};
use crate::cli::past::runs::{basis, open_store_to_read, prediction_of};

/// `headroom fit`: will the job fit now, from its past runs? Runs nothing.
#[derive(Debug, Args)]
#[command(after_help = "\
The command may be left out when --key or --need says what to ask about. Inside a job that \
`headroom guard` started, $HEADROOM_KEY holds the job's key. Exit codes: 0 it fits, 1 it won't, \
5 no past run of its key (run it once under `headroom guard`, or import a trace: `headroom \
history import TRACE --key KEY`), 2 bad flags.")]
pub struct FitArgs {
    #[command(flatten)]
    history: HistoryKey,
    /// Ask for this much free memory instead of the room now: a size (30G) or a percent of
    /// the machine's memory (40%). The machine is `--total-memory`'s, else the one the key's
    /// last run was recorded on (an imported trace's), else this one.
    #[arg(long, value_name = "SIZE|PERCENT")]
    free: Option<String>,
    /// With `--free`: the memory of the machine the question is about (e.g. 48G), for the
    /// free floor and a percent of `--free`.
    #[arg(long, value_name = "SIZE", requires = "free", value_parser = crate::cli::values::parse_size)]
    total_memory: Option<u64>,
    /// The free floor the job's guard will keep (its `--kill-free`): the room is what is
    /// free above it.
    #[arg(long, default_value = d::text::percent(d::KILL_FREE_PERCENT), value_parser = crate::cli::values::parse_percent, value_name = "PERCENT")]
    kill_free: f64,
    /// Ask about this need instead of the key's past runs: a size (12G).
    #[arg(long, value_name = "SIZE", value_parser = crate::cli::values::parse_size, conflicts_with = "key")]
    need: Option<u64>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The command, after `--`.
    #[arg(last = true, required_unless_present_any = ["key", "need"], value_name = "CMD")]
    command: Vec<String>,
}

/// `--key` of `fit`.
#[derive(Debug, Args)]
struct HistoryKey {
    /// The job's key (default: from the command line, as `guard` names it).
    #[arg(long, value_name = "NAME", value_parser = crate::cli::values::parse_key)]
    key: Option<String>,
}

#[derive(Debug, Serialize)]
struct FitJson<'a> {
    key: &'a str,
    prediction: &'a Prediction,
    /// What the need rests on, in words (past runs, or `--need`).
    basis: &'a str,
    free_bytes: u64,
    floor_bytes: u64,
    /// The memory of the machine the answer is about.
    total_bytes: u64,
    /// Free memory above the floor: what the job may take.
    room_bytes: u64,
    fits: bool,
    spare_bytes: u64,
    short_bytes: u64,
    make_room: Vec<(String, u64)>,
}

/// The free memory `--free` asks for, on a machine of `total` bytes: a percent of it, or a
/// size no larger than it.
fn parse_free(text: &str, total: u64) -> Result<u64, String> {
    let t = text.trim();
    if let Some(percent) = t.strip_suffix('%') {
        let p = crate::cli::values::parse_percent(percent).map_err(|e| format!("--free: {e}"))?;
        return Ok(percent_of_bytes(p, total));
    }
    let free = crate::cli::values::parse_size(t).map_err(|e| format!("--free: {e}"))?;
    if free > total {
        return Err(format!(
            "--free: {} is more than the machine's memory ({}; --total-memory names another)",
            format_bytes(free),
            format_bytes(total)
        ));
    }
    Ok(free)
}

/// The room the answer is about: now, on this machine; or with `--free`, on the machine of
/// `--total-memory`, else the one the key's newest run was recorded on, else this one.
/// Returns the room and that machine's memory, when it is not this one.
fn room_asked(
    args: &FitArgs,
    system: &SystemCounters,
    runs: &[RunRow],
) -> Result<(Room, Option<u64>), String> {
    let limits = Limits {
        kill_free_percent: args.kill_free,
        ..Limits::default()
    };
    let here = Room::for_guard(system, &limits);
    let Some(text) = &args.free else {
        return Ok((here, None));
    };
    let recorded = runs.first().and_then(|r| r.total_bytes);
    let other = args
        .total_memory
        .or(recorded)
        .filter(|&t| t != system.total_bytes);
    let Some(total) = other else {
        let free_bytes = parse_free(text, system.level_base_bytes())?;
        return Ok((Room { free_bytes, ..here }, None));
    };
    let base = level_base_of(total, runs);
    let room = Room::on_machine(parse_free(text, base)?, base, &limits);
    Ok((room, Some(total)))
}

/// The memory the levels and the floor of a machine of `total` bytes are of: the usable
/// memory the key's newest run on such a machine recorded (macOS `hw.memsize_usable`, a
/// little less than `hw.memsize`), else `total` itself.
fn level_base_of(total: u64, runs: &[RunRow]) -> u64 {
    runs.iter()
        .find(|r| r.total_bytes == Some(total))
        .and_then(|r| r.usable_bytes)
        .filter(|&usable| usable > 0 && usable <= total)
        .unwrap_or(total)
}

/// Runs `headroom fit`.
pub fn run_fit(args: &FitArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let system = counters.read_system()?;
    let key = job_key(&args.command, args.history.key.as_deref());
    let (prediction, runs) = need_of(args.need, &key)?;
    let (room, other_machine) = room_asked(args, &system, &runs).map_err(exit::Invalid)?;
    let free = room.free_bytes;
    let shown = printable(&key);
    let Some(p) = prediction else {
        say(&format!(
            "no past run of '{shown}': run it once under `headroom guard`, or import a trace \
             (`headroom history import TRACE --key '{shown}'`)"
        ));
        return Ok(exit::status(exit::NO_HISTORY));
    };
    let result = answer(&p, room);
    let make_room = match result {
        Ok(_) => Vec::new(),
        // What would make room is this machine's only.
        Err(short) if other_machine.is_none() => largest_others(&counters, short),
        Err(_) => Vec::new(),
    };
    let now = match other_machine {
        Some(total) => format!("free on a {} machine", format_bytes(total)),
        None if args.free.is_some() => "free".to_string(),
        None => "free now".to_string(),
    };
    let basis = match args.need {
        Some(need) => format!("needs {} (as asked)", format_bytes(need)),
        None => basis(&p),
    };
    let who = Some(&shown)
        .filter(|k| !k.is_empty())
        .map_or(String::new(), |k| format!("{k}: "));
    let line = match result {
        Ok(spare) => format!(
            "{who}{basis}; {} {now}: fits, {} to spare",
            format_bytes(free),
            format_bytes(spare)
        ),
        Err(short) => format!(
            "{who}{basis}; {} {now}: won't fit, {} short",
            format_bytes(free),
            format_bytes(short)
        ),
    };
    if args.json {
        print_json(&FitJson {
            key: &key,
            prediction: &p,
            basis: &basis,
            free_bytes: free,
            floor_bytes: room.floor_bytes,
            total_bytes: other_machine.unwrap_or(system.total_bytes),
            room_bytes: room.above_floor_bytes(),
            fits: result.is_ok(),
            spare_bytes: result.unwrap_or(0),
            short_bytes: result.err().unwrap_or(0),
            make_room: make_room.clone(),
        })?;
    } else {
        println!("{line}");
        if !make_room.is_empty() {
            let names: Vec<String> = make_room
                .iter()
                .map(|(name, bytes)| format!("{name} ({})", format_bytes(*bytes)))
                .collect();
            println!("to make room: {}", names.join(", "));
        }
    }
    Ok(exit::status(if result.is_ok() {
        exit::OK
    } else {
        exit::DOES_NOT_FIT
    }))
}

/// The need asked about: `--need`, else the prediction from the past runs of `key` (`None`
/// without any), with those runs (newest first; none for `--need`).
fn need_of(need: Option<u64>, key: &str) -> anyhow::Result<(Option<Prediction>, Vec<RunRow>)> {
    if let Some(need_bytes) = need {
        let asked = Prediction {
            need_bytes,
            runs: 0,
            oldest: std::time::Duration::ZERO,
            did_not_fit: 0,
            run_time: None,
        };
        return Ok((Some(asked), Vec::new()));
    }
    // (1 means "won't fit" here: a history that cannot be read at all is bad input, 2.)
    let store = open_store_to_read().map_err(exit::Invalid)?;
    Ok(prediction_of(&store, key).map_err(exit::Invalid)?)
}

/// The largest processes but ours, enough of them to cover `short` bytes
/// ([`headroom_rules::fit::making_room`]).
fn largest_others(counters: &Counters, short: u64) -> Vec<(String, u64)> {
    let me = std::process::id();
    let rows = counters
        .scan_footprints()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.pid != me)
        .map(|r| (r.name, r.memory.footprint_bytes))
        .collect();
    headroom_rules::fit::making_room(rows, short)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn run(total: Option<u64>, usable: Option<u64>) -> RunRow {
        RunRow {
            id: 1,
            command: "python gen.py".into(),
            started_at_ms: 0,
            ended_at_ms: 1,
            verdict: "fits".into(),
            need_bytes: GIB,
            need_lower_bound: false,
            total_bytes: total,
            usable_bytes: usable,
            free_start_percent: None,
        }
    }

    #[test]
    fn another_machines_floor_is_a_share_of_the_memory_its_levels_were_of() {
        let mac = run(Some(48 * GIB), Some(47 * GIB));
        // (asked total, runs, level base)
        let table = [
            (48 * GIB, vec![mac.clone()], 47 * GIB),
            (64 * GIB, vec![mac.clone()], 64 * GIB), // another machine than the run's
            (48 * GIB, vec![run(Some(48 * GIB), None)], 48 * GIB), // not recorded
            (
                48 * GIB,
                vec![run(Some(48 * GIB), Some(49 * GIB))],
                48 * GIB,
            ), // not a usable size
            (48 * GIB, vec![run(Some(24 * GIB), None), mac], 47 * GIB), // the newest on it
            (48 * GIB, Vec::new(), 48 * GIB),
        ];
        for (total, runs, want) in table {
            assert_eq!(level_base_of(total, &runs), want, "{total} {runs:?}");
        }
        // The floor at 10 % is then 4.7 GiB on the 48 GB Mac, as its guard kept it.
        let limits = Limits::default();
        let room = Room::on_machine(
            20 * GIB,
            level_base_of(48 * GIB, &[run(Some(48 * GIB), Some(47 * GIB))]),
            &limits,
        );
        assert_eq!(
            room.floor_bytes,
            percent_of_bytes(limits.kill_free_percent, 47 * GIB)
        );
    }
}
