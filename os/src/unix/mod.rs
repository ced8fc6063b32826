//! The OS boundary for acting on processes (Unix): signals, job control, exit watches (Linux
//! pidfds), socket peers, the host name, opening an output that may be a FIFO, and folders
//! opened step by step by descriptor.
//!
//! Thin, checked wrappers that only report errors; every safety rule (identity re-checks,
//! never pid 0/1, ourselves or another user's process) lives in [`crate::enforce`]. Memory
//! numbers come from [`crate::counters`]; together the two folders are the only code that
//! calls into the OS (tests excepted).

#[cfg(target_os = "linux")]
pub mod cgroup;
pub mod exits;
pub mod fifo;
pub mod folder;
pub mod host;
pub mod jobctl;
pub mod peer;
#[cfg(target_os = "linux")]
pub mod pidfd;
pub mod pressure;
pub mod signals;
pub mod volume;

/// `pid` as the kernel's type; pid 0 (our own group, to `kill`) and pids past its range are
/// refused.
fn to_pid(pid: u32) -> std::io::Result<libc::pid_t> {
    match libc::pid_t::try_from(pid) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(std::io::Error::from(std::io::ErrorKind::InvalidInput)),
    }
}
