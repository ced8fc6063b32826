//! Opening an output file that may be a FIFO (`--trace /tmp/pipe`) without blocking: `open`
//! of a FIFO with no reader waits for one, deaf to the driver's signals. A FIFO is opened
//! non-blocking first (no reader: an error that says so at once), then set back to
//! blocking writes; anything else is created as usual.

use std::fs::{File, OpenOptions};
use std::io;
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
