//! Headroom's own folders, made or checked private from the first folder of their path that
//! Headroom makes or reuses (its anchor: `$HEADROOM_HOME`, the platform's `…/headroom`,
//! `/tmp/headroom-UID`) down to the one asked for.
//!
//! Each step is opened by descriptor below the one before (`unix::folder`: `openat` with
//! `O_NOFOLLOW | O_DIRECTORY`, `mkdirat`), so each check is of the folder then used and a link
//! planted in the path is refused, never followed. Every folder from the anchor down must be
//! ours (one of another user is refused, with what to do about it); ours but open to others,
//! it is made private again (0700). The folder above the anchor is the user's or the
//! system's (`/tmp`, `~/.local/share`): it must be ours or root's, and if everyone may write
//! in it, sticky (as `/tmp` is: nobody else may rename or remove what we made there). Once
//! the walk is done nobody but us (and root) can change any folder of the path below it, so
//! sockets and files in the folder are then used by their paths.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::unix::folder::{make_dir_at, open_dir, open_dir_at};
use crate::unix::signals::current_uid;

/// A folder of ours, checked from its anchor down, held open while it is used.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
    _dir: File,
}

impl PrivateDir {
    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What a walk does with a folder that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Missing {
    /// Makes it (0700).
    Make,
    /// Stops: there is nothing there yet.
    Stop,
}

/// `dir`, at or below `anchor`, checked (and made, with [`Missing::Make`]) step by step from
/// the anchor down; `None` when something is missing and `missing` is [`Missing::Stop`].
pub(super) fn walk(anchor: &Path, dir: &Path, missing: Missing) -> io::Result<Option<PrivateDir>> {
    let below = dir.strip_prefix(anchor).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not in {}", dir.display(), anchor.display()),
        )
    })?;
    let mut steps: Vec<OsString> = Vec::new();
    for part in below.components() {
        match part {
            Component::Normal(name) => steps.push(name.to_os_string()),
            Component::CurDir => {}
            _ => return Err(refusal(dir, "it is not a plain path (`..`)")),
        }
    }
    // The folder above the anchor, or above the first folder of its path that is missing.
    let mut base = anchor;
    while let (Some(parent), Some(name)) = (base.parent(), base.file_name()) {
        steps.insert(0, name.to_os_string());
        base = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if base.exists() {
            break;
        }
        if missing == Missing::Stop {
            return Ok(None);
        }
    }
    let mut here = base.to_path_buf();
    let mut folder = open_dir(base).map_err(|e| at(base, &e))?;
    check_above(&folder, base)?;
    for name in steps {
        here.push(&name);
        if missing == Missing::Make {
            match make_dir_at(&folder, &name, 0o700) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(at(&here, &e)),
            }
        }
        folder = match open_dir_at(&folder, &name) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && missing == Missing::Stop => {
                return Ok(None)
            }
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                return Err(refusal(
                    &here,
                    "it is not a folder (a link, or a file): Headroom never follows a link \
                     there",
                ))
            }
            Err(e) => return Err(at(&here, &e)),
        };
        check_ours(&folder, &here)?;
    }
    Ok(Some(PrivateDir {
        path: here,
        _dir: folder,
    }))
}

/// A folder from the anchor down: ours (else refused), and private (made so if it is not).
fn check_ours(folder: &File, path: &Path) -> io::Result<()> {
    let meta = folder.metadata().map_err(|e| at(path, &e))?;
    let me = current_uid();
    if meta.uid() != me {
        return Err(refusal(
            path,
            &format!(
                "it belongs to uid {}, not to you (uid {me}): another user made it, and could \
                 read what Headroom keeps there or take the place of its jobs' sockets. Remove \
                 it (its owner or root can), or set XDG_RUNTIME_DIR or HEADROOM_HOME to a \
                 folder of your own",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        folder
            .set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(|e| at(path, &e))?;
    }
    Ok(())
}

/// The folder above the anchor: ours or root's, and sticky if everyone may write in it.
fn check_above(folder: &File, path: &Path) -> io::Result<()> {
    let meta = folder.metadata().map_err(|e| at(path, &e))?;
    let me = current_uid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(refusal(
            path,
            &format!(
                "Headroom's folder would be in a folder of uid {}, not yours (uid {me}) or \
                 root's: its owner could replace it. Set HEADROOM_HOME to a folder of your own",
                meta.uid()
            ),
        ));
    }
    let sticky = meta.mode() & 0o1000 != 0;
    if meta.mode() & 0o002 != 0 && !sticky {
        return Err(refusal(
            path,
            "everyone may write in it and it is not sticky: another user could replace \
             Headroom's folder in it. Set HEADROOM_HOME to a folder of your own",
        ));
    }
    Ok(())
}

fn refusal(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("refusing {}: {why}", path.display()),
    )
}

fn at(path: &Path, e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}
