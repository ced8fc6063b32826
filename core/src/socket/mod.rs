//! A job's socket: how a job tells Headroom "the decode starts now" (a stage mark), reports
//! a load, and how `headroom pause|resume|stop` reaches the process that runs the job.
//!
//! Each Headroom process that runs jobs (`headroom guard`, `headroom watch`, the app)
//! listens on a Unix socket of its own, `<run dir>/<pid>.sock` (mode 0600, in a private
//! per-user folder short enough for `sun_path`: [`headroom_os::paths::Dirs::run_dir`]); `guard`
//! also passes its path to the command in [`MARK_ENV`]. Two versions of the protocol are
//! served on the same socket; the first line a client sends says which.
//!
//! **Version 1: one request per connection.** One JSON line each way, then the server
//! closes:
//!
//! ```text
//! → {"stage":"decode"}
//! ← ok            (or: queued; or: error: <why>)
//! ```
//!
//! **Version 2: a session** (`session.rs`; [`PROTOCOL_VERSION`]). The client's first line
//! is a hello; the server answers with a JSON greeting when the client is a live member of
//! one of its jobs (else `error: <why>`, and closes). The connection then stays open: the
//! client sends requests (the same lines as version 1, and reports), each answered by one
//! line in order, and the server may push a JSON line at any time between answers. A line
//! that begins with `{` is a push; `ok`, `queued` and `error: ...` are answers.
//!
//! ```text
//! → {"hello":2}
//! ← {"headroom":2,"guard":4242}
//! → {"stage":"decode"}
//! ← ok
//! → {"event":{"kind":"load","name":"unet","nbytes":5000000000,"seconds":3.1}}
//! ← ok
//! → {"stage":null}      (the stage under way ends: what follows is no stage's)
//! ← ok
//! ← {"warning":{"growth_bytes":858993459,"budget_bytes":1073741824,"then":"pause","stage":"decode","job":4243}}
//! ← {"paused":{"growth_bytes":1073741824,"pause":1,"max_pauses":3,"reason":"...","stage":"decode","job":4243}}
//! ← {"stopping":{"reason":"...","grace_ms":5000,"stage":"decode","job":4243}}
//! ```
//!
//! An event (`load`, `reload`, `release`, `mark`, as stageload names them:
//! [`headroom_rules::stages::Reported`]) goes to the job's trace; version 1 takes it too. A
//! version-1 server answers a hello with `error: not a mark line ...`: the client then
//! falls back to one connection per mark, and hears no warning. The pushes ([`Push`]): the
//! guard's warning at [`headroom_rules::policy::WARN_FRACTION`] of the budget (`warning`: the budget
//! growth and the budget in bytes, what the guard will do at the budget, the current stage
//! if any, and the job's pid); a pause (`paused`, read by the job once it runs again); and a
//! stop under way (`stopping`, with the grace before SIGKILL, racing the SIGTERM). A client
//! must ignore pushes it does not know.
//!
//! `queued` means the request was handed to the job's driver, which had not answered within
//! a second: it will be carried out if it still makes sense then. One-request connections
//! are served concurrently, at most [`MAX_CONNECTIONS`] at a time (a new one closes the
//! oldest whose line is not read yet), each with [`LINE_DEADLINE`] in all to send its line:
//! idle or byte-dripping clients cannot delay anybody's request. A request once read is
//! answered: a connection is closed to make room only before its line is taken, so a
//! request said to have failed was never carried out. Sessions have no deadline (a job marks when it
//! likes) and are counted apart, at most [`MAX_SESSIONS`] (a new one closes the oldest);
//! each of their lines is at most 1 KiB too.
//!
//! A mark, a report and a hello are accepted only from a live member of the job: the
//! server asks the kernel who connected (`unix::peer`) and looks that pid up among the
//! job's members, so a process outside the job cannot mark it, whatever it sends.
//! `headroom mark NAME` is the client for shell scripts; the Python package
//! `headroom-memory` speaks version 2.
//!
//! The same socket takes requests about a job from its owner: `headroom resume PID` and
//! `headroom stop PID` send `{"control":"resume","pid":PID}` (or `"stop"`, `"pause"`), and
//! the server whose job has that pid as its leader answers `ok`. Only the user who runs the
//! guard can connect (the socket is 0600 in a folder checked private from its first folder
//! down, [`Dirs::make_private`]), and both ends ask the kernel who the other is
//! (`unix::peer`): a client talks only to a server of its own user (or root's), a server takes
//! control requests only from one.

mod session;
mod wire;

pub use session::{Push, Sessions, MAX_SESSIONS};
pub use wire::{check_stage, Answer, MarkLine, Request, LINE_DEADLINE, PROTOCOL_VERSION};
use wire::{parse_from, trusted, write_answer, Line, MAX_LINE_BYTES};

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::net::Shutdown;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use headroom_model::effects::Control;
use headroom_os::paths::{Dirs, PrivateDir};
use headroom_os::unix::peer::{peer_pid, peer_uid};
use headroom_os::unix::signals::current_uid;

/// The environment variable that holds the mark socket's path, for the job's processes.
pub const MARK_ENV: &str = "HEADROOM_MARK";
/// Connections served at once at most; a new one closes the oldest whose request is not
/// read yet (or, when all of them are being answered, is closed itself).
pub const MAX_CONNECTIONS: usize = 32;
/// How long a client waits for the answer in all.
pub const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// The answer of a server that has no job with `pid` (the client then asks the next one).
pub fn not_here(pid: u32) -> String {
    format!("{NOT_HERE} {pid} here")
}

/// True for an answer made by [`not_here`].
pub fn is_not_here(answer: &str) -> bool {
    answer.starts_with(NOT_HERE)
}

const NOT_HERE: &str = "no job with pid";

/// The socket a process with pid `pid` listens on under `marks_dir`.
pub fn socket_path(marks_dir: &Path, pid: u32) -> PathBuf {
    marks_dir.join(format!("{pid}.sock"))
}

/// A listening mark socket; removed when dropped.
#[derive(Debug)]
pub struct JobSocket {
    path: PathBuf,
    listener: Option<UnixListener>,
    sessions: Sessions,
    _dir: PrivateDir,
}

impl JobSocket {
    /// Listens on `socket_path(run dir, our pid)` in `dirs`' run folder, made private or
    /// checked to be from its first folder down ([`Dirs::make_private`]: a folder of another
    /// user on the way is an error naming it), replacing a stale socket of a dead process
    /// with our pid.
    pub fn bind(dirs: &Dirs) -> io::Result<JobSocket> {
        let dir = dirs.make_private(&dirs.run_dir)?;
        let path = socket_path(dir.path(), std::process::id());
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        Ok(JobSocket {
            path,
            listener: Some(listener),
            sessions: Sessions::default(),
            _dir: dir,
        })
    }

    /// Its open version-2 sessions, for pushes (see [`Sessions::push`]).
    pub fn sessions(&self) -> Sessions {
        self.sessions.clone()
    }

    /// The socket's path (for [`MARK_ENV`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves requests until the process ends: connections concurrently (at most
    /// [`MAX_CONNECTIONS`], the oldest not yet read closed for a new one), each read within
    /// [`LINE_DEADLINE`]; `accept(peer_pid, request)` says what to answer.
    pub fn serve(
        &mut self,
        accept: impl Fn(u32, Request) -> Answer + Send + Sync + 'static,
    ) -> io::Result<()> {
        let Some(listener) = self.listener.take() else {
            return Ok(());
        };
        let accept = Arc::new(accept);
        let sessions = self.sessions.clone();
        std::thread::Builder::new()
            .name("headroom-marks".into())
            .spawn(move || {
                let open: Open = Arc::default();
                for (n, stream) in (0u64..).zip(listener.incoming().flatten()) {
                    if let Err(e) = handle(n, stream, &open, &accept, &sessions) {
                        tracing::debug!(error = %e, "a mark connection failed");
                    }
                }
            })?;
        Ok(())
    }
}

/// The connections being served: those whose request is not read yet, oldest first (the
/// ones a new connection may close), and how many requests were read and are being answered
/// (never closed: a request taken is answered).
#[derive(Debug, Default)]
struct Served {
    waiting: VecDeque<(u64, UnixStream)>,
    taken: usize,
}

impl Served {
    /// Makes room for one more connection: closes the oldest one still waiting for its
    /// request; false when every one being served has its request taken (the new one is
    /// then closed instead).
    fn make_room(&mut self) -> bool {
        if self.waiting.len() + self.taken < MAX_CONNECTIONS {
            return true;
        }
        match self.waiting.pop_front() {
            Some((_, oldest)) => {
                let _ = oldest.shutdown(Shutdown::Both);
                true
            }
            None => false,
        }
    }

    /// Takes connection `n`'s request: false when it was closed to make room first.
    fn take(&mut self, n: u64) -> bool {
        let before = self.waiting.len();
        self.waiting.retain(|(id, _)| *id != n);
        let taken = self.waiting.len() < before;
        self.taken += usize::from(taken);
        taken
    }

    /// Connection `n` is done with, its request `taken` or not.
    fn done(&mut self, n: u64, taken: bool) {
        if taken {
            self.taken = self.taken.saturating_sub(1);
        } else {
            self.waiting.retain(|(id, _)| *id != n);
        }
    }
}

type Open = Arc<Mutex<Served>>;

/// Registers connection `n` (closing the oldest not yet taken past the limit) and answers
/// it on a thread.
fn handle<F>(
    n: u64,
    stream: UnixStream,
    open: &Open,
    accept: &Arc<F>,
    sessions: &Sessions,
) -> io::Result<()>
where
    F: Fn(u32, Request) -> Answer + Send + Sync + 'static,
{
    {
        let mut served = open.lock().unwrap_or_else(PoisonError::into_inner);
        if !served.make_room() {
            return stream.shutdown(Shutdown::Both);
        }
        served.waiting.push_back((n, stream.try_clone()?));
    }
    let (open, accept, sessions) = (Arc::clone(open), Arc::clone(accept), sessions.clone());
    std::thread::Builder::new()
        .name("headroom-mark".into())
        .spawn(move || {
            let lock = || open.lock().unwrap_or_else(PoisonError::into_inner);
            let taken = std::cell::Cell::new(false);
            let take = || {
                taken.set(lock().take(n));
                taken.get()
            };
            // A session is counted apart from its hello on (its own limit, no deadline).
            let leave = || lock().done(n, taken.replace(false));
            if let Err(e) = answer(stream, take, &*accept, &sessions, &leave) {
                tracing::debug!(error = %e, "a mark connection failed");
            }
            leave();
        })?;
    Ok(())
}

impl Drop for JobSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads one line from `stream` within [`LINE_DEADLINE`] in all (at most
/// [`MAX_LINE_BYTES`] and one more byte); `None` when nothing whole came in time.
fn read_line(mut stream: &UnixStream) -> io::Result<Option<Vec<u8>>> {
    let deadline = Instant::now() + LINE_DEADLINE;
    let mut line = Vec::new();
    let mut chunk = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        stream.set_read_timeout(Some(left))?;
        let n = match io::Read::read(&mut stream, &mut chunk) {
            Ok(0) => return Ok(Some(line)),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        line.extend_from_slice(&chunk[..n]);
        if line.contains(&b'\n') || line.len() > MAX_LINE_BYTES {
            return Ok(Some(line));
        }
    }
}

/// True when the client of `stream` has closed it after sending its one-request line (it
/// waits for the answer with nothing more to send: a read finds nothing now while it is
/// there, the end of the stream once it is gone).
fn client_gone(stream: &UnixStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let mut byte = [0u8; 1];
    let gone = matches!(io::Read::read(&mut &*stream, &mut byte), Ok(0));
    let _ = stream.set_nonblocking(false);
    gone
}

/// Reads one line from `stream`, takes it (`take`: false when the connection was closed
/// to make room before its line was read: it is then dropped, not carried out), checks it
/// and its sender, answers; a hello begins a session (`session.rs`), which is served here
/// until it ends (`leave` is called first).
fn answer(
    stream: UnixStream,
    take: impl FnOnce() -> bool,
    accept: &impl Fn(u32, Request) -> Answer,
    sessions: &Sessions,
    leave: &dyn Fn(),
) -> io::Result<()> {
    stream.set_write_timeout(Some(LINE_DEADLINE))?;
    let Some(line) = read_line(&stream)? else {
        return Ok(()); // nothing whole in time: closed without an answer
    };
    if !take() {
        return Ok(()); // closed to make room: never carried out
    }
    // After the read: on macOS the peer pid is the last process that used the socket, so
    // asked now it is the one that sent this line (`unix::peer`).
    let pid = peer_pid(&stream)?;
    let uid = peer_uid(&stream)?;
    let verdict = match parse_from(line, uid) {
        Ok(Request::Hello) => {
            leave();
            return session::begin(stream, pid, uid, accept, sessions);
        }
        // A control client that gave up waiting (a server slow to accept, under a flood or
        // on a loaded machine) has closed its end and told its user the request failed: the
        // request is dropped, never carried out behind the user's back. (`headroom
        // pause|resume|stop` keeps its end open until the answer.)
        Ok(Request::Control { .. }) if client_gone(&stream) => return Ok(()),
        Ok(request) => accept(pid, request),
        Err(why) => Answer::Refused(why),
    };
    write_answer(&stream, &verdict)
}

/// Why a mark was not taken (the client's side).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MarkError {
    /// Nothing listens at the path: the guard is gone (or never was).
    #[error("no Headroom job listens at {}: {source}", path.display())]
    Closed {
        /// The socket path.
        path: PathBuf,
        /// Why the connection failed.
        #[source]
        source: io::Error,
    },
    /// The guard answered with an error.
    #[error("{0}")]
    Refused(String),
    /// The server is another user's: nothing was sent to it.
    #[error(
        "refusing {}: it is served by uid {uid}, not by you (uid {me}) or root: another user \
         took the place of a Headroom socket",
        path.display()
    )]
    Stranger {
        /// The socket path.
        path: PathBuf,
        /// The server's uid.
        uid: u32,
        /// Ours.
        me: u32,
    },
    /// The run folder is not ours (or cannot be read): no socket in it is talked to.
    #[error("{0}")]
    Folder(io::Error),
    /// Sending or reading failed midway.
    #[error("talking to {}: {source}", path.display())]
    Io {
        /// The socket path.
        path: PathBuf,
        /// What failed.
        #[source]
        source: io::Error,
    },
}

/// What a server did with a request it accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Done.
    Done,
    /// Handed to the job's driver, which will carry it out if it still makes sense.
    Queued,
}

/// Sends a mark for `stage` to the socket at `path`; `Ok` once the guard took it.
pub fn send_mark(path: &Path, stage: &str) -> Result<Sent, MarkError> {
    send_line(
        path,
        &Line::Mark(MarkLine {
            stage: stage.to_string(),
        }),
    )
}

/// Ends the stage under way of the job at `path` (`{"stage": null}`): what follows belongs
/// to no stage until the next mark.
pub fn send_end_stage(path: &Path) -> Result<Sent, MarkError> {
    send_line(path, &Line::EndStage { stage: () })
}

/// Asks the server at `path` to `control` its job whose leader is `pid`.
pub fn send_control(path: &Path, control: Control, pid: u32) -> Result<Sent, MarkError> {
    send_line(path, &Line::Control { control, pid })
}

/// The mark sockets in `dirs`' run folder (guards, watches and the app each have one), once
/// it is checked ours from its first folder down ([`Dirs::open_private`]); none when it
/// does not exist yet.
pub fn sockets(dirs: &Dirs) -> Result<Vec<PathBuf>, MarkError> {
    let Some(dir) = dirs
        .open_private(&dirs.run_dir)
        .map_err(MarkError::Folder)?
    else {
        return Ok(Vec::new());
    };
    let marks_dir = dir.path();
    let Ok(entries) = std::fs::read_dir(marks_dir) else {
        return Ok(Vec::new());
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid: u32 = name.to_str()?.strip_suffix(".sock")?.parse().ok()?;
            Some(socket_path(marks_dir, pid))
        })
        .collect();
    out.sort();
    Ok(out)
}

fn send_line(path: &Path, request: &Line) -> Result<Sent, MarkError> {
    let io_err = |source| MarkError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut stream = UnixStream::connect(path).map_err(|source| MarkError::Closed {
        path: path.to_path_buf(),
        source,
    })?;
    // Who listens there, by the kernel's word, before anything is sent.
    let uid = peer_uid(&stream).map_err(io_err)?;
    if !trusted(uid) {
        return Err(MarkError::Stranger {
            path: path.to_path_buf(),
            uid,
            me: current_uid(),
        });
    }
    stream.set_read_timeout(Some(ANSWER_WAIT)).map_err(io_err)?;
    stream
        .set_write_timeout(Some(LINE_DEADLINE))
        .map_err(io_err)?;
    let mut line = serde_json::to_vec(request).map_err(|e| io_err(io::Error::other(e)))?;
    line.push(b'\n');
    stream.write_all(&line).map_err(io_err)?;
    let mut reply = String::new();
    BufReader::new(&stream)
        .read_line(&mut reply)
        .map_err(io_err)?;
    match reply.trim_end() {
        "ok" => Ok(Sent::Done),
        "queued" => Ok(Sent::Queued),
        "" => Err(MarkError::Refused("the guard closed the connection".into())),
        other => Err(MarkError::Refused(
            other.strip_prefix("error: ").unwrap_or(other).to_string(),
        )),
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
#[allow(clippy::unwrap_used)] // helpers of tests: a panic is a failed test
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_control_client_that_gave_up_is_seen_gone() {
        // The server has read the one line; the client either waits for the answer (open,
        // nothing more to read) or gave up and closed its end.
        let (server, client) = UnixStream::pair().unwrap();
        (&client)
            .write_all(b"{\"control\":\"pause\",\"pid\":1}\n")
            .unwrap();
        assert_eq!(read_line(&server).unwrap().unwrap().len(), 28);
        assert!(!client_gone(&server), "a waiting client is there");
        // The check leaves the stream blocking, as the answer's write expects.
        drop(client);
        assert!(client_gone(&server), "a client that closed is gone");
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(check_stage(" decode "), Ok("decode"));
        assert!(check_stage("").is_err());
        assert!(check_stage("   ").is_err());
        assert!(check_stage(&"x".repeat(10_000)).is_err());
        assert!(check_stage("a\u{7}b").is_err());
        assert_eq!(check_stage(&"é".repeat(100)).map(str::len), Ok(200));
    }

    #[test]
    fn a_null_stage_ends_the_stage_and_nothing_else_does() {
        let parse = |text: &str| wire::parse_line(text.as_bytes().to_vec());
        assert_eq!(parse(r#"{"stage":null}"#), Ok(Request::EndStage));
        assert_eq!(parse(r#"{"stage":"x"}"#), Ok(Request::Mark("x".into())));
        // An empty name, a missing stage, a number: refused, never an end.
        assert!(parse(r#"{"stage":""}"#).is_err());
        assert!(parse(r#"{}"#).is_err());
        assert!(parse(r#"{"stage":1}"#).is_err());
        // What this side sends is what it parses.
        let sent = serde_json::to_string(&Line::EndStage { stage: () }).unwrap();
        assert_eq!(sent, r#"{"stage":null}"#);
    }

    #[test]
    fn a_mark_reaches_the_server_with_the_senders_pid() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = Dirs::under(dir.path());
        let mut server = JobSocket::bind(&dirs).unwrap();
        let path = server.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let (tx, rx) = mpsc::channel();
        server
            .serve(move |pid, request| {
                let sent = match request {
                    Request::Mark(stage) if stage == "forbidden" => {
                        return Answer::Refused("not in this job".into())
                    }
                    Request::Mark(stage) => tx.send((pid, stage)),
                    Request::Control { control, pid } => {
                        tx.send((pid, control.as_str().to_string()))
                    }
                    Request::Hello | Request::Event(_) | Request::EndStage => return Answer::Done,
                };
                sent.map_or_else(|e| Answer::Refused(e.to_string()), |()| Answer::Done)
            })
            .unwrap();
        assert_eq!(send_mark(&path, "decode").unwrap(), Sent::Done);
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            (std::process::id(), "decode".to_string())
        );
        send_control(&path, Control::Resume, 4321).unwrap();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(5)).unwrap(),
            (4321, "resume".to_string())
        );
        assert_eq!(sockets(&dirs).unwrap(), vec![path.clone()]);
        let refused = send_mark(&path, "forbidden").unwrap_err();
        assert_eq!(refused.to_string(), "not in this job");
        // A line that is not a mark, and one far too long, are refused with a reason.
        for bad in [b"hello\n".to_vec(), vec![b'x'; 5000]] {
            let mut s = UnixStream::connect(&path).unwrap();
            s.write_all(&bad).unwrap();
            let mut reply = String::new();
            BufReader::new(&s).read_line(&mut reply).unwrap();
            assert!(reply.starts_with("error: "), "{reply}");
        }
        drop(server);
        assert!(!path.exists(), "the socket is removed with the server");
        assert!(matches!(
            send_mark(&path, "late"),
            Err(MarkError::Closed { .. })
        ));
    }

    /// A server whose `accept` refuses marks named `forbidden` and hellos when `members`
    /// is false, and sends every other request to the returned channel.
    fn session_server(
        dir: &Path,
        members: bool,
    ) -> (JobSocket, PathBuf, mpsc::Receiver<(u32, String)>) {
        let mut server = JobSocket::bind(&Dirs::under(dir)).unwrap();
        let path = server.path().to_path_buf();
        let (tx, rx) = mpsc::channel();
        server
            .serve(move |pid, request| {
                let said = match request {
                    Request::Hello if !members => {
                        return Answer::Refused(format!("pid {pid} is not a process of this job"))
                    }
                    Request::Mark(stage) if stage == "forbidden" => {
                        return Answer::Refused("not in this job".into())
                    }
                    Request::Hello => "hello".to_string(),
                    Request::Mark(stage) => stage,
                    Request::EndStage => "end".to_string(),
                    Request::Event(e) => format!("{} {}", e.kind, e.name.unwrap_or_default()),
                    Request::Control { control, .. } => control.as_str().to_string(),
                };
                let _ = tx.send((pid, said));
                Answer::Done
            })
            .unwrap();
        (server, path, rx)
    }

    fn line(reader: &mut impl BufRead) -> String {
        let mut reply = String::new();
        reader.read_line(&mut reply).unwrap();
        reply.trim_end().to_string()
    }

    #[test]
    fn a_session_answers_in_order_and_hears_pushes() {
        let dir = tempfile::tempdir().unwrap();
        let (server, path, rx) = session_server(dir.path(), true);
        let mut s = UnixStream::connect(&path).unwrap();
        let mut reader = BufReader::new(s.try_clone().unwrap());
        s.write_all(b"{\"hello\":2}\n").unwrap();
        let greeting: serde_json::Value = serde_json::from_str(&line(&mut reader)).unwrap();
        assert_eq!(greeting["headroom"], 2);
        assert_eq!(greeting["guard"], std::process::id());
        assert_eq!(rx.recv().unwrap(), (std::process::id(), "hello".into()));
        // Three requests on the one connection, answered in order.
        s.write_all(b"{\"stage\":\"load\"}\n{\"stage\":\"forbidden\"}\n")
            .unwrap();
        s.write_all(b"{\"event\":{\"kind\":\"release\",\"name\":\"vae\",\"nbytes\":5}}\n")
            .unwrap();
        assert_eq!(line(&mut reader), "ok");
        assert_eq!(line(&mut reader), "error: not in this job");
        assert_eq!(line(&mut reader), "ok");
        assert_eq!(rx.recv().unwrap().1, "load");
        assert_eq!(rx.recv().unwrap().1, "release vae");
        // A push reaches the open session.
        let sessions = server.sessions();
        assert_eq!(sessions.len(), 1);
        let warning = Push::Warning {
            growth_bytes: 80,
            budget_bytes: 100,
            then: "pause".into(),
            stage: Some("load".into()),
            job: 42,
        };
        assert_eq!(sessions.push(&warning), 1);
        let pushed: serde_json::Value = serde_json::from_str(&line(&mut reader)).unwrap();
        assert_eq!(pushed["warning"]["growth_bytes"], 80);
        assert_eq!(pushed["warning"]["stage"], "load");
        // A bad report, a second hello, then a line past the limit ends the session.
        s.write_all(b"{\"event\":{\"kind\":\"explode\"}}\n{\"hello\":2}\n")
            .unwrap();
        assert!(line(&mut reader).starts_with("error: unknown event kind 'explode'"));
        assert_eq!(line(&mut reader), "error: this session has begun already");
        s.write_all(&[b'x'; 3000]).unwrap();
        assert!(line(&mut reader).starts_with("error: the mark line is longer than"));
        assert_eq!(line(&mut reader), "", "closed after a line past the limit");
        assert!(wait(|| sessions.is_empty()), "the session is forgotten");
        // One-request connections are served as before, beside sessions.
        assert_eq!(send_mark(&path, "decode").unwrap(), Sent::Done);
    }

    #[test]
    fn a_hello_from_outside_the_job_or_of_another_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (server, path, _rx) = session_server(dir.path(), false);
        for (hello, why) in [
            ("{\"hello\":2}\n", "error: pid "),
            ("{\"hello\":1}\n", "error: protocol version 1 has no hello"),
            // A version this server does not speak is refused, not greeted as its own.
            (
                "{\"hello\":999}\n",
                "error: protocol version 999 is not spoken here",
            ),
        ] {
            let mut s = UnixStream::connect(&path).unwrap();
            let mut reader = BufReader::new(s.try_clone().unwrap());
            s.write_all(hello.as_bytes()).unwrap();
            assert!(line(&mut reader).starts_with(why), "{hello}");
            assert_eq!(line(&mut reader), "", "closed");
        }
        assert!(server.sessions().is_empty());
    }

    fn wait(mut f: impl FnMut() -> bool) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}
