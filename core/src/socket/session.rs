//! Version 2 of the mark protocol: a session (see the parent module's docs). After a hello
//! from a live member of a job, the connection stays open; each request line is answered in
//! order, and the server pushes JSON lines (the guard's warning) to every open session
//! through [`Sessions::push`]. Writes to one session go through one lock, so a push never
//! cuts into an answer.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;

use super::wire::{
    parse_from, write_answer, Answer, Request, LINE_DEADLINE, MAX_LINE_BYTES, PROTOCOL_VERSION,
};
use headroom_os::unix::peer::peer_pid;

/// Sessions open at once at most; a new one closes the oldest.
pub const MAX_SESSIONS: usize = 64;
/// How long a push may wait for one session's socket to take the line (a client that
/// reads nothing is dropped, not waited for).
const PUSH_WAIT: Duration = Duration::from_millis(200);

/// The write half of one session, shared by its answers and the pushes.
type Writer = Arc<Mutex<UnixStream>>;

/// The open sessions of one mark server, for pushes.
#[derive(Debug, Clone, Default)]
pub struct Sessions {
    open: Arc<Mutex<VecDeque<(u64, Writer)>>>,
    next: Arc<AtomicU64>,
}

/// A line the server sends on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Push {
    /// The guard warns: the job's budget growth passed the warning fraction of its budget.
    Warning {
        /// Swap growth counted against the budget, bytes.
        growth_bytes: u64,
        /// The budget, bytes.
        budget_bytes: u64,
        /// What the guard will do at the budget: `stop` or `pause`.
        then: String,
        /// The stage the job is in, if it marked any.
        stage: Option<String>,
        /// The job's pid (its leader, or the watched process).
        job: u32,
    },
    /// The guard paused the job (SIGSTOP). A paused process runs nothing: the job reads
    /// this once it runs again (resumed, or continued).
    Paused {
        /// Swap growth since the job started, bytes.
        growth_bytes: u64,
        /// Which pause this is (1 for the first).
        pause: u32,
        /// Pauses allowed before a crossing stops the job.
        max_pauses: u32,
        /// Why, in words; `None` when the user asked for the pause.
        reason: Option<String>,
        /// The stage the job is in, if it marked any.
        stage: Option<String>,
        /// The job's pid.
        job: u32,
    },
    /// The guard is stopping the job: SIGTERM follows at once, SIGKILL after `grace_ms` for
    /// what is left. The job may read this before or after its SIGTERM arrives.
    Stopping {
        /// Why, in words.
        reason: String,
        /// Time between SIGTERM and SIGKILL, milliseconds.
        grace_ms: u64,
        /// The stage the job is in, if it marked any.
        stage: Option<String>,
        /// The job's pid.
        job: u32,
    },
}

impl Sessions {
    /// Sends `push` to every open session; returns how many took it. A session whose
    /// socket does not take the line within 200 ms is closed.
    pub fn push(&self, push: &Push) -> usize {
        let Ok(mut line) = serde_json::to_vec(push) else {
            return 0;
        };
        line.push(b'\n');
        let writers: Vec<(u64, Writer)> = self.lock().iter().cloned().collect();
        let mut reached = 0;
        for (id, writer) in writers {
            let sent = {
                let stream = writer.lock().unwrap_or_else(PoisonError::into_inner);
                let mut out: &UnixStream = &stream;
                stream
                    .set_write_timeout(Some(PUSH_WAIT))
                    .and_then(|()| out.write_all(&line))
            };
            if sent.is_ok() {
                reached += 1;
            } else {
                self.close(id);
            }
        }
        reached
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, Writer)>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a session, closing the oldest past [`MAX_SESSIONS`]; returns its id.
    fn add(&self, writer: Writer) -> u64 {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let mut open = self.lock();
        while open.len() >= MAX_SESSIONS {
            if let Some((_, oldest)) = open.pop_front() {
                let _ = oldest
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .shutdown(Shutdown::Both);
            }
        }
        open.push_back((id, writer));
        id
    }

    /// Closes and forgets session `id`.
    fn close(&self, id: u64) {
        let mut open = self.lock();
        if let Some(at) = open.iter().position(|(n, _)| *n == id) {
            if let Some((_, writer)) = open.remove(at) {
                let _ = writer
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .shutdown(Shutdown::Both);
            }
        }
    }
}

/// A hello came from `pid` (of user `uid`) on `stream`: greets it when `accept` takes it (a live member of
/// a job here), then answers its lines until it closes. Returns when the session ends.
pub(super) fn begin(
    stream: UnixStream,
    pid: u32,
    uid: u32,
    accept: &impl Fn(u32, Request) -> Answer,
    sessions: &Sessions,
) -> io::Result<()> {
    let writer: Writer = Arc::new(Mutex::new(stream.try_clone()?));
    match accept(pid, Request::Hello) {
        Answer::Done => {}
        Answer::Queued => {
            let busy = Answer::Refused("Headroom is busy with this job; try again".into());
            return send(&writer, &busy);
        }
        refused @ Answer::Refused(_) => return send(&writer, &refused),
    }
    let greeting = format!(
        "{{\"headroom\":{PROTOCOL_VERSION},\"guard\":{}}}\n",
        std::process::id()
    );
    write_line(&writer, greeting.as_bytes())?;
    let id = sessions.add(Arc::clone(&writer));
    let served = serve_lines(&stream, &writer, uid, accept);
    sessions.close(id);
    served
}

/// Answers each line of an open session, in order, until the client closes (or sends a
/// line past the limit, answered with an error before the session closes).
fn serve_lines(
    stream: &UnixStream,
    writer: &Writer,
    uid: u32,
    accept: &impl Fn(u32, Request) -> Answer,
) -> io::Result<()> {
    stream.set_read_timeout(None)?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = Vec::new();
        let limit = u64::try_from(MAX_LINE_BYTES + 1).unwrap_or(u64::MAX);
        let n = (&mut reader).take(limit).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(()); // the client closed
        }
        let cut = !line.ends_with(b"\n");
        let verdict = match parse_from(line, uid) {
            Ok(Request::Hello) => Answer::Refused("this session has begun already".into()),
            Ok(request) => accept(peer_pid(stream)?, request),
            Err(why) => Answer::Refused(why),
        };
        send(writer, &verdict)?;
        if cut {
            return Ok(()); // too long, or closed mid-line: nothing more is read
        }
    }
}

fn send(writer: &Writer, answer: &Answer) -> io::Result<()> {
    let stream = writer.lock().unwrap_or_else(PoisonError::into_inner);
    stream.set_write_timeout(Some(LINE_DEADLINE))?;
    write_answer(&stream, answer)
}

fn write_line(writer: &Writer, line: &[u8]) -> io::Result<()> {
    let stream = writer.lock().unwrap_or_else(PoisonError::into_inner);
    stream.set_write_timeout(Some(LINE_DEADLINE))?;
    let mut out: &UnixStream = &stream;
    out.write_all(line)
}
