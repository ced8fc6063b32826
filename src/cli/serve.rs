//! `headroom serve [--listen ADDR] [--interval D]`: the metrics endpoint for Prometheus. One
//! reading of the counters per interval; every scrape serves the latest, rendered once.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;
use headroom_core::drive::Interrupts;
use headroom_core::jobfile::JobFile;
use headroom_core::settings::{parse_address, DEFAULT_METRICS_ADDRESS};
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::paths::Dirs;
use headroom_rules::defaults as d;
use headroom_rules::defaults::text;
use headroom_serve::{is_loopback, start, JobMetric, Metrics, MetricsHandle, ServerConfig};

use crate::cli::job::signals::Signals;
use crate::cli::output::say;

/// Flags of `headroom serve`.
#[derive(Debug, Args)]
#[command(after_help = "\
Serves GET and HEAD on /metrics (the Prometheus text format; OpenMetrics when the scraper \
asks for it) and a small index on /; anything else gets 404 or 405. Jobs are those of \
`headroom guard` runs on this machine (their job files). Stops on SIGINT or SIGTERM (exit 0). \
Exit codes: 1 when the address cannot be bound or memory cannot be read; 2 invalid flags.")]
pub struct ServeArgs {
    /// Address and port to listen on. Loopback by default: another address is reachable from
    /// other machines (a warning says so).
    #[arg(long, default_value_t = DEFAULT_METRICS_ADDRESS, value_parser = parse_address, value_name = "IP:PORT")]
    listen: SocketAddr,
    /// Time between readings of the counters.
    #[arg(long, default_value = text::duration(d::SERVE_INTERVAL), allow_hyphen_values = true, value_parser = crate::cli::values::parse_interval, value_name = "DURATION")]
    interval: Duration,
}

/// Every job of `headroom guard` on this machine, from the job files.
fn jobs(counters: &Counters, dirs: &Dirs) -> Vec<JobMetric> {
    JobFile::list(&dirs.jobs_dir(), counters)
        .iter()
        .map(metric_of_file)
        .collect()
}

/// A job of `headroom guard` in a terminal, as its job file says.
fn metric_of_file(f: &JobFile) -> JobMetric {
    JobMetric {
        key: format!("cli-{}-{}", f.pid, f.start_time),
        job: f.pid.to_string(),
        command: f.command.clone(),
        state: f.state_word(),
        swap_growth_bytes: f.swap_growth_bytes,
        peak_footprint_bytes: f.peak_footprint_bytes,
        lowest_free_percent: f.verdict.as_ref().and_then(|v| v.lowest_free_percent),
        verdict: f.verdict.clone(),
    }
}

/// Runs `headroom serve`.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let dirs = Dirs::current();
    let first = match counters.read_system() {
        Ok(s) => s,
        Err(e) => {
            say(&format!("error: reading memory counters: {e}"));
            return Ok(ExitCode::from(1));
        }
    };
    let mut metrics = Metrics::new(MetricsHandle::default());
    metrics.update(Some(&first), Instant::now(), jobs(&counters, &dirs));
    let interrupts = Signals::install()?;
    let (wake, woken) = mpsc::sync_channel::<()>(1);
    interrupts.on_signal(Box::new(move || {
        let _ = wake.try_send(());
    }));
    let running = match start(ServerConfig::at(args.listen), metrics.handle()) {
        Ok(running) => running,
        Err(e) => {
            say(&format!("error: {e}"));
            return Ok(ExitCode::from(1));
        }
    };
    if !is_loopback(&running.local_addr()) {
        say(&format!(
            "warning: {} is reachable from other machines: anyone who can reach it sees this \
             machine's memory and the command lines of its jobs",
            running.local_addr()
        ));
    }
    say(&format!(
        "serving metrics on http://{}/metrics",
        running.local_addr()
    ));
    let mut next = Instant::now() + args.interval;
    while interrupts.received().is_none() {
        let _ = woken.recv_timeout(next.saturating_duration_since(Instant::now()));
        if interrupts.received().is_some() {
            break;
        }
        if Instant::now() < next {
            continue; // SIGCHLD or a spurious wake-up
        }
        next += args.interval;
        let system = counters
            .read_system()
            .map_err(|e| tracing::warn!(error = %e, "reading memory counters"))
            .ok();
        metrics.update(system.as_ref(), Instant::now(), jobs(&counters, &dirs));
    }
    drop(running);
    Ok(ExitCode::SUCCESS)
}
