//! `headroom fit [--key KEY] [--json] [--free SIZE|PERCENT] -- CMD...`: will the job fit now,
//! from its past runs? Runs nothing; when it won't, names what would make room.

use std::process::ExitCode;

use clap::Args;
use headroom_core::counters::{CounterSource, Counters};
use headroom_core::defaults as d;
use headroom_core::fit::{answer, job_key, Prediction};
use headroom_core::units::{format_bytes, percent_of_bytes, printable};
use serde::Serialize;

use super::exit;
use super::history::{basis, open_store_to_read, prediction_of};
use super::output::{print_json, say};

/// `headroom fit`: will the job fit now, from its past runs? Runs nothing.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 it fits, 1 it won't, 5 no past run of its key (run it once under \
`headroom guard`, or import a trace: `headroom history import TRACE --key KEY`), 2 bad flags.")]
pub struct FitArgs {
    #[command(flatten)]
    history: HistoryKey,
    /// Ask for this much free memory instead of what is free now: a size (30G) or a percent
    /// of memory (40%).
    #[arg(long, value_name = "SIZE|PERCENT")]
    free: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The command, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

/// `--key` of `fit`.
#[derive(Debug, Args)]
struct HistoryKey {
    /// The job's key (default: from the command line, as `guard` names it).
    #[arg(long, value_name = "NAME", value_parser = super::values::parse_key)]
    key: Option<String>,
}

#[derive(Debug, Serialize)]
struct FitJson<'a> {
    key: &'a str,
    prediction: &'a Prediction,
    free_bytes: u64,
    floor_bytes: u64,
    fits: bool,
    spare_bytes: u64,
    short_bytes: u64,
    make_room: Vec<(String, u64)>,
}

/// The free memory `--free` asks for, of `total` bytes.
fn parse_free(text: &str, total: u64) -> Result<u64, String> {
    let t = text.trim();
    if let Some(percent) = t.strip_suffix('%') {
        let p = super::values::parse_percent(percent).map_err(|e| format!("--free: {e}"))?;
        return Ok(percent_of_bytes(p, total));
    }
    super::values::parse_size(t).map_err(|e| format!("--free: {e}"))
}

/// Runs `headroom fit`.
pub fn run_fit(args: &FitArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let system = counters.read_system()?;
    let free = match &args.free {
        Some(text) => parse_free(text, system.total_bytes).map_err(exit::Invalid)?,
        None => percent_of_bytes(system.free_percent, system.total_bytes),
    };
    let key = job_key(&args.command, args.history.key.as_deref());
    // (1 means "won't fit" here: a history that cannot be read at all is bad input, 2.)
    let store = open_store_to_read().map_err(exit::Invalid)?;
    let (prediction, _) = prediction_of(&store, &key).map_err(exit::Invalid)?;
    let shown = printable(&key);
    let Some(p) = prediction else {
        say(&format!(
            "no past run of '{shown}': run it once under `headroom guard`, or import a trace \
             (`headroom history import TRACE --key '{shown}'`)"
        ));
        return Ok(exit::status(exit::NO_HISTORY));
    };
    let floor = percent_of_bytes(d::KILL_FREE_PERCENT, system.total_bytes);
    let result = answer(&p, free, floor);
    let make_room = match result {
        Ok(_) => Vec::new(),
        Err(short) => largest_others(&counters, short),
    };
    let now = if args.free.is_some() {
        "free"
    } else {
        "free now"
    };
    let line = match result {
        Ok(spare) => format!(
            "{shown}: {}; {} {now}: fits, {} to spare",
            basis(&p),
            format_bytes(free),
            format_bytes(spare)
        ),
        Err(short) => format!(
            "{shown}: {}; {} {now}: won't fit, {} short",
            basis(&p),
            format_bytes(free),
            format_bytes(short)
        ),
    };
    if args.json {
        print_json(&FitJson {
            key: &key,
            prediction: &p,
            free_bytes: free,
            floor_bytes: floor,
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

/// The largest processes but ours, enough of them to cover `short` bytes.
fn largest_others(counters: &Counters, short: u64) -> Vec<(String, u64)> {
    let mut rows = counters.scan_footprints().unwrap_or_default();
    let me = std::process::id();
    rows.retain(|r| r.pid != me);
    rows.sort_by_key(|r| std::cmp::Reverse(r.memory.footprint_bytes));
    let mut covered = 0u64;
    let mut out = Vec::new();
    for row in rows {
        if covered >= short {
            break;
        }
        covered = covered.saturating_add(row.memory.footprint_bytes);
        out.push((row.name, row.memory.footprint_bytes));
    }
    out
}
