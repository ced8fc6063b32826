//! `headroom status`: system memory, swap, and the top processes by footprint.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use headroom_core::counters::{CounterSource, Counters, FootprintRow, SystemCounters};
use headroom_core::units::format_bytes;
use serde::Serialize;

/// Flags of `headroom status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON (sizes in bytes) instead of text.
    #[arg(long)]
    json: bool,
    /// How many processes to list, largest footprint first.
    #[arg(long, default_value_t = 10, value_name = "N")]
    top: usize,
}

#[derive(Debug, Serialize)]
struct StatusJson<'a> {
    system: &'a SystemCounters,
    processes: Vec<ProcessJson>,
}

#[derive(Debug, Serialize)]
struct ProcessJson {
    pid: u32,
    ppid: u32,
    uid: u32,
    name: String,
    command: Option<String>,
    footprint_bytes: u64,
    resident_bytes: u64,
    swap_bytes: Option<u64>,
    peak_footprint_bytes: Option<u64>,
}

/// Runs `headroom status`.
pub fn run(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let system = counters
        .read_system()
        .context("reading system memory counters")?;
    let mut rows = counters.scan_footprints().context("listing processes")?;
    rows.sort_by_key(|r| std::cmp::Reverse(r.memory.footprint_bytes));
    rows.truncate(args.top);
    let processes: Vec<ProcessJson> = rows
        .into_iter()
        .map(|row| to_json(&counters, row))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(
            &mut out,
            &StatusJson {
                system: &system,
                processes,
            },
        )?;
        writeln!(out)?;
    } else {
        write_text(&mut out, &system, &processes)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(counters: &Counters, row: FootprintRow) -> ProcessJson {
    let command = counters
        .process_info(row.pid)
        .ok()
        .map(|i| i.command)
        .filter(|c| !c.is_empty());
    ProcessJson {
        pid: row.pid,
        ppid: row.ppid,
        uid: row.uid,
        name: row.name,
        command,
        footprint_bytes: row.memory.footprint_bytes,
        resident_bytes: row.memory.resident_bytes,
        swap_bytes: row.memory.swap_bytes,
        peak_footprint_bytes: row.memory.peak_footprint_bytes,
    }
}

fn opt_bytes(v: Option<u64>) -> String {
    v.map_or_else(|| "—".to_string(), format_bytes)
}

fn write_text(
    out: &mut impl Write,
    s: &SystemCounters,
    processes: &[ProcessJson],
) -> std::io::Result<()> {
    let pressure = s.pressure.map_or("unknown", |p| p.as_str());
    writeln!(
        out,
        "Memory   {} total, {:.0}% free, pressure {pressure}",
        format_bytes(s.total_bytes),
        s.free_percent
    )?;
    writeln!(
        out,
        "Swap     {} used of {}",
        format_bytes(s.swap_used_bytes),
        format_bytes(s.swap_total_bytes)
    )?;
    writeln!(
        out,
        "Other    compressed {}, wired {}, app {}",
        opt_bytes(s.compressed_bytes),
        opt_bytes(s.wired_bytes),
        opt_bytes(s.app_bytes)
    )?;
    writeln!(
        out,
        "Since boot: swapped in {}, swapped out {}",
        format_bytes(s.swapped_in_bytes),
        format_bytes(s.swapped_out_bytes)
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:>8}  {:>10}  {:>10}  {:>10}  COMMAND",
        "PID", "FOOTPRINT", "RESIDENT", "SWAP"
    )?;
    for p in processes {
        let command = p.command.as_deref().unwrap_or(&p.name);
        let command: String = command.chars().take(60).collect();
        writeln!(
            out,
            "{:>8}  {:>10}  {:>10}  {:>10}  {command}",
            p.pid,
            format_bytes(p.footprint_bytes),
            format_bytes(p.resident_bytes),
            opt_bytes(p.swap_bytes),
        )?;
    }
    Ok(())
}
