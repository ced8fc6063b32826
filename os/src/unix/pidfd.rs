//! Linux pidfds (`pidfd_open(2)`, 5.3 and later): a descriptor that names one process for
//! as long as it is open, even after its pid is reused. A signal sent through one reaches
//! that process or none ([`super::signals::send_if`]); one `poll(2)` over several tells
//! which of them have exited ([`super::exits`]), without reading `/proc`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A pidfd: names one process for as long as it is open, even after the pid is reused.
#[derive(Debug)]
pub struct Pinned(OwnedFd);

impl Pinned {
    /// `pidfd_open(pid)`: `Ok(None)` when the kernel has no pidfds (before 5.3) or the
    /// process is already gone (then the caller's identity check fails too). The descriptor
    /// is close-on-exec (the kernel's default for pidfds).
    pub fn open(pid: u32) -> io::Result<Option<Pinned>> {
        let pid = super::to_pid(pid)?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new file descriptor or -1;
        // no memory is passed.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOSYS | libc::ESRCH | libc::EINVAL) => Ok(None),
                _ => Err(e),
            };
        }
        let fd = i32::try_from(fd).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
        // SAFETY: `fd` was just returned by pidfd_open and is owned by nobody else.
        Ok(Some(Pinned(unsafe { OwnedFd::from_raw_fd(fd) })))
    }

    /// `pidfd_send_signal`; `Ok(false)` when the process has exited meanwhile.
    pub fn send(&self, signal: i32) -> io::Result<bool> {
        // SAFETY: a valid pidfd, a signal number, a null siginfo (the kernel fills it in as
        // for kill) and no flags.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.0.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if rc == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            Ok(false)
        } else {
            Err(e)
        }
    }

    /// What `poll(2)` is asked of this pidfd: readable once the process has exited (a
    /// zombie not yet reaped included).
    pub fn poll_exit(&self) -> libc::pollfd {
        libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }
    }
}

/// Polls `fds` without waiting: true when any of them is ready (its process has exited) or
/// the poll itself failed (the caller then looks the slow way).
pub fn any_ready(fds: &mut [libc::pollfd]) -> bool {
    if fds.is_empty() {
        return false;
    }
    let Ok(count) = libc::nfds_t::try_from(fds.len()) else {
        return true;
    };
    // SAFETY: `fds` is a live, exclusively borrowed slice of `count` pollfd structs that the
    // kernel writes `revents` into; a zero timeout returns at once.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), count, 0) };
    ready != 0
}
