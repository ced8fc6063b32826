//! Files read at every check, kept open and read again from offset 0 (`pread`).
//!
//! The kernel writes a `/proc` or cgroup file's text anew at each read from its start, so a
//! file kept open answers as a fresh open would, without the path walk, the open and the
//! close: most of what a guard's check cost (`docs/benchmarks.md`, "Guard CPU against a bare
//! timer"). Only files of the kernel's own file systems are kept (procfs, sysfs, cgroupfs,
//! asked once with `fstatfs`): a fixture on disk is opened afresh at each read, so a file
//! replaced under its name is seen. Never kept: a cgroup v1 `cgroup.procs` or `tasks`, whose
//! open file keeps reusing the pid list it made (`cgroup_pidlist_start`), so that a process
//! that joined since would not be listed. A read that fails on a kept file is tried once more
//! on a fresh open: the process whose `/proc/PID` it was has gone, and its number may name a
//! new process now (a kept `/proc/PID` file stays with the process it was opened for: it
//! answers `ESRCH` once that one is reaped, never another's numbers). At most [`KEPT_MAX`]
//! files (fewer under a low limit on open files: `crate::counters::limits`; all are let go when
//! an open fails for want of descriptors) are kept for the whole process: when that many are, they are all let go and the
//! keeping starts again (the files of processes gone that nobody read again go with them).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::counters::limits::{out_of_descriptors, spare_descriptors};

/// Files kept open (and paths found not to be kept) at most: a guard's checks read about 20
/// (the system's files, its cgroup's, three for each member of a small job).
pub const KEPT_MAX: usize = 128;

/// The files kept, and the paths found not to be kept (not asked again), each with whether
/// it is a file of the kernel's (a v1 `cgroup.procs`) or on disk.
#[derive(Default)]
struct Kept {
    files: HashMap<PathBuf, Arc<File>>,
    not: HashMap<PathBuf, bool>,
}

static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

/// Reads `path` whole into `buf` (grown as needed) from a kept file where there is one, else
/// from a fresh open (kept from then on when it may be); returns the length read.
pub fn read(path: &Path, buf: &mut Vec<u8>) -> io::Result<usize> {
    if let Some(file) = kept(path) {
        match read_at_start(&file, buf, true) {
            Ok(len) => return Ok(len),
            Err(_) => forget(path),
        }
    }
    let file = match File::open(path) {
        // Out of descriptors: the kept ones are let go (they are only for speed), once.
        Err(e) if out_of_descriptors(&e) => {
            with_kept(|kept| kept.files.clear());
            File::open(path)?
        }
        opened => opened?,
    };
    let (file, kernel) = keep(path, file);
    read_at_start(&file, buf, kernel)
}

fn with_kept<T>(f: impl FnOnce(&mut Kept) -> T) -> T {
    let mut kept = KEPT.lock().unwrap_or_else(PoisonError::into_inner);
    f(kept.get_or_insert_with(Kept::default))
}

fn kept(path: &Path) -> Option<Arc<File>> {
    with_kept(|kept| kept.files.get(path).cloned())
}

fn forget(path: &Path) {
    with_kept(|kept| kept.files.remove(path));
}

/// Keeps `file`, opened at `path`, when it may be kept; hands it back, and whether it is a
/// file of the kernel's.
fn keep(path: &Path, file: File) -> (Arc<File>, bool) {
    let file = Arc::new(file);
    if let Some(kernel) = with_kept(|kept| kept.not.get(path).copied()) {
        return (file, kernel);
    }
    let (may, kernel) = may_keep(&file, path);
    // Under a low limit on open files, fewer (`limits::spare_descriptors`: half the spare,
    // the other half is the exit watches').
    let most = KEPT_MAX.min(spare_descriptors() / 2);
    with_kept(|kept| {
        if kept.files.len() + kept.not.len() >= most.max(1) {
            kept.files.clear();
            kept.not.clear();
        }
        if may && most > 0 {
            kept.files.insert(path.to_path_buf(), Arc::clone(&file));
        } else {
            kept.not.insert(path.to_path_buf(), kernel);
        }
    });
    (file, kernel)
}

/// A read of a file of the kernel's (a `seq_file`) that returns this much or less has
/// reached its end: a `seq_file` read stops short of what was asked for only at the end of
/// its text or when its page-sized buffer is full (the next line would not fit), and no
/// line of the files read here comes near this length. The read of 0 bytes that would say
/// so is saved.
const KERNEL_SHORT_READ: usize = 2048;

/// Reads `file` from offset 0 to its end into `buf`; short reads go on (a `seq_file` such
/// as `children` hands out one page per read), but for a file of the `kernel`'s one short of
/// [`KERNEL_SHORT_READ`] is its end.
fn read_at_start(file: &File, buf: &mut Vec<u8>, kernel: bool) -> io::Result<usize> {
    let mut len = 0;
    loop {
        if buf.len() < len + 4096 {
            buf.resize(len + 16 * 1024, 0);
        }
        match file.read_at(&mut buf[len..], len as u64) {
            Ok(0) => return Ok(len),
            Ok(n) if kernel && len == 0 && n <= KERNEL_SHORT_READ => return Ok(n),
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// `statfs` magic numbers (`linux/magic.h`).
const PROC_SUPER_MAGIC: i64 = 0x9fa0;
const SYSFS_MAGIC: i64 = 0x6265_6572;
const CGROUP_SUPER_MAGIC: i64 = 0x0027_e0eb;
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

/// Whether `file`, opened at `path`, may be kept (see the module docs), and whether it is a
/// file of the kernel's own file systems at all.
fn may_keep(file: &File, path: &Path) -> (bool, bool) {
    // SAFETY: an all-zero `statfs` is a valid value of this plain C struct.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the call's duration; `fs` is a valid, writable
    // `statfs` the kernel fills.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) } != 0 {
        return (false, false);
    }
    #[allow(clippy::unnecessary_cast)] // `f_type`'s width differs between libcs
    match fs.f_type as i64 {
        PROC_SUPER_MAGIC | SYSFS_MAGIC | CGROUP2_SUPER_MAGIC => (true, true),
        CGROUP_SUPER_MAGIC => {
            let pid_list = path
                .file_name()
                .is_some_and(|name| name == "cgroup.procs" || name == "tasks");
            (!pid_list, true)
        }
        _ => (false, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(path: &Path) -> String {
        let mut buf = Vec::new();
        let len = read(path, &mut buf).unwrap();
        String::from_utf8_lossy(&buf[..len]).into_owned()
    }

    #[test]
    fn a_kept_proc_file_reads_fresh_and_a_file_on_disk_is_never_kept() {
        // This process's scheduler figures move as it runs: a kept file must give the text
        // of now, not of the first read.
        let path = PathBuf::from("/proc/self/sched");
        let first = text(&path);
        assert!(kept(&path).is_some(), "a /proc file is kept");
        let mut spin = 0u64;
        for i in 0..5_000_000u64 {
            spin = spin.wrapping_add(i * i);
        }
        assert!(spin > 0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_ne!(text(&path), first, "the kept file answered the old text");

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("meminfo");
        std::fs::write(&file, "one").unwrap();
        assert_eq!(text(&file), "one");
        assert!(kept(&file).is_none(), "a file on disk is never kept");
        assert_eq!(with_kept(|kept| kept.not.get(&file).copied()), Some(false));
        // Replaced under its name: the new file is read.
        let other = dir.path().join("new");
        std::fs::write(&other, "two").unwrap();
        std::fs::rename(&other, &file).unwrap();
        assert_eq!(text(&file), "two");
    }

    #[test]
    fn a_kept_file_of_a_process_gone_is_read_afresh() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let path = PathBuf::from(format!("/proc/{}/stat", child.id()));
        assert!(text(&path).contains("(sleep)"));
        assert!(kept(&path).is_some());
        child.kill().unwrap();
        child.wait().unwrap();
        let mut buf = Vec::new();
        let err = read(&path, &mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
        assert!(
            kept(&path).is_none(),
            "the file of a reaped process is let go"
        );
    }
}
