//! Folders opened one step at a time by file descriptor: `openat` with `O_NOFOLLOW |
//! O_DIRECTORY` and `mkdirat` below a folder already open, so what is checked (owner, mode,
//! with `fstat` on the descriptor) is the very folder then used: no path is walked again in
//! between, and a link planted in a step is refused, never followed. The rules (whose folder,
//! which mode) are in `crate::paths`.

use std::ffi::{CString, OsStr};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Opens the folder at `path` (links in it followed: the folder above Headroom's own, which
/// the caller checks by its descriptor).
pub fn open_dir(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(path)
}

/// Opens the folder `name` in `parent`, never through a link: a link or anything else but a
/// folder (`ELOOP`, `ENOTDIR`: which one depends on the OS) is a
/// [`io::ErrorKind::NotADirectory`] error.
pub fn open_dir_at(parent: &File, name: &OsStr) -> io::Result<File> {
    let name = c_name(name)?;
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: `parent` is an open descriptor for the call's length and `name` a
    // NUL-terminated string that outlives it; openat takes no other pointer.
    let fd = unsafe { libc::openat(parent.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => io::ErrorKind::NotADirectory.into(),
            _ => e,
        });
    }
    // SAFETY: `fd` was just opened by us and is owned by nothing else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Makes the folder `name` in `parent` with `mode` (less the umask); an existing entry is
/// `AlreadyExists`.
pub fn make_dir_at(parent: &File, name: &OsStr, mode: u32) -> io::Result<()> {
    let name = c_name(name)?;
    let mode = libc::mode_t::try_from(mode).map_err(|_| io::ErrorKind::InvalidInput)?;
    // SAFETY: as in `open_dir_at`: an open descriptor and a NUL-terminated name.
    let rc = unsafe { libc::mkdirat(parent.as_raw_fd(), name.as_ptr(), mode) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One step's name: not empty, no `/`, not `.` or `..`, no NUL.
fn c_name(name: &OsStr) -> io::Result<CString> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.contains(&b'/') || bytes == b"." || bytes == b".." {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{}' is not one folder's name", name.to_string_lossy()),
        ));
    }
    CString::new(bytes).map_err(|_| io::ErrorKind::InvalidInput.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", tmp.path().join("link")).unwrap();
        let top = open_dir(tmp.path()).unwrap();
        assert!(open_dir_at(&top, OsStr::new("real")).is_ok());
        let err = open_dir_at(&top, OsStr::new("link")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory, "{err}");
        make_dir_at(&top, OsStr::new("made"), 0o700).unwrap();
        let again = make_dir_at(&top, OsStr::new("made"), 0o700).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert!(open_dir_at(&top, OsStr::new("..")).is_err());
        assert!(open_dir_at(&top, OsStr::new("a/b")).is_err());
    }
}
