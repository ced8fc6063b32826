//! The protocol's lines, shared by one-request connections (`mod.rs`) and sessions
//! (`session.rs`): the request lines and their checks, the answers, the limits.

use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use headroom_model::effects::Control;
use headroom_os::unix::signals::current_uid;
use headroom_rules::stages::Reported;

/// The newest protocol version this server speaks (see the module docs).
pub const PROTOCOL_VERSION: u32 = 2;
/// Longest request line read, bytes (a longer one is refused without reading on).
pub(super) const MAX_LINE_BYTES: usize = 1024;
/// How long a client may take to send its whole line (and to read the answer).
pub const LINE_DEADLINE: Duration = Duration::from_secs(2);

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

/// One request line, as sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum Line {
    /// `{"stage": null}`: the stage under way ends (tried first: a name is no null).
    EndStage {
        stage: (),
    },
    Mark(MarkLine),
    Control {
        control: Control,
        pid: u32,
    },
    Hello {
        hello: u32,
    },
    Event {
        event: Reported,
    },
}

/// A request, checked, with the kernel's word for who sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// A stage starts now (the name is checked with [`check_stage`]).
    Mark(String),
    /// The stage under way ends now (`{"stage": null}`): what follows belongs to no stage.
    EndStage,
    /// `control` for the job whose leader (or watched process) is `pid`.
    Control {
        /// What to do.
        control: Control,
        /// The job's pid.
        pid: u32,
    },
    /// A version-2 session begins: done when the sender is a live member of a job here.
    Hello,
    /// The job reports a load, release or mark (checked with [`Reported::check`]).
    Event(Reported),
}

/// A stage name, checked: not empty, at most [`headroom_rules::stages::MAX_NAME_BYTES`], no control characters.
pub fn check_stage(name: &str) -> Result<&str, String> {
    headroom_rules::stages::check_name(name)
}

/// One request line (up to its newline), checked: a line past [`MAX_LINE_BYTES`], one that
/// is not JSON of a request, a bad name or a hello of a version other than
/// [`PROTOCOL_VERSION`] are refused with why.
pub(super) fn parse_line(mut line: Vec<u8>) -> Result<Request, String> {
    let too_long = line.len() > MAX_LINE_BYTES && !line[..MAX_LINE_BYTES].contains(&b'\n');
    if too_long {
        return Err(format!(
            "the mark line is longer than {MAX_LINE_BYTES} bytes"
        ));
    }
    if let Some(end) = line.iter().position(|&b| b == b'\n') {
        line.truncate(end);
    }
    let parsed = serde_json::from_slice::<Line>(&line)
        .map_err(|e| format!("not a mark line ({e}): expected {{\"stage\":\"NAME\"}}"))?;
    match parsed {
        Line::EndStage { stage: () } => Ok(Request::EndStage),
        Line::Mark(m) => check_stage(&m.stage).map(|s| Request::Mark(s.to_string())),
        Line::Control { control, pid } => Ok(Request::Control { control, pid }),
        Line::Hello { hello } if hello == PROTOCOL_VERSION => Ok(Request::Hello),
        Line::Hello { hello } if hello > PROTOCOL_VERSION => Err(format!(
            "protocol version {hello} is not spoken here (this server speaks 1 and {PROTOCOL_VERSION}): send {{\"hello\":{PROTOCOL_VERSION}}}"
        )),
        Line::Hello { hello } => Err(format!(
            "protocol version {hello} has no hello: send {{\"hello\":{PROTOCOL_VERSION}}}"
        )),
        Line::Event { event } => event.check().map(Request::Event),
    }
}

/// True for a peer whose requests (or answers) are taken: our own user, or root.
pub(super) fn trusted(uid: u32) -> bool {
    uid == current_uid() || uid == 0
}

/// Parses a line sent by a peer of `uid`: a control request is refused unless that peer is
/// [`trusted`] (marks and events are checked against the job's members instead).
pub(super) fn parse_from(line: Vec<u8>, uid: u32) -> Result<Request, String> {
    match parse_line(line)? {
        Request::Control { .. } if !trusted(uid) => Err(format!(
            "uid {uid} may not control the jobs of uid {}",
            current_uid()
        )),
        request => Ok(request),
    }
}

/// Writes `answer` as its line: `ok`, `queued`, or `error: <why>`.
pub(super) fn write_answer(stream: &UnixStream, answer: &Answer) -> io::Result<()> {
    let mut out = stream;
    match answer {
        Answer::Done => out.write_all(b"ok\n"),
        Answer::Queued => out.write_all(b"queued\n"),
        Answer::Refused(why) => out.write_all(format!("error: {why}\n").as_bytes()),
    }
}
