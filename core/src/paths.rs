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
//! fall back to `<temp dir>/headroom/{data,config,state}`: Headroom still works, but its
//! history and settings may not outlive a reboot.
//!
//! Nothing here creates a folder; writers create what they need ([`write_atomic`] does).

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
    /// State that is not worth backing up: job files of running guards.
    pub state_dir: PathBuf,
}

impl Dirs {
    /// The folders for this process: under `$HEADROOM_HOME` when set, else the platform's.
    pub fn current() -> Self {
        Dirs::resolve(std::env::var_os(HOME_ENV))
    }

    /// Everything under `home`: `home/data`, `home/config`, `home/state`.
    pub fn under(home: impl AsRef<Path>) -> Self {
        let home = home.as_ref();
        Dirs {
            data_dir: home.join("data"),
            config_dir: home.join("config"),
            state_dir: home.join("state"),
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
                }
            }
            None => Dirs::under(std::env::temp_dir().join("headroom")),
        }
    }

    /// Where `headroom guard` publishes its jobs: `state_dir/jobs`.
    pub fn jobs_dir(&self) -> PathBuf {
        self.state_dir.join("jobs")
    }

    /// Where jobs' stage-mark sockets live: `state_dir/marks` (see `crate::marks`).
    pub fn marks_dir(&self) -> PathBuf {
        self.state_dir.join("marks")
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
