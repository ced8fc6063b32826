//! Signals and user ids (Unix): `kill(2)`, `killpg(2)`, Linux pidfds, `sigaction(2)` (query
//! only) and `getuid(2)`. Job control (reaping, the terminal) is in [`super::jobctl`].
//!
//! Thin, checked wrappers; every safety rule lives in [`crate::enforce`], which sends through
//! [`SendSignal`] so that its rules can also be run against a process table of tests
//! (`crate::testdata`). [`Kernel`] is the real one.

use std::io;

use super::to_pid;

/// SIGTERM.
pub const SIGTERM: i32 = libc::SIGTERM;
/// SIGKILL.
pub const SIGKILL: i32 = libc::SIGKILL;
/// SIGINT.
pub const SIGINT: i32 = libc::SIGINT;
/// SIGHUP.
pub const SIGHUP: i32 = libc::SIGHUP;
/// SIGQUIT.
pub const SIGQUIT: i32 = libc::SIGQUIT;
/// SIGSTOP.
pub const SIGSTOP: i32 = libc::SIGSTOP;
/// SIGCONT.
pub const SIGCONT: i32 = libc::SIGCONT;
/// SIGTSTP.
pub const SIGTSTP: i32 = libc::SIGTSTP;
/// SIGTTIN (a background job read the terminal).
pub const SIGTTIN: i32 = libc::SIGTTIN;
/// SIGTTOU (a background job wrote to, or set, the terminal).
pub const SIGTTOU: i32 = libc::SIGTTOU;

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sends `signal` to one process. Pid 0 (our group) is refused here already.
pub fn send(pid: u32, signal: i32) -> io::Result<()> {
    let pid = to_pid(pid)?;
    // SAFETY: kill has no memory-safety preconditions; pid > 0 targets exactly one process.
    check(unsafe { libc::kill(pid, signal) })
}

/// Sends `signal` to `pid` only if `same()`, asked after the process is pinned, says it is
/// still the process meant. Returns `Ok(false)` when it is not (gone, or the pid recycled).
///
/// Linux: a pidfd is opened first, so the check and the signal name one process even if the
/// pid is recycled in between; elsewhere (or on kernels without pidfds) check, then `kill`.
pub fn send_if(pid: u32, signal: i32, same: impl FnOnce() -> bool) -> io::Result<bool> {
    #[cfg(target_os = "linux")]
    if let Some(pinned) = super::pidfd::Pinned::open(pid)? {
        if !same() {
            return Ok(false);
        }
        return pinned.send(signal);
    }
    if !same() {
        return Ok(false);
    }
    match send(pid, signal) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Where signals go: the kernel ([`Kernel`]), or a process table of tests.
pub trait SendSignal {
    /// [`send_if`]: sends `signal` to `pid` only if `same()`, asked once the process is
    /// pinned, says it is still the process meant; `Ok(false)` when it is not (or gone).
    fn send_if(&self, pid: u32, signal: i32, same: &mut dyn FnMut() -> bool) -> io::Result<bool>;
}

/// The kernel's signals.
#[derive(Debug, Clone, Copy, Default)]
pub struct Kernel;

impl SendSignal for Kernel {
    fn send_if(&self, pid: u32, signal: i32, same: &mut dyn FnMut() -> bool) -> io::Result<bool> {
        send_if(pid, signal, same)
    }
}

/// Sends `signal` to every process of group `pgid`. Group 0 (our own) is refused here.
pub fn send_group(pgid: u32, signal: i32) -> io::Result<()> {
    let pgid = to_pid(pgid)?;
    // SAFETY: killpg has no memory-safety preconditions; pgid > 0 names one group.
    check(unsafe { libc::killpg(pgid, signal) })
}

/// False only when no process has pid `pid` (`ESRCH`): another user's process (`EPERM`), one
/// a `/proc` mounted with `hidepid` hides, a zombie and a pid that names no single process
/// (0, or past `pid_t`) all count as there, so a caller that acts on a process's absence
/// never acts on a doubt.
pub fn pid_exists(pid: u32) -> bool {
    match send(pid, 0) {
        Ok(()) => true,
        Err(e) => e.raw_os_error() != Some(libc::ESRCH),
    }
}

/// True while any process (zombies included) is in group `pgid` (tests check that a stop
/// left no process behind).
#[cfg(test)]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_is_absent_only_when_no_process_has_it() {
        assert!(pid_exists(std::process::id()));
        assert!(pid_exists(1), "init: another user's or ours, it is there");
        assert!(pid_exists(0), "0 names no single process: a doubt");
        assert!(pid_exists(u32::MAX), "past pid_t: a doubt");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_exists(pid), "a reaped child is gone");
    }

    /// Our process group.
    fn current_pgid() -> u32 {
        // SAFETY: getpgrp has no preconditions and cannot fail.
        let pgid = unsafe { libc::getpgrp() };
        u32::try_from(pgid).unwrap_or(0)
    }

    #[test]
    fn refuses_pid_zero_and_negative() {
        assert!(send(0, 0).is_err());
        assert!(send_group(0, 0).is_err());
        assert!(send(u32::MAX, 0).is_err());
    }

    #[test]
    fn send_if_asks_before_signalling() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(
            !send_if(pid, SIGTERM, || false).unwrap(),
            "refused by the check"
        );
        assert!(child.try_wait().unwrap().is_none());
        assert!(send_if(pid, SIGTERM, || true).unwrap());
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(SIGTERM));
        assert!(!send_if(pid, SIGTERM, || true).unwrap_or(false));
    }

    #[test]
    fn probes_ourselves() {
        assert!(send(std::process::id(), 0).is_ok());
        assert!(group_exists(current_pgid()));
        assert!(!is_ignored(SIGTERM));
    }
}
