//! Signals and user ids: the only process-control calls into the OS (Unix).
//!
//! Thin, checked wrappers around `kill(2)`, `killpg(2)`, `sigaction(2)` (query only) and
//! `getuid(2)`. Every safety rule lives in [`crate::guard`]; these only report errors.

use std::io;

/// SIGTERM.
pub const SIGTERM: i32 = libc::SIGTERM;
/// SIGKILL.
pub const SIGKILL: i32 = libc::SIGKILL;
/// SIGINT.
pub const SIGINT: i32 = libc::SIGINT;
/// SIGHUP.
pub const SIGHUP: i32 = libc::SIGHUP;

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn to_pid(pid: u32) -> io::Result<libc::pid_t> {
    match libc::pid_t::try_from(pid) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(io::Error::from(io::ErrorKind::InvalidInput)),
    }
}

/// Sends `signal` to one process. Pid 0 (our group) is refused here already.
pub fn send(pid: u32, signal: i32) -> io::Result<()> {
    let pid = to_pid(pid)?;
    // SAFETY: kill has no memory-safety preconditions; pid > 0 targets exactly one process.
    check(unsafe { libc::kill(pid, signal) })
}

/// Sends `signal` to every process of group `pgid`. Group 0 (our own) is refused here.
pub fn send_group(pgid: u32, signal: i32) -> io::Result<()> {
    let pgid = to_pid(pgid)?;
    // SAFETY: killpg has no memory-safety preconditions; pgid > 0 names one group.
    check(unsafe { libc::killpg(pgid, signal) })
}

/// True while any process (zombies included) is in group `pgid`.
pub fn group_exists(pgid: u32) -> bool {
    match send_group(pgid, 0) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() != Some(libc::ESRCH),
    }
}

/// True when `signal` is ignored (`SIG_IGN`) in this process, as inherited at start.
pub fn is_ignored(signal: i32) -> bool {
    // SAFETY: sigaction with a null new action only reads the current disposition into
    // `old`, a zeroed, properly sized and aligned `sigaction` on our stack.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Our real user id.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Our process group.
pub fn current_pgid() -> u32 {
    // SAFETY: getpgrp has no preconditions and cannot fail.
    let pgid = unsafe { libc::getpgrp() };
    u32::try_from(pgid).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_pid_zero_and_negative() {
        assert!(send(0, 0).is_err());
        assert!(send_group(0, 0).is_err());
        assert!(send(u32::MAX, 0).is_err());
    }

    #[test]
    fn probes_ourselves() {
        assert!(send(std::process::id(), 0).is_ok());
        assert!(group_exists(current_pgid()));
        assert!(!is_ignored(SIGTERM));
    }
}
