//! Opening an output file that may be a FIFO (`--trace /tmp/pipe`) without blocking: `open`
//! of a FIFO with no reader waits for one, deaf to the driver's signals. A FIFO is opened
//! non-blocking first (no reader: an error that says so at once), then set back to
//! blocking writes; anything else is created as usual. And reading a file of Headroom's own
//! folders, which must be a regular file: opened non-blocking, then checked with `fstat`, so
//! a FIFO (or a device) planted there, or a link to one, is an error at once, never a wait
//! for a writer.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Creates (or truncates) `path` for writing; a FIFO must have a reader now.
pub fn create_for_writing(path: &Path) -> io::Result<File> {
    let fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    if !fifo {
        return File::create(path);
    }
    let file = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ENXIO) {
                io::Error::new(
                    io::ErrorKind::NotConnected,
                    "it is a FIFO and no process reads it (start the reader first)",
                )
            } else {
                e
            }
        })?;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on an fd we own; F_GETFL takes no argument, F_SETFL an int.
    let rc = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            flags
        } else {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK)
        }
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// The whole of `path`, which must be a regular file (a link to one is fine; a FIFO or a
/// device is not): anything else is an `InvalidData` error at once.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a.json");
        std::fs::write(&file, b"{}").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"{}");
        let fifo = tmp.path().join("f.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = read_regular(&fifo).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        let link = tmp.path().join("l.json");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(
            read_regular(&link).is_err(),
            "a link to a FIFO is no file either"
        );
    }
}
