//! Other local users, for the tests that run as root: a uid (no account needed: `setpriv`
//! takes any), the `headroom` under test copied where that user may run it, and a home of
//! its own (owned by it, private), with nothing of root's environment pointing elsewhere.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::headroom_bin;

/// `nobody`'s uid (and gid).
pub const NOBODY: u32 = 65534;

/// True when tests that need root (`needs`: what for) can run; otherwise says it skips
/// them, and in CI (`CI` set), where they must run, fails.
pub fn root(needs: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "these tests need root ({needs}), and CI must run them"
    );
    eprintln!("SKIPPED: these tests need root ({needs}); run as root to include them");
    false
}

/// A user the test acts as.
pub struct User {
    /// Its uid (its gid is the same number).
    pub uid: u32,
    /// Its home: owned by it, 0700.
    pub home: PathBuf,
    /// The `headroom` binary it runs (the build's is under root's folders).
    pub bin: PathBuf,
    _dir: tempfile::TempDir,
}

impl User {
    /// `uid`, with a copy of the binary and a home of its own.
    pub fn new(uid: u32) -> User {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("headroom");
        std::fs::copy(headroom_bin(), &bin).unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir(&home).unwrap();
        for (path, mode) in [
            (dir.path(), 0o755),
            (home.as_path(), 0o700),
            (bin.as_path(), 0o755),
        ] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        std::os::unix::fs::chown(&home, Some(uid), Some(uid)).unwrap();
        User {
            uid,
            home,
            bin,
            _dir: dir,
        }
    }

    /// `program` as this user: its uid, gid and no other group, `HOME` its home, and none of
    /// the variables that move Headroom's folders (`HEADROOM_HOME`, `XDG_*`): its folders
    /// are the platform's under its home, its sockets in `/tmp/headroom-UID/run`.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("setpriv");
        cmd.arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.uid))
            .arg("--clear-groups")
            .arg(program)
            .env("HOME", &self.home)
            .env("PATH", "/usr/bin:/bin")
            .env("HEADROOM_JOB_CGROUP", "off");
        for var in [
            "HEADROOM_HOME",
            "XDG_RUNTIME_DIR",
            "XDG_DATA_HOME",
            "XDG_STATE_HOME",
            "XDG_CONFIG_HOME",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// `headroom ARGS` as this user.
    pub fn headroom(&self, args: &[&str]) -> Command {
        let mut cmd = self.command(&self.bin);
        cmd.args(args);
        cmd
    }

    /// The per-user folder its run folder is in without `XDG_RUNTIME_DIR`.
    pub fn tmp_dir(&self) -> PathBuf {
        Path::new("/tmp").join(format!("headroom-{}", self.uid))
    }
}
