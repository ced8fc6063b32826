//! Whether a path is on a read-only volume (`statvfs(3)`, `ST_RDONLY`): what tells a mounted
//! disk image (read-only) from an app on an external drive (a real install) on a Mac.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// True when `path` lies on a volume mounted read-only.
pub fn is_read_only(path: &Path) -> io::Result<bool> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    // SAFETY: an all-zero `statvfs` is a valid value of the plain C struct.
    let mut info: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c_path` is a NUL-terminated string that outlives the call; `info` is a
    // writable `statvfs` the call fills.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), &mut info) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info.f_flag & libc::ST_RDONLY != 0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is a failed test

    #[test]
    fn a_writable_folder_is_not_read_only_and_a_read_only_mount_is() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!super::is_read_only(dir.path()).unwrap());
        assert!(super::is_read_only(&dir.path().join("missing")).is_err());
        // A real read-only mount (root only: CI runs as root).
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipping the read-only mount: it needs root");
            return;
        }
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(mounted.success(), "mount a read-only tmpfs");
        let read_only = super::is_read_only(dir.path());
        let unmounted = std::process::Command::new("umount")
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(read_only.unwrap(), "a read-only tmpfs");
        assert!(unmounted.success());
    }
}
