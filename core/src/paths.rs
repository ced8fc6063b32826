//! Where Headroom keeps its files, and how it writes them safely.
//!
//! The folders come from [`directories::ProjectDirs`] (qualifier `app`, organisation
//! `Headroom`, application `Headroom`):
//!
//! | folder | macOS | Linux |
//! |---|---|---|
//! | [`Dirs::data_dir`] (SQLite history) | `~/Library/Application Support/app.Headroom.Headroom` | `$XDG_DATA_HOME/headroom` |
//! | [`Dirs::config_dir`] (`settings.toml`) | `~/Library/Application Support/app.Headroom.Headroom` | `$XDG_CONFIG_HOME/headroom` |
//! | [`Dirs::state_dir`] (job files) | the data dir | `$XDG_STATE_HOME/headroom` |
//!
//! When the environment variable [`HOME_ENV`] (`HEADROOM_HOME`) is set and not empty,
//! everything lives under it instead: `$HEADROOM_HOME/data`, `$HEADROOM_HOME/config` and
//! `$HEADROOM_HOME/state`, so tests and the app's end-to-end tests can isolate themselves.
//! If no home directory can be found at all (a service account without `$HOME`), the folders
//! fall back to `<temp dir>/headroom-<uid>/{data,config,state}`: Headroom still works, but
//! its history and settings may not outlive a reboot. That folder is private (0700) and must
//! be ours: one another user made first is refused ([`ensure_private_dir`]), never used.
//!
//! [`Dirs::run_dir`] holds the jobs' sockets: a private per-user folder whose socket paths
//! always fit `sun_path` (104 bytes on macOS, 108 on Linux), so a long home never turns
//! pause, resume, stop and stage marks off.
//!
//! Nothing here creates a folder but [`ensure_private_dir`]; writers create what they need
//! ([`write_atomic`] does).

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that moves all of Headroom's files under one folder.
pub const HOME_ENV: &str = "HEADROOM_HOME";

/// File name of the settings in [`Dirs::config_dir`].
pub const SETTINGS_FILE: &str = "settings.toml";
/// File name of the SQLite history in [`Dirs::data_dir`].
pub const HISTORY_DB_FILE: &str = "history.db";

/// Headroom's folders, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// Persistent data: the SQLite history.
    pub data_dir: PathBuf,
    /// Configuration: `settings.toml`.
    pub config_dir: PathBuf,
    /// State that is not worth backing up: job files of running guards, the queue.
    pub state_dir: PathBuf,
    /// The jobs' sockets (see [`Dirs::run_dir`]).
    pub run_dir: PathBuf,
}

/// The longest socket path Headroom makes, bytes, its NUL left out: `sun_path` is 104 bytes
/// on macOS and the BSDs (`bsd/sys/un.h`) and 108 on Linux; the smaller holds everywhere, so
/// the rule tested on Linux is the Mac's.
pub const SOCKET_PATH_MAX: usize = 103;
/// The longest socket name in [`Dirs::run_dir`]: the largest pid, `.sock`.
const SOCKET_NAME_MAX: usize = "/4294967295.sock".len();

impl Dirs {
    /// The folders for this process: under `$HEADROOM_HOME` when set, else the platform's.
    pub fn current() -> Self {
        Dirs::resolve(std::env::var_os(HOME_ENV))
    }

    /// Everything under `home`: `home/data`, `home/config`, `home/state`, `home/run` (or,
    /// when `home/run` is too long for a socket path, a private folder named after `home`
    /// in the per-user run folder).
    pub fn under(home: impl AsRef<Path>) -> Self {
        let home = home.as_ref();
        let run = home.join("run");
        let run_dir = if fits_sockets(&run) {
            run
        } else {
            user_run_dir().join(format!(
                "h{:016x}",
                fnv1a(home.as_os_str().as_encoded_bytes())
            ))
        };
        Dirs {
            data_dir: home.join("data"),
            config_dir: home.join("config"),
            state_dir: home.join("state"),
            run_dir,
        }
    }

    /// The folders given the value of `$HEADROOM_HOME` (`None` or empty: the platform's).
    pub fn resolve(home_override: Option<OsString>) -> Self {
        if let Some(home) = home_override.filter(|h| !h.is_empty()) {
            return Dirs::under(PathBuf::from(home));
        }
        match directories::ProjectDirs::from("app", "Headroom", "Headroom") {
            Some(project) => {
                let data_dir = project.data_dir().to_path_buf();
                let state_dir = project
                    .state_dir()
                    .map_or_else(|| data_dir.clone(), Path::to_path_buf);
                Dirs {
                    config_dir: project.config_dir().to_path_buf(),
                    data_dir,
                    state_dir,
                    run_dir: platform_run_dir(),
                }
            }
            None => Dirs::under(user_tmp_dir()),
        }
    }

    /// Where the jobs' sockets are (`crate::marks`): private (0700), ours, and short enough
    /// for any socket path in it.
    pub fn run_dir(&self) -> PathBuf {
        self.run_dir.clone()
    }

    /// Where `headroom guard` publishes its jobs: `state_dir/jobs`.
    pub fn jobs_dir(&self) -> PathBuf {
        self.state_dir.join("jobs")
    }

    /// Where the guards of `guard --wait-fit` keep their places in line: `state_dir/queue`
    /// (see `crate::queue`).
    pub fn queue_dir(&self) -> PathBuf {
        self.state_dir.join("queue")
    }

    /// `config_dir/settings.toml`.
    pub fn settings_path(&self) -> PathBuf {
        self.config_dir.join(SETTINGS_FILE)
    }

    /// `data_dir/history.db`.
    pub fn history_db_path(&self) -> PathBuf {
        self.data_dir.join(HISTORY_DB_FILE)
    }
}

/// True when every socket path in `dir` fits `sun_path`.
fn fits_sockets(dir: &Path) -> bool {
    dir.as_os_str().len() + SOCKET_NAME_MAX <= SOCKET_PATH_MAX
}

/// `<temp dir>/headroom-<uid>`: this user's folder when there is no home.
fn user_tmp_dir() -> PathBuf {
    std::env::temp_dir().join(format!("headroom-{}", crate::unix::signals::current_uid()))
}

/// `/tmp/headroom-<uid>/run`: short on every OS (a per-user `$TMPDIR` on macOS is long).
fn user_run_dir() -> PathBuf {
    PathBuf::from(format!(
        "/tmp/headroom-{}",
        crate::unix::signals::current_uid()
    ))
    .join("run")
}

/// The platform's run folder: `$XDG_RUNTIME_DIR/headroom` on Linux when it is set and
/// short enough, else [`user_run_dir`].
fn platform_run_dir() -> PathBuf {
    #[cfg(target_os = "linux")]
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|p| p.join("headroom"))
        .filter(|p| fits_sockets(p))
    {
        return runtime;
    }
    user_run_dir()
}

/// FNV-1a, 64 bits: a short, stable name for a long path.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Creates `dir` (and its parents) private to us, or checks that it is: a folder (not a
/// link), owned by our uid, with no access for group or others. A folder another user made
/// first (in a shared `/tmp`) is refused with an error that says so, never used: it could
/// read our job files or take our sockets' place.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            ensure_private_dir(parent)?;
        }
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::symlink_metadata(dir)?;
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("refusing {}: {why}", dir.display()),
        ))
    };
    let uid = crate::unix::signals::current_uid();
    if !meta.is_dir() {
        return refuse("not a folder".into());
    }
    if meta.uid() != uid {
        return refuse(format!(
            "owned by uid {}, not by us (uid {uid})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        // Ours: make it private again.
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Writes `contents` to `path` atomically: to a temporary file in the same folder, flushed to
/// disk, then renamed over `path`. Readers see the old file or the new one, never a part.
/// Creates the parent folder if needed.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let tmp = dir.join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Renames a damaged file to `<name>.corrupt-<unix_seconds>` (with `-2`, `-3`, … appended if
/// that exists) so a fresh one can take its place, and returns the new path.
pub fn move_aside(path: &Path, unix_seconds: u64) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let base = format!("{name}.corrupt-{unix_seconds}");
    let mut target = path.with_file_name(&base);
    let mut n = 2;
    while target.exists() {
        target = path.with_file_name(format!("{base}-{n}"));
        n += 1;
    }
    fs::rename(path, &target)?;
    Ok(target)
}

/// Seconds since the Unix epoch now (0 if the clock is before 1970).
pub(crate) fn unix_seconds_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The JSON files of `dir` (`*.json`, not the dot-files of an atomic write under way), each
/// with its path, as `T`: a file that cannot be read or parsed is skipped with a warning
/// naming `what` and the file; a missing `dir` has none. The job files and the queue's
/// places are read so.
pub fn read_json_files<T: serde::de::DeserializeOwned>(
    dir: &Path,
    what: &str,
) -> Vec<(PathBuf, T)> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!("{what}: cannot list {}: {e}", dir.display());
            return Vec::new();
        }
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.')
            || path.extension().is_none_or(|e| e != "json")
        {
            continue;
        }
        let parsed = fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice::<T>(&bytes).map_err(|e| e.to_string()));
        match parsed {
            Ok(value) => files.push((path, value)),
            Err(e) => tracing::warn!("{what}: skipping {}: {e}", path.display()),
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_puts_everything_under_home() {
        let dirs = Dirs::resolve(Some(OsString::from("/tmp/hr-test")));
        assert_eq!(dirs.data_dir, PathBuf::from("/tmp/hr-test/data"));
        assert_eq!(dirs.config_dir, PathBuf::from("/tmp/hr-test/config"));
        assert_eq!(dirs.state_dir, PathBuf::from("/tmp/hr-test/state"));
        assert_eq!(dirs.jobs_dir(), PathBuf::from("/tmp/hr-test/state/jobs"));
        assert_eq!(
            dirs.settings_path(),
            PathBuf::from("/tmp/hr-test/config/settings.toml")
        );
        assert_eq!(
            dirs.history_db_path(),
            PathBuf::from("/tmp/hr-test/data/history.db")
        );
    }

    #[test]
    fn socket_paths_always_fit() {
        // A long home: the run folder moves to a short private one, named after it.
        let long = PathBuf::from(format!("/home/{}/{}", "u".repeat(60), "x".repeat(200)));
        for home in [PathBuf::from("/tmp/hr-test"), long.clone()] {
            let dirs = Dirs::under(&home);
            let worst = dirs.run_dir().join("4294967295.sock");
            assert!(
                worst.as_os_str().len() <= 103, // macOS's sun_path, 104 with its NUL
                "{} is {} bytes",
                worst.display(),
                worst.as_os_str().len()
            );
        }
        assert_eq!(
            Dirs::under("/tmp/hr-test").run_dir(),
            PathBuf::from("/tmp/hr-test/run")
        );
        let a = Dirs::under(&long).run_dir();
        let b = Dirs::under(long.join("other")).run_dir();
        assert_ne!(a, b, "two long homes share no socket folder");
        // The worst case on macOS too (sun_path 104): the per-user folder, pid 99999.
        let mac_worst = format!("/tmp/headroom-4294967295/run/h{:016x}/99999.sock", u64::MAX);
        assert!(mac_worst.len() <= 103, "{}", mac_worst.len());
    }

    #[test]
    fn a_private_dir_of_another_user_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        ensure_private_dir(&dir).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let err = ensure_private_dir(&link).unwrap_err();
        assert!(err.to_string().contains("not a folder"), "{err}");
        if crate::unix::signals::current_uid() == 0 {
            let theirs = tmp.path().join("theirs");
            fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
            let err = ensure_private_dir(&theirs).unwrap_err();
            assert!(err.to_string().contains("owned by uid 65534"), "{err}");
        }
    }

    #[test]
    fn empty_override_is_ignored() {
        let dirs = Dirs::resolve(Some(OsString::new()));
        assert_eq!(dirs, Dirs::resolve(None));
        assert!(dirs.data_dir.is_absolute(), "{dirs:?}");
        assert!(dirs.jobs_dir().starts_with(&dirs.state_dir));
        #[cfg(target_os = "linux")]
        if std::env::var_os("HOME").is_some() {
            assert!(dirs.config_dir.ends_with("headroom"), "{dirs:?}");
            assert_ne!(dirs.state_dir, dirs.data_dir);
        }
    }

    #[test]
    fn atomic_write_creates_dir_and_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("a/b/file.txt");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("file.txt")], "no temp left");
    }

    #[test]
    fn move_aside_never_overwrites() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.db");
        fs::write(&path, "1").unwrap();
        let first = move_aside(&path, 42).unwrap();
        fs::write(&path, "2").unwrap();
        let second = move_aside(&path, 42).unwrap();
        assert_eq!(first, tmp.path().join("x.db.corrupt-42"));
        assert_eq!(second, tmp.path().join("x.db.corrupt-42-2"));
        assert_eq!(fs::read_to_string(first).unwrap(), "1");
        assert!(!path.exists());
    }
}
