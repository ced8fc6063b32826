//! Reading `/proc` and cgroup files into the thread's one buffer: plain (a file read once,
//! or one of many processes'), or kept open for a file read at every check ([`kept`]).

use std::cell::RefCell;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::kept;
use crate::counters::Result;
use crate::error::CounterError;

thread_local! {
    /// One read buffer per thread, reused by every file read.
    static BUF: RefCell<Vec<u8>> = RefCell::new(vec![0; 16 * 1024]);
    /// One path per thread, where the path of a file read at every check is put together
    /// (no allocation once it is long enough).
    static PATH: RefCell<PathBuf> = RefCell::new(PathBuf::with_capacity(256));
}

/// Runs `f` on `base` joined with each of `parts`, put together in the thread's path.
pub(super) fn at_path<T>(base: &Path, parts: &[&str], f: impl FnOnce(&Path) -> T) -> T {
    PATH.with(|cell| {
        let mut path = cell.borrow_mut();
        path.as_mut_os_string().clear();
        path.push(base);
        for part in parts {
            path.push(part);
        }
        f(&path)
    })
}

/// `pid` in decimal, written into `buf` (no allocation).
pub(super) fn pid_text(pid: u32, buf: &mut [u8; 10]) -> &str {
    let (mut n, mut at) = (pid, buf.len());
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[at..]).unwrap_or("0")
}

/// Reads `path` whole into the thread's buffer and runs `f` on its bytes.
///
/// Reads until `read` returns 0: a short read is not the end. `seq_file`s such as
/// `/proc/PID/task/TID/children` hand out at most one page per `read`, so a process with
/// ~700 children or more would otherwise be cut at the first page.
pub(super) fn with_file<T>(
    path: &Path,
    pid: Option<u32>,
    f: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        let io_err = |e| CounterError::from_io(e, path.display().to_string(), pid);
        let mut file = File::open(path).map_err(io_err)?;
        let len = read_to_end(&mut file, &mut buf).map_err(io_err)?;
        f(&buf[..len])
    })
}

/// [`with_file`] for a file read at every check: kept open where it may be (see [`kept`]).
pub(super) fn with_kept_file<T>(
    path: &Path,
    pid: Option<u32>,
    f: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        let len = kept::read(path, &mut buf)
            .map_err(|e| CounterError::from_io(e, path.display().to_string(), pid))?;
        f(&buf[..len])
    })
}

/// `f` on the text of `dir/file`, a file read at every check (a cgroup's), kept open where
/// it may be.
pub(super) fn with_kept_text<T>(
    dir: &Path,
    file: &str,
    f: impl FnOnce(&str) -> T,
) -> std::io::Result<T> {
    at_path(dir, &[file], |path| {
        BUF.with(|cell| {
            let mut buf = cell.borrow_mut();
            let len = kept::read(path, &mut buf)?;
            Ok(f(&String::from_utf8_lossy(&buf[..len])))
        })
    })
}

/// Reads `reader` to its real end (a read of 0 bytes) into `buf`, growing it as needed;
/// returns the length read. Short reads go on.
pub(super) fn read_to_end(reader: &mut impl Read, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut len = 0;
    loop {
        if buf.len() < len + 4096 {
            buf.resize(len + 16 * 1024, 0);
        }
        match reader.read(&mut buf[len..]) {
            Ok(0) => return Ok(len),
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
