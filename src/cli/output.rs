//! What the commands write for people and programs: prefixed lines on stderr, and `--json`
//! on stdout (a reader that closed the pipe early is no error).

use std::io::Write;

use serde::Serialize;

/// A line on stderr, prefixed; the error when stderr cannot take it (a closed pipe). It is
/// written whole, in one write (stderr is unbuffered: `writeln!` would write the prefix, the
/// text and the newline apart, and a job's own line written meanwhile on the same terminal
/// or pipe would land inside ours).
pub fn write_line(line: &str) -> std::io::Result<()> {
    let whole = format!("headroom: {line}\n");
    std::io::stderr().lock().write_all(whole.as_bytes())
}

/// A line on stderr, prefixed (a closed stderr loses it, nothing else).
pub fn say(line: &str) {
    let _ = write_line(line);
}

/// `--json` output. A reader that closed the pipe early (`| head -1`) is not an error: the
/// command still exits with the job's own code.
pub fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer_pretty(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
