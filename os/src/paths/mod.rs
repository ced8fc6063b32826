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
//! its history and settings may not outlive a reboot.
//!
//! [`Dirs::run_dir`] holds the jobs' sockets: a private per-user folder whose socket paths
//! always fit `sun_path` (104 bytes on macOS, 108 on Linux), so a long home never turns
//! pause, resume, stop and stage marks off. Without `$XDG_RUNTIME_DIR` it is
//! `/tmp/headroom-<uid>/run`, in a folder everyone may write.
//!
//! Every folder is private (0700) and ours, from the first folder of its path that Headroom
//! makes or reuses down: [`Dirs::make_private`] makes or checks it step by step by descriptor
//! (`private.rs`), so one another user made first (in a shared `/tmp`), or a link planted in
//! the path, is refused with an error naming it, never used. Writers of files create what
//! they need ([`write_atomic`] does).

use std::ffi::OsString;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod private;

use private::Missing;
pub use private::PrivateDir;

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
    /// The first folder of each path above that Headroom makes or reuses (`$HEADROOM_HOME`,
    /// the platform's `…/headroom`, `/tmp/headroom-UID`): it and every folder below it must
    /// be ours ([`Dirs::make_private`]).
    anchors: Vec<PathBuf>,
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
        let mut anchors = vec![home.to_path_buf()];
        let run_dir = if fits_sockets(&run) {
            run
        } else {
            anchors.push(user_tmp_run_base());
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
            anchors,
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
                let config_dir = project.config_dir().to_path_buf();
                let (run_dir, run_anchor) = platform_run_dir();
                Dirs {
                    anchors: vec![
                        data_dir.clone(),
                        config_dir.clone(),
                        state_dir.clone(),
                        run_anchor,
                    ],
                    config_dir,
                    data_dir,
                    state_dir,
                    run_dir,
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

    /// `dir` (one of these folders, or a folder in one) made private, or checked to be, from
    /// the first folder of its path that Headroom makes or reuses down (see `private.rs`): a
    /// folder of another user, or a link, on the way is an error that names it.
    pub fn make_private(&self, dir: &Path) -> io::Result<PrivateDir> {
        private::walk(self.anchor_of(dir), dir, Missing::Make)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} could not be made", dir.display()),
            )
        })
    }

    /// [`Dirs::make_private`] for a reader: nothing is made, `None` when `dir` (or a folder
    /// above it) does not exist yet.
    pub fn open_private(&self, dir: &Path) -> io::Result<Option<PrivateDir>> {
        private::walk(self.anchor_of(dir), dir, Missing::Stop)
    }

    /// The first folder Headroom makes or reuses on `dir`'s path: the deepest anchor it is
    /// in, else `dir` itself.
    fn anchor_of<'a>(&'a self, dir: &'a Path) -> &'a Path {
        self.anchors
            .iter()
            .filter(|a| dir.starts_with(a))
            .max_by_key(|a| a.components().count())
            .map_or(dir, PathBuf::as_path)
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

/// `/tmp/headroom-<uid>`: the per-user folder of [`user_run_dir`], in a folder everyone may
/// write: the first one Headroom makes or reuses there, so it must be ours.
fn user_tmp_run_base() -> PathBuf {
    PathBuf::from(format!(
        "/tmp/headroom-{}",
        crate::unix::signals::current_uid()
    ))
}

/// `/tmp/headroom-<uid>/run`: short on every OS (a per-user `$TMPDIR` on macOS is long).
fn user_run_dir() -> PathBuf {
    user_tmp_run_base().join("run")
}

/// The platform's run folder and the first folder of its path that Headroom makes:
/// `$XDG_RUNTIME_DIR/headroom` on Linux when it is set and short enough, else
/// [`user_run_dir`] (under [`user_tmp_run_base`]).
fn platform_run_dir() -> (PathBuf, PathBuf) {
    #[cfg(target_os = "linux")]
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|p| p.join("headroom"))
        .filter(|p| fits_sockets(p))
    {
        return (runtime.clone(), runtime);
    }
    (user_run_dir(), user_tmp_run_base())
}

/// FNV-1a, 64 bits: a short, stable name for a long path.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Writes `contents` to `path` atomically: to a temporary file in the same folder (mode 0600:
/// Headroom's files hold command lines), flushed to disk, then renamed over `path`. Readers
/// see the old file or the new one, never a part. The parent folder is made private, or
/// checked to be, from the first folder Headroom makes or reuses on its path
/// ([`Dirs::make_private`] of [`Dirs::current`]).
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    Dirs::current().make_private(folder_of(path))?;
    replace_file(path, contents, 0o600)
}

/// Replaces `path` with a new file of `contents` (`mode`, less the umask), atomically: a
/// temporary file in the same folder, flushed to disk, renamed over it. What was at `path`
/// is replaced, never written through: a link planted there is replaced by the file, the
/// file it pointed to untouched. The folder must exist; it is not changed.
pub fn replace_file(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = folder_of(path);
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
            .mode(mode)
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

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
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
pub fn unix_seconds_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The JSON files of `dir` (`*.json`, not the dot-files of an atomic write under way), each
/// with its path, as `T`: a file that cannot be read or parsed, or is not a regular file (a
/// FIFO planted there is never waited on), is skipped with a warning naming `what` and the
/// file; a missing `dir` has none. The job files and the queue's places are read so.
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
        let parsed = crate::unix::fifo::read_regular(&path)
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
    fn private_dirs_are_checked_from_their_anchor_down() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("a/home");
        let dirs = Dirs::under(&home);
        assert!(dirs.open_private(&dirs.run_dir).unwrap().is_none());
        assert!(!home.exists(), "a reader makes nothing");
        let run = dirs.make_private(&dirs.run_dir).unwrap();
        assert_eq!(run.path(), dirs.run_dir);
        // Every folder Headroom made is private: `a` too (the first one it made).
        for made in [tmp.path().join("a"), home.clone(), dirs.run_dir.clone()] {
            assert_eq!(mode(&made), 0o700, "{}", made.display());
        }
        // Ours but opened up: made private again when reused.
        fs::set_permissions(&home, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(dirs.open_private(&dirs.run_dir).unwrap().is_some());
        assert_eq!(mode(&home), 0o700);
        // A link anywhere from the anchor down is refused, never followed.
        fs::rename(&dirs.run_dir, home.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink("elsewhere", &dirs.run_dir).unwrap();
        let err = dirs.make_private(&dirs.run_dir).unwrap_err();
        assert!(err.to_string().contains("not a folder (a link"), "{err}");
        assert!(err
            .to_string()
            .contains(&dirs.run_dir.display().to_string()));
        if crate::unix::signals::current_uid() == 0 {
            // A folder of another user on the way, however open, is refused.
            fs::remove_file(&dirs.run_dir).unwrap();
            std::os::unix::fs::chown(&home, Some(65534), None).unwrap();
            let err = dirs.make_private(&dirs.state_dir).unwrap_err();
            let said = err.to_string();
            assert!(said.contains("belongs to uid 65534"), "{said}");
            assert!(said.contains(&home.display().to_string()), "{said}");
            assert!(!dirs.state_dir.exists(), "nothing made in it");
            // The folder above the anchor: everyone may write in it, not sticky.
            let open = tmp.path().join("open");
            fs::create_dir(&open).unwrap();
            fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
            let dirs = Dirs::under(open.join("home"));
            let err = dirs.make_private(&dirs.data_dir).unwrap_err();
            assert!(err.to_string().contains("not sticky"), "{err}");
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
