//! Stage marks from inside a job: how a job tells Headroom "the decode starts now".
//!
//! Each Headroom process that runs jobs (`headroom guard`, `headroom watch`, the app)
//! listens on a Unix socket of its own, `<run dir>/<pid>.sock` (mode 0600, in a private
//! per-user folder short enough for `sun_path`: [`crate::paths::Dirs::run_dir`]); `guard`
//! also passes its path to the command in [`MARK_ENV`]. The protocol is one JSON line each
//! way:
//!
//! ```text
//! → {"stage":"decode"}
//! ← ok            (or: queued; or: error: <why>)
//! ```
//!
//! `queued` means the request was handed to the job's driver, which had not answered within
//! a second: it will be carried out if it still makes sense then. Connections are served
//! concurrently, at most [`MAX_CONNECTIONS`] at a time (a new one closes the oldest whose
//! line is not read yet), each with [`LINE_DEADLINE`] in all to send its line: idle or
//! byte-dripping clients cannot delay anybody's request. A request once read is answered:
//! a connection is closed to make room only before its line is taken, so a request said to
//! have failed was never carried out.
//!
//! A mark is accepted only from a live member of the job: the server asks the kernel who
//! connected (`unix::peer`) and looks that pid up among the job's members, so a process
//! outside the job cannot mark it, whatever it sends. `headroom mark NAME` is the client for
//! shell scripts; a program can write the line itself (the README has a three-line Python
//! example).
//!
//! The same socket takes requests about a job from its owner: `headroom resume PID` and
//! `headroom stop PID` send `{"control":"resume","pid":PID}` (or `"stop"`, `"pause"`), and
//! the server whose job has that pid as its leader answers `ok`. Only the user who runs the
//! guard can connect (the socket is 0600 in a folder checked private from its first folder
//! down, [`Dirs::make_private`]), and both ends ask the kernel who the other is
//! (`unix::peer`): a client talks only to a server of its own user (or root's), a server takes
//! control requests only from one.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Write};
use std::net::Shutdown;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::paths::{Dirs, PrivateDir};
use crate::unix::peer::{peer_pid, peer_uid};
use crate::unix::signals::current_uid;

/// The environment variable that holds the mark socket's path, for the job's processes.
pub const MARK_ENV: &str = "HEADROOM_MARK";
/// Longest stage name, bytes.
pub const MAX_STAGE_BYTES: usize = 200;
/// Longest request line read, bytes (a longer one is refused without reading on).
const MAX_LINE_BYTES: usize = 1024;
/// How long a client may take to send its whole line (and to read the answer).
pub const LINE_DEADLINE: Duration = Duration::from_secs(2);
/// Connections served at once at most; a new one closes the oldest whose request is not
/// read yet (or, when all of them are being answered, is closed itself).
pub const MAX_CONNECTIONS: usize = 32;
/// How long a client waits for the answer in all.
pub const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// What the server says to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Done (or taken: a mark).
    Done,
    /// Handed to the job's driver, which did not answer in time: it will carry it out if it
    /// still makes sense then.
    Queued,
    /// Not done, and why.
    Refused(String),
}

/// One mark line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MarkLine {
    /// The stage that starts now.
    pub stage: String,
}

pub use crate::effects::Control;

/// The answer of a server that has no job with `pid` (the client then asks the next one).
pub fn not_here(pid: u32) -> String {
    format!("{NOT_HERE} {pid} here")
}

/// True for an answer made by [`not_here`].
pub fn is_not_here(answer: &str) -> bool {
    answer.starts_with(NOT_HERE)
}

const NOT_HERE: &str = "no job with pid";

/// One request line, as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Mark(MarkLine),
    Control { control: Control, pid: u32 },
}

/// A request, checked, with the kernel's word for who sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// A stage starts now (the name is checked with [`check_stage`]).
    Mark(String),
    /// `control` for the job whose leader (or watched process) is `pid`.
    Control {
        /// What to do.
        control: Control,
        /// The job's pid.
        pid: u32,
    },
}

/// A stage name, checked: not empty, at most [`MAX_STAGE_BYTES`], no control characters.
pub fn check_stage(name: &str) -> Result<&str, String> {
    let trimmed = name.trim();
    if trimmed.is_empty() {
        return Err("a stage name cannot be empty".into());
    }
    if trimmed.len() > MAX_STAGE_BYTES {
        return Err(format!(
            "a stage name is at most {MAX_STAGE_BYTES} bytes, not {}",
            trimmed.len()
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err("a stage name cannot hold control characters".into());
    }
    Ok(trimmed)
}

/// The socket a process with pid `pid` listens on under `marks_dir`.
pub fn socket_path(marks_dir: &Path, pid: u32) -> PathBuf {
    marks_dir.join(format!("{pid}.sock"))
}

/// A listening mark socket; removed when dropped.
#[derive(Debug)]
pub struct MarkServer {
    path: PathBuf,
    listener: Option<UnixListener>,
    _dir: PrivateDir,
}

impl MarkServer {
    /// Listens on `socket_path(run dir, our pid)` in `dirs`' run folder, made private or
    /// checked to be from its first folder down ([`Dirs::make_private`]: a folder of another
    /// user on the way is an error naming it), replacing a stale socket of a dead process
    /// with our pid.
    pub fn bind(dirs: &Dirs) -> io::Result<MarkServer> {
        let dir = dirs.make_private(&dirs.run_dir)?;
        let path = socket_path(dir.path(), std::process::id());
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        Ok(MarkServer {
            path,
            listener: Some(listener),
            _dir: dir,
        })
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
        std::thread::Builder::new()
            .name("headroom-marks".into())
            .spawn(move || {
                let open: Open = Arc::default();
                for (n, stream) in (0u64..).zip(listener.incoming().flatten()) {
                    if let Err(e) = handle(n, stream, &open, &accept) {
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
fn handle<F>(n: u64, stream: UnixStream, open: &Open, accept: &Arc<F>) -> io::Result<()>
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
    let (open, accept) = (Arc::clone(open), Arc::clone(accept));
    std::thread::Builder::new()
        .name("headroom-mark".into())
        .spawn(move || {
            let lock = || open.lock().unwrap_or_else(PoisonError::into_inner);
            let mut taken = false;
            let take = || {
                taken = lock().take(n);
                taken
            };
            if let Err(e) = answer(stream, take, &*accept) {
                tracing::debug!(error = %e, "a mark connection failed");
            }
            lock().done(n, taken);
        })?;
    Ok(())
}

impl Drop for MarkServer {
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

/// Reads one line from `stream`, takes it (`take`: false when the connection was closed
/// to make room before its line was read: it is then dropped, not carried out), checks it
/// and its sender, answers.
fn answer(
    stream: UnixStream,
    take: impl FnOnce() -> bool,
    accept: &impl Fn(u32, Request) -> Answer,
) -> io::Result<()> {
    stream.set_write_timeout(Some(LINE_DEADLINE))?;
    let Some(mut line) = read_line(&stream)? else {
        return Ok(()); // nothing whole in time: closed without an answer
    };
    if !take() {
        return Ok(()); // closed to make room: never carried out
    }
    // After the read: on macOS the peer pid is the last process that used the socket, so
    // asked now it is the one that sent this line (`unix::peer`).
    let pid = peer_pid(&stream)?;
    let uid = peer_uid(&stream)?;
    let too_long = line.len() > MAX_LINE_BYTES && !line[..MAX_LINE_BYTES].contains(&b'\n');
    if let Some(end) = line.iter().position(|&b| b == b'\n') {
        line.truncate(end);
    }
    let verdict = if too_long {
        Answer::Refused(format!(
            "the mark line is longer than {MAX_LINE_BYTES} bytes"
        ))
    } else {
        match serde_json::from_slice::<Line>(&line)
            .map_err(|e| format!("not a mark line ({e}): expected {{\"stage\":\"NAME\"}}"))
            .and_then(|line| match line {
                Line::Mark(m) => check_stage(&m.stage).map(|s| Request::Mark(s.to_string())),
                Line::Control { .. } if !trusted(uid) => Err(format!(
                    "uid {uid} may not control the jobs of uid {}",
                    current_uid()
                )),
                Line::Control { control, pid } => Ok(Request::Control { control, pid }),
            }) {
            Ok(request) => accept(pid, request),
            Err(why) => Answer::Refused(why),
        }
    };
    let mut out = &stream;
    match verdict {
        Answer::Done => out.write_all(b"ok\n"),
        Answer::Queued => out.write_all(b"queued\n"),
        Answer::Refused(why) => out.write_all(format!("error: {why}\n").as_bytes()),
    }
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

/// True for a peer whose requests (or answers) are taken: our own user, or root.
fn trusted(uid: u32) -> bool {
    uid == current_uid() || uid == 0
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
mod tests {
    use super::*;
    use std::sync::mpsc;

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
    fn a_mark_reaches_the_server_with_the_senders_pid() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = Dirs::under(dir.path());
        let mut server = MarkServer::bind(&dirs).unwrap();
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
}
