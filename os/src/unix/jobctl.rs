//! Job control (Unix): reaping the command Headroom started and the orphans it adopts, and
//! handing the terminal's foreground to the job, so a guarded command behaves in a terminal
//! as if it ran directly (Ctrl-C, Ctrl-\, Ctrl-Z and `fg` act on the job; it can read input).
//!
//! Thin wrappers around `prctl(PR_SET_CHILD_SUBREAPER)`, `waitpid(2)`, `tcgetpgrp(3)`,
//! `tcsetpgrp(3)`, `tcgetattr(3)`/`tcsetattr(3)`; decisions live in the job engine.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

/// What `waitpid` said about one child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildStatus {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
    /// A signal stopped it (Ctrl-Z, SIGSTOP, SIGTTIN).
    Stopped(i32),
}

/// Makes this process the reaper of its orphaned descendants (Linux
/// `PR_SET_CHILD_SUBREAPER`): a worker that double-forks or calls `setsid()` is re-parented
/// to us instead of to init, so it stays findable as our descendant. False where the OS has
/// no such thing (macOS: members are then remembered by identity alone).
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument; no memory.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Reaps one child that changed state, without blocking: exited, killed, or stopped.
/// `Ok(None)` when none did (or there are no children).
pub fn reap_any() -> io::Result<Option<(u32, ChildStatus)>> {
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid writes one int to `status`, a valid local; WNOHANG never blocks.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG | libc::WUNTRACED) };
    if pid == 0 {
        return Ok(None);
    }
    if pid < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ECHILD) => Ok(None),
            Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    let what = if libc::WIFEXITED(status) {
        ChildStatus::Exited(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        ChildStatus::Signaled(libc::WTERMSIG(status))
    } else if libc::WIFSTOPPED(status) {
        ChildStatus::Stopped(libc::WSTOPSIG(status))
    } else {
        return Ok(None);
    };
    Ok(Some((u32::try_from(pid).unwrap_or(0), what)))
}

/// The controlling terminal on standard input, while this process group has its foreground.
/// Clones share which group is the job's ([`Terminal::give_to_job`]).
#[derive(Debug, Clone)]
pub struct Terminal {
    fd: RawFd,
    our_pgid: libc::pid_t,
    saved: Option<libc::termios>,
    /// The job's process group while it may have the foreground (its leader lives); 0 after.
    job: Arc<AtomicI32>,
}

impl Terminal {
    /// The terminal on stdin if our process group is in its foreground, else `None` (not a
    /// terminal, or started in the background with `&`).
    pub fn foreground() -> Option<Terminal> {
        let fd: RawFd = libc::STDIN_FILENO;
        // SAFETY: isatty, tcgetpgrp and getpgrp take an fd or nothing; no memory.
        let (tty, fg, ours) = unsafe { (libc::isatty(fd), libc::tcgetpgrp(fd), libc::getpgrp()) };
        if tty != 1 || fg != ours {
            return None;
        }
        // SAFETY: termios is plain C data; tcgetattr fills it on success.
        let mut attrs: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `attrs` is a valid, writable termios.
        let saved = (unsafe { libc::tcgetattr(fd, &mut attrs) } == 0).then_some(attrs);
        Some(Terminal {
            fd,
            our_pgid: ours,
            saved,
            job: Arc::new(AtomicI32::new(0)),
        })
    }

    /// Makes `cmd`'s child take the terminal's foreground for its own process group (set
    /// with `Command::process_group(0)`) before it runs; the parent does the same after the
    /// spawn, as a shell does, so the command never reads from the background.
    pub fn hand_over_at_spawn(&self, cmd: &mut Command) {
        let fd = self.fd;
        // SAFETY: the closure runs in the forked child before exec and calls only
        // async-signal-safe functions (signal, getpid, tcsetpgrp), allocating nothing.
        unsafe {
            cmd.pre_exec(move || {
                let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(fd, libc::getpid());
                libc::signal(libc::SIGTTOU, old);
                Ok(())
            });
        }
    }

    /// Gives the foreground to group `pgid`, the job's (its leader's), from now on the group
    /// [`Terminal::give_to_job`] gives it to.
    pub fn give_to(&self, pgid: u32) -> io::Result<()> {
        let pgid = libc::pid_t::try_from(pgid).map_err(|_| io::ErrorKind::InvalidInput)?;
        self.job.store(pgid, Ordering::SeqCst);
        self.set_foreground(pgid)
    }

    /// Gives the foreground back to the job's group, while there is one; after
    /// [`Terminal::keep`] it stays ours.
    pub fn give_to_job(&self) -> io::Result<()> {
        match self.job.load(Ordering::SeqCst) {
            0 => Ok(()),
            pgid => self.set_foreground(pgid),
        }
    }

    /// Takes the foreground back for good (the job's leader has exited: the keys are the
    /// driver's now, which sends them on to every member).
    pub fn keep(&self) -> io::Result<()> {
        self.job.store(0, Ordering::SeqCst);
        self.take_back()
    }

    /// Takes the foreground back for our own group.
    pub fn take_back(&self) -> io::Result<()> {
        self.set_foreground(self.our_pgid)
    }

    /// True while our own group has the foreground (after `fg`; false after `bg`).
    pub fn ours(&self) -> bool {
        // SAFETY: tcgetpgrp takes an fd; no memory.
        unsafe { libc::tcgetpgrp(self.fd) == self.our_pgid }
    }

    /// Restores the terminal settings saved at start (a job may leave it in raw mode).
    pub fn restore_settings(&self) {
        if let Some(attrs) = &self.saved {
            // SAFETY: `attrs` is the termios tcgetattr filled at start.
            unsafe { libc::tcsetattr(self.fd, libc::TCSADRAIN, attrs) };
        }
    }

    fn set_foreground(&self, pgid: libc::pid_t) -> io::Result<()> {
        // A background group calling tcsetpgrp gets SIGTTOU unless it is ignored: ignore it
        // for the call, then put the old disposition back.
        // SAFETY: signal and tcsetpgrp take integers; the old handler is restored unchanged.
        let rc = unsafe {
            let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            let rc = libc::tcsetpgrp(self.fd, pgid);
            libc::signal(libc::SIGTTOU, old);
            rc
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Stops this process with SIGSTOP, which nothing catches and the kernel never discards (a
/// SIGTSTP is, in an orphaned process group: a guard started from a script that has exited,
/// or by a service); returns once it is continued (SIGCONT).
pub fn stop_self() {
    // SAFETY: raise takes a signal number and sends it to this thread; SIGSTOP stops the
    // whole process.
    unsafe {
        libc::raise(libc::SIGSTOP);
    }
}

/// Stops this process as Ctrl-Z would (SIGTSTP, its default action for the time of it,
/// whatever handler catches it); returns once it is continued (`fg`, `bg`). In an orphaned
/// process group the kernel discards the signal and this returns at once.
pub fn suspend_self() {
    // SAFETY: sigaction reads and writes the two sigaction structs, locals here (zeroed is a
    // valid sigaction: no handler, an empty mask, no flags); raise takes a signal number.
    // The handler in place before is put back once we are continued.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        let mut old: libc::sigaction = std::mem::zeroed();
        let swapped = libc::sigaction(libc::SIGTSTP, &default, &mut old) == 0;
        libc::raise(libc::SIGTSTP);
        if swapped {
            libc::sigaction(libc::SIGTSTP, &old, std::ptr::null_mut());
        }
    }
}
