//! JSONL memory traces, compatible with stageload's format.
//!
//! One JSON record a line: `start` (`utc`, `interval`, metadata), `sample` (`t` seconds since
//! start, `footprint` bytes, `swap_used` bytes, `level` = free %, plus Headroom's extra fields),
//! `event` (`kind` load/reload/release/stage/mark …), `error` (a failed read) and `end`. The
//! writer flushes every line so a killed recorder keeps its trace. The reader tolerates a
//! half-written last line and reports any other bad line with its file and line number.
//!
//! stageload's fields keep their names and meaning; Headroom's are optional, absent when
//! unknown, so stageload's traces and older Headroom ones read as before. What a sample is
//! made of and made back into (everything the guard's rules read of a reading) is
//! [`crate::sampler::recorded`]'s, in both directions.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use headroom_model::units::{bounded_bytes, bounded_percent, bounded_seconds};
use headroom_rules::stages::Reported;

pub use self::start::{RecordedLimits, RunRecord, StartRecord};

mod start;

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Record {
    /// First line: when and how the trace was taken, with free-form metadata.
    Start {
        /// UTC start time, RFC 3339 (`2026-10-06T10:36:12+00:00`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        utc: Option<String>,
        /// Sampling interval in seconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        interval: Option<f64>,
        /// Everything else in the line.
        #[serde(flatten)]
        meta: Map<String, Value>,
    },
    /// One reading.
    Sample(SampleRecord),
    /// Something the job or its driver said happened.
    Event(EventRecord),
    /// A failed read (a gap in the samples).
    Error {
        /// Seconds since start.
        #[serde(default)]
        t: Option<f64>,
        /// What failed.
        error: String,
    },
    /// Last line; absent when the recorder was killed.
    End {
        /// Anything the writer added (Headroom: `reason`).
        #[serde(flatten)]
        meta: Map<String, Value>,
    },
    /// A record type this reader does not know; kept out of summaries.
    #[serde(other)]
    Unknown,
}

/// A `sample` line. The first four fields are stageload's; the rest are Headroom's and
/// optional when reading (absent: not known, or not written by older traces).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SampleRecord {
    /// Seconds since start (Headroom writes it to the nanosecond: [`seconds`]).
    pub t: f64,
    /// Footprint of the traced process tree(s), bytes (0 when nothing is traced).
    #[serde(default)]
    pub footprint: u64,
    /// System swap in use, bytes.
    pub swap_used: u64,
    /// System free memory, percent (macOS `kern.memorystatus_level`; under a memory limit,
    /// the room under it), as read.
    pub level: f64,
    /// System swap size, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_total: Option<u64>,
    /// Compressed memory, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compressed: Option<u64>,
    /// Memory in use from the kernel's page counts (macOS: app + wired + compressed), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_use: Option<u64>,
    /// Pressure level word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<String>,
    /// Resident size of the traced trees, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident: Option<u64>,
    /// Per-process swap of the traced trees, bytes (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_swap: Option<u64>,
    /// How many processes the traced trees had (0: none of them lives any more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u32>,
    /// The memory limit that binds (a cgroup's), bytes: `level` is then the room under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<u64>,
    /// The kernel's OOM kills since boot, host-wide (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
    /// The traced job has a memory cgroup of its own: its OOM kills are `job_oom_kills`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_cgroup: bool,
    /// OOM kills in the traced job's own cgroup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_oom_kills: Option<u64>,
    /// The kernel's high-water mark of the traced job's memory (its own cgroup's), bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_peak: Option<u64>,
    /// A look the guard aimed at the crossing between two regular checks (Headroom's; see
    /// `headroom_rules::policy::aim`): written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aimed: bool,
}

/// An `event` line: what happened ([`Reported`]: the fields a job reports on the control
/// socket, one type for both) and when. In a trace `kind` may also be `stage` (a stage mark,
/// as stageload writes it) or Headroom's own `guard`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// Seconds since start.
    pub t: f64,
    /// What happened.
    #[serde(flatten)]
    pub what: Reported,
}

/// The time a `start` record's `utc` names (RFC 3339 UTC, `+00:00` or `Z`), if it is one.
pub fn parse_utc(text: &str) -> Option<SystemTime> {
    let stem = text.strip_suffix("+00:00").unwrap_or(text);
    humantime::parse_rfc3339_weak(stem.trim_end_matches('Z')).ok()
}

/// RFC 3339 UTC with a `+00:00` offset, as stageload writes it.
pub fn utc_string(t: SystemTime) -> String {
    let s = humantime::format_rfc3339_seconds(t).to_string();
    match s.strip_suffix('Z') {
        Some(stem) => format!("{stem}+00:00"),
        None => s,
    }
}

/// Seconds rounded to milliseconds, as events and errors write `t`.
pub fn round_t(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

/// A sample's `t`: seconds to the nanosecond, read back exactly by [`duration`] (for any
/// time under 2^20 s, twelve days; within a nanosecond after that).
pub fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The time a `t` names, to the nanosecond (a negative or unreadable one is 0: the reader
/// has refused those already).
pub fn duration(t: f64) -> Duration {
    // A float cast saturates: NaN and negatives are 0.
    Duration::from_nanos((t * 1e9).round() as u64)
}

/// Writes a trace, one flushed line per record.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
}

impl TraceWriter<File> {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(TraceWriter {
            out: File::create(path)?,
        })
    }
}

impl<W: Write> TraceWriter<W> {
    /// A writer over any output.
    pub fn new(out: W) -> Self {
        TraceWriter { out }
    }

    /// Writes one record and flushes it.
    pub fn write(&mut self, record: &Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        self.out.write_all(&line)?;
        self.out.flush()
    }

    /// Writes the `start` record.
    pub fn start(&mut self, start: &StartRecord) -> io::Result<()> {
        let mut meta = start.to_map();
        let utc = meta
            .remove("utc")
            .and_then(|v| v.as_str().map(str::to_string));
        let interval = meta.remove("interval").and_then(|v| v.as_f64());
        self.write(&Record::Start {
            utc,
            interval,
            meta,
        })
    }

    /// Writes the `end` record.
    pub fn end(&mut self, meta: Map<String, Value>) -> io::Result<()> {
        self.write(&Record::End { meta })
    }

    /// The underlying output.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// A bad trace line: which file, which line, what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct TraceError {
    /// The trace file.
    pub path: PathBuf,
    /// 1-based line number (0 when the file could not be opened).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A whole trace, read into memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// The `start` record, if present.
    pub start: Option<StartRecord>,
    /// Samples, in file order.
    pub samples: Vec<SampleRecord>,
    /// Events, in file order.
    pub events: Vec<EventRecord>,
    /// Read errors recorded in the trace: (t, message).
    pub errors: Vec<(Option<f64>, String)>,
    /// True when the `end` record is present.
    pub ended: bool,
    /// True when a half-written last line was dropped.
    pub truncated: bool,
}

impl Trace {
    /// The interval of the `start` record (checked by the reader: more than 0, at most
    /// [`headroom_model::units::MAX_SECONDS`]), or `default` without one.
    pub fn interval(&self, default: Duration) -> Duration {
        self.start
            .as_ref()
            .and_then(|start| start.interval)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .filter(|d| !d.is_zero())
            .unwrap_or(default)
    }
}

/// Reads a trace file.
pub fn read_trace(path: &Path) -> Result<Trace, TraceError> {
    let err = |line: usize, message: String| TraceError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let file = File::open(path).map_err(|e| err(0, e.to_string()))?;
    parse_trace(BufReader::new(file), path)
}

/// The longest trace line read, bytes: a longer one (or a file that never ends a line, like
/// `/dev/zero`) is an error naming its line, not an allocation without bound.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The `kind` of an `event` line that ends the stage under way (Headroom's: stageload has no
/// stage end, and its tools skip a kind they do not know). Its `stage` names the stage.
pub const STAGE_END: &str = "stage_end";

/// Reads a trace from `reader`; errors name `path` and the line. A last line cut off
/// mid-write (no newline, not valid JSON) is dropped and noted; a complete line that is not
/// a record, a number past its bounds (`check_record`) and a record out of place
/// (`check_order`) are errors, wherever they are.
pub fn parse_trace(mut reader: impl BufRead, path: &Path) -> Result<Trace, TraceError> {
    let err = |line: usize, message: String| TraceError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let mut trace = Trace::default();
    let mut buf = Vec::new();
    for number in 1.. {
        buf.clear();
        let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 1;
        let read = (&mut reader)
            .take(limit)
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(number, e.to_string()))?;
        if read == 0 {
            break;
        }
        let complete = buf.last() == Some(&b'\n');
        if !complete && buf.len() > MAX_LINE_BYTES {
            return Err(err(
                number,
                format!(
                    "the line is longer than {} MiB: not a trace",
                    MAX_LINE_BYTES >> 20
                ),
            ));
        }
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        let record: Record = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(_) if !complete && looks_cut(&line) => {
                trace.truncated = true;
                break;
            }
            Err(e) => return Err(err(number, format!("not a trace record: {e}"))),
        };
        if let Err(message) = check_record(&record).and_then(|()| check_order(&trace, &record)) {
            return Err(err(number, message));
        }
        if let Record::Start {
            utc,
            interval,
            meta,
        } = record
        {
            let mut fields = meta;
            if let Some(utc) = utc {
                fields.insert("utc".into(), Value::String(utc));
            }
            if let Some(i) = interval.and_then(serde_json::Number::from_f64) {
                fields.insert("interval".into(), Value::Number(i));
            }
            trace.start = Some(StartRecord::from_map(fields).map_err(|m| err(number, m))?);
            continue;
        }
        add_record(&mut trace, record);
    }
    Ok(trace)
}

/// Every number a record holds, bounded in this one place ([`headroom_model::units`]' bounds): times
/// and the interval are seconds a run can have (0 to [`headroom_model::units::MAX_SECONDS`]; an
/// interval more than 0), `level` a percentage, byte figures at most what a machine can
/// have ([`headroom_model::units::MAX_BYTES`]). The error names the field.
fn check_record(record: &Record) -> Result<(), String> {
    let named =
        |field: &str, result: Result<(), String>| result.map_err(|why| format!("{field}: {why}"));
    let seconds = |field: &str, s: f64| named(field, bounded_seconds(s).map(drop));
    let bytes = |field: &str, b: Option<u64>| {
        b.map_or(Ok(()), |b| named(field, bounded_bytes(b).map(drop)))
    };
    match record {
        Record::Start { interval, .. } => {
            if let Some(i) = *interval {
                seconds("interval", i)?;
                if i == 0.0 {
                    return Err("interval: a sampling interval is more than 0 seconds".into());
                }
            }
            Ok(())
        }
        Record::Sample(s) => {
            seconds("t", s.t)?;
            named("level", bounded_percent(s.level).map(drop))?;
            bytes("footprint", Some(s.footprint))?;
            bytes("swap_used", Some(s.swap_used))?;
            bytes("swap_total", s.swap_total)?;
            bytes("compressed", s.compressed)?;
            bytes("in_use", s.in_use)?;
            bytes("resident", s.resident)?;
            bytes("process_swap", s.process_swap)?;
            bytes("memory_limit", s.memory_limit)?;
            bytes("kernel_peak", s.kernel_peak)
        }
        Record::Event(e) => {
            seconds("t", e.t)?;
            e.what.check_bounds()
        }
        Record::Error { t: Some(t), .. } => seconds("t", *t),
        _ => Ok(()),
    }
}

/// Where `record` may stand after what `trace` holds so far: one `start` at most, nothing
/// after the `end` (but records of kinds this version does not know), and samples whose `t`
/// never goes back (a writer's clock only moves on: a trace out of order was not written by
/// one run).
fn check_order(trace: &Trace, record: &Record) -> Result<(), String> {
    if trace.ended && !matches!(record, Record::Unknown) {
        return Err("a record after the trace's end".into());
    }
    match record {
        Record::Start { .. } if trace.start.is_some() => Err("a second start record".into()),
        Record::Sample(s) => match trace.samples.last() {
            Some(last) if s.t < last.t => Err(format!(
                "t: {} comes before the sample before it ({}): samples are in time order",
                s.t, last.t
            )),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

fn add_record(trace: &mut Trace, record: Record) {
    match record {
        Record::Start { .. } => {} // typed by the reader, `start_of`
        Record::Sample(s) => trace.samples.push(s),
        Record::Event(e) => trace.events.push(e),
        Record::Error { t, error } => trace.errors.push((t, error)),
        Record::End { .. } => trace.ended = true,
        Record::Unknown => {}
    }
}

/// A line cut off mid-write: valid JSON never ends without its closing brace.
fn looks_cut(line: &str) -> bool {
    !line.trim_end().ends_with('}') || serde_json::from_str::<Value>(line).is_err()
}

/// True when a sample at `t` is due after the last one kept at `last`, for a series kept
/// one per `interval` (a tenth of it early is fine: ticks never land exactly on it). The one
/// thinning rule of traces, reports and replays: checks may come faster than the poll.
pub fn due(last: Option<Duration>, t: Duration, interval: Duration) -> bool {
    last.is_none_or(|last| t + interval / 10 >= last + interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn round_trip_through_writer_and_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut w = TraceWriter::create(&path).unwrap();
        let start = StartRecord {
            tool: Some("headroom".into()),
            ..StartRecord::default()
        };
        w.start(&StartRecord {
            utc: Some(utc_string(SystemTime::UNIX_EPOCH)),
            interval: Some(0.5),
            ..start
        })
        .unwrap();
        let s = SampleRecord {
            t: 0.5,
            footprint: 10,
            swap_used: 20,
            level: 45.5,
            pressure: Some("normal".into()),
            ..SampleRecord::default()
        };
        w.write(&Record::Sample(s.clone())).unwrap();
        w.write(&Record::Error {
            t: Some(1.0),
            error: "boom".into(),
        })
        .unwrap();
        w.end(Map::new()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(
            r#"{"type":"start","utc":"1970-01-01T00:00:00+00:00","interval":0.5,"tool":"headroom"}"#
        ));
        let trace = read_trace(&path).unwrap();
        assert_eq!(trace.samples, vec![s]);
        assert_eq!(trace.errors, vec![(Some(1.0), "boom".to_string())]);
        assert!(trace.ended && !trace.truncated);
        assert_eq!(trace.start.unwrap().tool.as_deref(), Some("headroom"));
    }

    #[test]
    fn half_written_last_line_is_tolerated() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_file(
            &dir,
            "cut.jsonl",
            "{\"type\":\"start\"}\n{\"type\":\"sample\",\"t\":0.5,\"footprint\":1,\"swap_used\":2,\"level\":50}\n{\"type\":\"sample\",\"t\":1.0,\"footp",
        );
        let trace = read_trace(&p).unwrap();
        assert_eq!(trace.samples.len(), 1);
        assert!(trace.truncated && !trace.ended);
    }

    #[test]
    fn bad_middle_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_file(
            &dir,
            "bad.jsonl",
            "{\"type\":\"start\"}\n\n{\"type\":\"sample\",\"t\":\"x\"}\n{\"type\":\"end\"}\n",
        );
        let e = read_trace(&p).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.to_string().starts_with(&format!("{}:3: ", p.display())),
            "{e}"
        );
    }

    #[test]
    fn unknown_record_types_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_file(
            &dir,
            "u.jsonl",
            "{\"type\":\"queue\",\"x\":1}\n{\"type\":\"end\"}\n",
        );
        let trace = read_trace(&p).unwrap();
        assert!(trace.ended && trace.samples.is_empty());
    }

    #[test]
    fn missing_file_is_line_zero() {
        let e = read_trace(Path::new("/nonexistent/trace.jsonl")).unwrap_err();
        assert_eq!(e.line, 0);
    }

    #[test]
    fn an_aimed_look_is_said_in_its_sample_line_and_only_then() {
        let aimed = SampleRecord {
            t: 0.277,
            aimed: true,
            ..SampleRecord::default()
        };
        let line = serde_json::to_string(&aimed).unwrap();
        assert!(line.contains(r#""aimed":true"#), "{line}");
        let back: SampleRecord = serde_json::from_str(&line).unwrap();
        assert!(back.aimed);
        let regular = serde_json::to_string(&SampleRecord::default()).unwrap();
        assert!(!regular.contains("aimed"), "{regular}");
        let old: SampleRecord =
            serde_json::from_str(r#"{"t":1.0,"swap_used":5,"level":40}"#).unwrap();
        assert!(!old.aimed, "a line without it was no aimed look");
    }
}
