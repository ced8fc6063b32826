//! Typed errors at the OS boundary.
//!
//! Every counter reader returns one of these and never panics. `Gone` is what a process that
//! vanished mid-scan gives; scans skip it.

use std::io;

/// An error reading memory counters or process information from the OS.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CounterError {
    /// The OS refused access (another user's process, a sandbox, a missing privilege).
    #[error("permission denied reading {what}")]
    PermissionDenied {
        /// What was being read, e.g. `/proc/42/status` or `proc_pid_rusage(42)`.
        what: String,
    },
    /// The process does not exist (any more).
    #[error("process {pid} is gone")]
    Gone {
        /// The pid that vanished.
        pid: u32,
    },
    /// This counter does not exist on this OS or kernel.
    #[error("{what} is not supported on this system")]
    Unsupported {
        /// The counter that is missing.
        what: String,
    },
    /// Any other I/O or system-call failure.
    #[error("reading {what}: {source}")]
    Io {
        /// What was being read.
        what: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The id names a thread of another process, not a process (Linux: `Tgid` ≠ pid).
    #[error("{pid} is a thread of process {tgid}, not a process")]
    NotAProcess {
        /// The id that was given.
        pid: u32,
        /// The process the thread belongs to.
        tgid: u32,
    },
    /// The OS answered with something we could not understand.
    #[error("cannot parse {what}: {detail}")]
    Parse {
        /// What was being parsed, e.g. `/proc/meminfo`.
        what: String,
        /// What was wrong with it.
        detail: String,
    },
}

impl CounterError {
    /// Maps an `io::Error` for `what` (belonging to `pid`, if any) to the matching variant.
    pub fn from_io(err: io::Error, what: impl Into<String>, pid: Option<u32>) -> Self {
        match (err.kind(), pid) {
            (io::ErrorKind::NotFound, Some(pid)) => CounterError::Gone { pid },
            (io::ErrorKind::PermissionDenied, _) => {
                CounterError::PermissionDenied { what: what.into() }
            }
            _ if err.raw_os_error() == Some(libc_esrch()) && pid.is_some() => CounterError::Gone {
                pid: pid.unwrap_or_default(),
            },
            (io::ErrorKind::NotFound, None) => CounterError::Unsupported { what: what.into() },
            _ => CounterError::Io {
                what: what.into(),
                source: err,
            },
        }
    }

    /// True when the error means the process no longer exists.
    pub fn is_gone(&self) -> bool {
        matches!(self, CounterError::Gone { .. })
    }
}

#[cfg(unix)]
fn libc_esrch() -> i32 {
    libc::ESRCH
}

#[cfg(not(unix))]
fn libc_esrch() -> i32 {
    3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_with_pid_is_gone() {
        let e = CounterError::from_io(io::Error::from(io::ErrorKind::NotFound), "x", Some(7));
        assert!(e.is_gone());
        let e = CounterError::from_io(io::Error::from(io::ErrorKind::NotFound), "x", None);
        assert!(matches!(e, CounterError::Unsupported { .. }));
        let e = CounterError::from_io(
            io::Error::from(io::ErrorKind::PermissionDenied),
            "x",
            Some(7),
        );
        assert!(matches!(e, CounterError::PermissionDenied { .. }));
    }
}
