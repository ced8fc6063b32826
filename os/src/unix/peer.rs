//! Who is on the other end of a Unix socket: the kernel's word for the peer's pid (Linux
//! `SO_PEERCRED`, macOS `LOCAL_PEERPID`), so a stage mark is taken only from a process of the
//! job it marks, by construction rather than by trusting what the client says; and for the
//! peer's user (Linux `SO_PEERCRED`, macOS and the BSDs `getpeereid`), so a client talks
//! only to a server of its own user (or root's) and a server takes requests only from one.
//!
//! The two differ: Linux gives the pid that called `connect` (fixed at connect); macOS gives
//! the last process that used the peer's socket (`so_last_pid`, `bsd/kern/uipc_usrreq.c`),
//! so a socket passed to another process, or shared after `fork`, names whoever sent last.
//! Either way it is a process that holds the connection, and the marks server asks right
//! after reading the request, so the pid is the sender's.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

/// The pid of the peer of `stream`: Linux, the process that connected it; macOS, the last
/// process that used the peer's socket (see the module docs).
pub fn peer_pid(stream: &UnixStream) -> io::Result<u32> {
    let pid = raw_peer_pid(stream.as_raw_fd())?;
    u32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidData))
}

/// The uid of the peer of `stream` (the user of the process that connected it, or that
/// listens on it): fixed when the connection was made.
pub fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    raw_peer_uid(stream.as_raw_fd())
}

/// Linux: `SO_PEERCRED`.
#[cfg(target_os = "linux")]
fn raw_peer_uid(fd: RawFd) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    socket_option(fd, libc::SOL_SOCKET, libc::SO_PEERCRED, &mut cred)?;
    Ok(cred.uid)
}

/// macOS and FreeBSD: `getpeereid` (the effective uid the peer had when it connected or
/// listened).
#[cfg(any(target_os = "macos", target_os = "freebsd"))]
fn raw_peer_uid(fd: RawFd) -> io::Result<u32> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: both out-pointers are valid for writes of their types during the call.
    let rc = unsafe { libc::getpeereid(fd, &mut uid, &mut gid) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(uid)
}

/// Other Unixes: unknown, so no peer is ever trusted.
#[cfg(not(any(target_os = "linux", target_os = "macos", target_os = "freebsd")))]
fn raw_peer_uid(_fd: RawFd) -> io::Result<u32> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Linux: `SO_PEERCRED`.
#[cfg(target_os = "linux")]
fn raw_peer_pid(fd: RawFd) -> io::Result<libc::pid_t> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    socket_option(fd, libc::SOL_SOCKET, libc::SO_PEERCRED, &mut cred)?;
    Ok(cred.pid)
}

/// macOS: `LOCAL_PEERPID`, the last process that used the peer's socket.
#[cfg(target_os = "macos")]
fn raw_peer_pid(fd: RawFd) -> io::Result<libc::pid_t> {
    let mut pid: libc::pid_t = 0;
    socket_option(fd, libc::SOL_LOCAL, libc::LOCAL_PEERPID, &mut pid)?;
    Ok(pid)
}

/// `getsockopt(fd, level, name)` into `value`, a plain C value the kernel fills.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn socket_option<T: Copy>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &mut T,
) -> io::Result<()> {
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is writable for `len` bytes; the kernel writes at most that.
    let rc =
        unsafe { libc::getsockopt(fd, level, name, std::ptr::from_mut(value).cast(), &mut len) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Other Unixes: unknown, so no mark or control request is ever taken from a peer.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn raw_peer_pid(_fd: RawFd) -> io::Result<libc::pid_t> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
mod tests {
    use super::*;

    #[test]
    fn the_peer_of_our_own_pair_is_us() {
        let (a, _b) = UnixStream::pair().unwrap();
        assert_eq!(peer_pid(&a).unwrap(), std::process::id());
        assert_eq!(peer_uid(&a).unwrap(), crate::unix::signals::current_uid());
    }
}
