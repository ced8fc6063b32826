//! `headroom record`: write a stageload-compatible JSONL memory trace.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use clap::Args;
use headroom_core::sampler::recorded::ToTrace;
use headroom_core::sampler::Sampler;
use headroom_core::trace::{round_t, Record, RunRecord, StartRecord, TraceWriter};
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::{CounterSource, Counters};
use headroom_os::members::{MemberSet, Members};
use headroom_os::process::ProcessLookup;
use headroom_rules::defaults as d;
use headroom_rules::defaults::text;
use serde_json::{Map, Value};

/// Flags of `headroom record`.
#[derive(Debug, Args)]
#[command(after_help = "\
The trace is JSONL, one record a line, each flushed as written so a killed recorder keeps \
its trace: a `start` record (utc, interval, metadata), `sample` records (`t` seconds since \
start, `footprint` bytes, `swap_used` bytes, `level` = free memory %, plus Headroom's \
`swap_total`, `compressed`, `pressure`, `resident`, `process_swap`, `processes`), `error` \
records when a read fails, and an `end` record.

Recording stops after --duration, on Ctrl-C/SIGTERM, or when every --pid process has exited.")]
pub struct RecordArgs {
    /// Time between samples (e.g. 0.5s, 250ms, 1s).
    #[arg(long, default_value = text::duration(d::POLL), allow_hyphen_values = true, value_parser = crate::cli::values::parse_interval, value_name = "DURATION")]
    interval: Duration,
    /// Trace this process and its descendants; repeat for several. `footprint` is the sum of
    /// their footprints. Without --pid, `footprint` is written as 0 (system counters only).
    #[arg(long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Stop after this long (e.g. 3s, 10m). Without it, record until interrupted.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::cli::values::parse_duration, value_name = "DURATION")]
    duration: Option<Duration>,
    /// Where to write the trace (created or truncated).
    #[arg(short, long, value_name = "PATH")]
    output: PathBuf,
}

/// Runs `headroom record`.
pub fn run(args: &RecordArgs) -> anyhow::Result<ExitCode> {
    let counters = Counters::new();
    let mut tracked = Vec::new();
    for &pid in &args.pids {
        match ProcessIdentity::of(&counters, pid) {
            Ok(id) => tracked.push(id),
            Err(e) => {
                eprintln!("headroom: error: invalid value '{pid}' for '--pid <PID>': {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    let mut writer = TraceWriter::create(&args.output)
        .with_context(|| format!("creating {}", args.output.display()))?;

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }

    let start = StartRecord {
        pids: args.pids.clone(),
        run: counters
            .read_system()
            .map(|system| RunRecord::of_system(&system))
            .unwrap_or_default(),
        ..StartRecord::headroom(SystemTime::now(), args.interval)
    };
    let sampler = Sampler::start(counters, args.interval).context("starting the sampler")?;
    let samples = sampler.subscribe();
    for id in &tracked {
        sampler.track(&MemberSet::new(Members::of_process(*id)));
    }
    writer
        .start(&start)
        .with_context(|| format!("writing {}", args.output.display()))?;

    let mut written = 0u64;
    let reason = loop {
        if stop.load(Ordering::SeqCst) {
            break "interrupted";
        }
        let Ok(sample) = samples.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        if let Some(error) = &sample.error {
            writer.write(&Record::Error {
                t: Some(round_t(sample.since_start)),
                error: error.clone(),
            })?;
        }
        if let Some(record) = sample.to_trace_record() {
            writer
                .write(&Record::Sample(record))
                .with_context(|| format!("writing {}", args.output.display()))?;
            written += 1;
        }
        if args
            .duration
            .is_some_and(|d| sample.since_start + args.interval / 2 >= d)
        {
            break "duration";
        }
        // (A sample taken before the sampler tracked the processes has none: not an exit.)
        let seen = !sample.tracked.is_empty();
        if !tracked.is_empty() && seen && sample.tracked.iter().all(|t| t.memory.is_none()) {
            break "exited";
        }
    };
    sampler.stop();
    let mut end = Map::new();
    end.insert("reason".into(), Value::String(reason.into()));
    writer.end(end)?;
    eprintln!(
        "headroom: wrote {written} samples to {} ({reason})",
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}
