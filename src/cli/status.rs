//! `headroom status`: system memory, swap, the jobs Headroom guards in terminals (and those
//! whose guard is gone: "unguarded"), and the top processes by footprint. Command lines are
//! printed with control characters escaped: they are other people's text.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use headroom_core::jobfile::JobFile;
use headroom_model::counters::{FootprintRow, SystemCounters};
use headroom_model::units::{format_bytes, printable};
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::paths::Dirs;
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
    jobs: Vec<JobJson>,
    processes: Vec<ProcessJson>,
}

/// A job of `headroom guard` in a terminal, from its job file.
#[derive(Debug, Serialize)]
struct JobJson {
    pid: u32,
    command: String,
    /// `running`, `paused`, …, or `unguarded` once its guard is gone.
    state: &'static str,
    guard_pid: Option<u32>,
    swap_growth_bytes: u64,
    swap_budget_bytes: u64,
}

impl JobJson {
    fn of(f: &JobFile) -> Self {
        JobJson {
            pid: f.pid,
            command: f.command.clone(),
            state: f.state_word(),
            guard_pid: f.guard.map(|g| g.pid),
            swap_growth_bytes: f.swap_growth_bytes,
            swap_budget_bytes: f.swap_budget_bytes,
        }
    }
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
    let jobs: Vec<JobJson> = JobFile::list(&Dirs::current().jobs_dir(), &counters)
        .iter()
        .filter(|f| !f.state.ended())
        .map(JobJson::of)
        .collect();
    if args.json {
        crate::cli::output::print_json(&StatusJson {
            system: &system,
            jobs,
            processes,
        })?;
    } else {
        let mut out = std::io::stdout().lock();
        write_text(&mut out, &system, &jobs, &processes)?;
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
    jobs: &[JobJson],
    processes: &[ProcessJson],
) -> std::io::Result<()> {
    write_memory(out, s)?;
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
    write_jobs_and_processes(out, jobs, processes)
}

/// The memory and swap lines: under a cgroup limit, the limit first (what a job is judged
/// by), then the host.
fn write_memory(out: &mut impl Write, s: &SystemCounters) -> std::io::Result<()> {
    let pressure = s.pressure.map_or("unknown", |p| p.as_str());
    match &s.cgroup {
        // Under a cgroup limit: the limit first (what a job is judged by), then the host.
        // The cgroup's own pressure (v2) beside it; the host's after the host.
        Some(c) => writeln!(
            out,
            "Memory   {} limit (cgroup {}), {:.0}% free of it{}; host {}, {:.0}% free, pressure {}",
            format_bytes(c.limit_bytes),
            printable(&c.limit_path),
            s.free_percent,
            c.pressure
                .map(|p| format!(", pressure {}", p.as_str()))
                .unwrap_or_default(),
            format_bytes(c.host_total_bytes),
            c.host_free_percent,
            c.host_pressure.map_or("unknown", |p| p.as_str()),
        )?,
        None => writeln!(
            out,
            "Memory   {} total, {:.0}% free, pressure {pressure}",
            format_bytes(s.total_bytes),
            s.free_percent
        )?,
    }
    if let Some(note) = &s.cgroup_note {
        writeln!(
            out,
            "Note     {}; the numbers are the host's",
            printable(note)
        )?;
    }
    match s.cgroup.as_ref().filter(|c| c.swap_used_bytes.is_some()) {
        Some(c) => writeln!(
            out,
            "Swap     {} used of {} (the cgroup's); host {} used",
            format_bytes(s.swap_used_bytes),
            format_bytes(s.swap_total_bytes),
            format_bytes(c.host_swap_used_bytes)
        )?,
        None => writeln!(
            out,
            "Swap     {} used of {}",
            format_bytes(s.swap_used_bytes),
            format_bytes(s.swap_total_bytes)
        )?,
    }
    Ok(())
}

fn write_jobs_and_processes(
    out: &mut impl Write,
    jobs: &[JobJson],
    processes: &[ProcessJson],
) -> std::io::Result<()> {
    if !jobs.is_empty() {
        writeln!(
            out,
            "{:>8}  {:<10}  {:>10}  {:>10}  GUARDED JOB",
            "PID", "STATE", "SWAP +", "BUDGET"
        )?;
        for j in jobs {
            let command: String = printable(&j.command).chars().take(60).collect();
            writeln!(
                out,
                "{:>8}  {:<10}  {:>10}  {:>10}  {command}",
                j.pid,
                j.state,
                format_bytes(j.swap_growth_bytes),
                format_bytes(j.swap_budget_bytes),
            )?;
        }
        let lost = jobs.iter().filter(|j| j.state == "unguarded").count();
        if lost > 0 {
            writeln!(
                out,
                "{lost} job(s) unguarded: their guard is gone. `headroom resume PID` continues a \
                 paused one, `headroom stop PID` stops it."
            )?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "{:>8}  {:>10}  {:>10}  {:>10}  COMMAND",
        "PID", "FOOTPRINT", "RESIDENT", "SWAP"
    )?;
    for p in processes {
        let command = p.command.as_deref().unwrap_or(&p.name);
        let command: String = printable(command).chars().take(60).collect();
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
