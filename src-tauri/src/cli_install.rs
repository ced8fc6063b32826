//! "Install command-line tool…" (macOS tray menu): links the `headroom` CLI that ships inside
//! the app bundle (a Tauri sidecar, `Headroom.app/Contents/MacOS/headroom`, next to the app's
//! own executable) to `/usr/local/bin/headroom`, which is on macOS's default `PATH`.
//!
//! It asks first (an `osascript` alert), links as the user when `/usr/local/bin` is writable
//! (Homebrew on Intel owns it), and otherwise through macOS's administrator prompt
//! (`do shell script … with administrator privileges`). Every outcome is said in an alert:
//! linked, already linked, or why not and the command to run by hand; cancelling is silent.
//! It runs on a thread of its own, because the alerts block.
//!
//! The planning (where the tool is, whether the app runs from a lasting place, what is at the
//! link now) and the unprivileged link are plain Unix path code, unit-tested on Linux. The
//! alerts and the privileged link are macOS-only and type-checked only: never run (no Mac).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Where the link goes.
pub const LINK: &str = "/usr/local/bin/headroom";

/// The sidecar's file name, next to the app's executable in `Contents/MacOS`.
const TOOL_NAME: &str = "headroom";

/// What installing would do.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// The link already points at this app's tool.
    AlreadyLinked { tool: PathBuf },
    /// Make the link; `replaces` says what is at the link's path now, if anything.
    Link {
        tool: PathBuf,
        replaces: Option<String>,
    },
}

/// Why installing cannot be done from this copy of the app.
#[derive(Debug, PartialEq, Eq)]
pub enum Problem {
    /// The app runs from the disk image, another volume, or a translocated (quarantined)
    /// copy: the link would break once that copy goes away.
    NotInstalled { exe: PathBuf },
    /// No tool next to the executable (a development build, `cargo run`).
    NoTool { expected: PathBuf },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NotInstalled { exe } => write!(
                f,
                "Headroom is running from {}, not from an installed copy, so a link to it \
                 would break. Drag Headroom into the Applications folder, open it from \
                 there, and choose \"Install command-line tool…\" again.",
                exe.display()
            ),
            Problem::NoTool { expected } => write!(
                f,
                "This copy of Headroom has no command-line tool inside ({} is missing). \
                 Install Headroom from its disk image, or build the tool from source with \
                 `cargo install --path .` in a clone.",
                expected.display()
            ),
        }
    }
}

/// Decides what to do for the app executable `exe` and the link path `link`.
pub fn plan(exe: &Path, link: &Path) -> Result<Plan, Problem> {
    if crate::autostart::is_transient(exe) {
        return Err(Problem::NotInstalled {
            exe: exe.to_path_buf(),
        });
    }
    let tool = exe.with_file_name(TOOL_NAME);
    if !tool.is_file() {
        return Err(Problem::NoTool { expected: tool });
    }
    match std::fs::read_link(link) {
        Ok(target) if target == tool => Ok(Plan::AlreadyLinked { tool }),
        Ok(target) => Ok(Plan::Link {
            tool,
            replaces: Some(format!("a link to {}", target.display())),
        }),
        Err(_) if link.symlink_metadata().is_ok() => Ok(Plan::Link {
            tool,
            replaces: Some("a file that is not a link".into()),
        }),
        Err(_) => Ok(Plan::Link {
            tool,
            replaces: None,
        }),
    }
}

/// Makes `link` a symlink to `tool` as the current user, replacing what is there. Fails
/// (without side effects, short of a race) when the user cannot write the link's directory.
pub fn link_as_user(tool: &Path, link: &Path) -> io::Result<()> {
    match link.symlink_metadata() {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} is a directory", link.display()),
            ))
        }
        Ok(_) => std::fs::remove_file(link)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::os::unix::fs::symlink(tool, link)
}

/// True when `link` is a symlink to `tool`.
pub fn is_linked(tool: &Path, link: &Path) -> bool {
    std::fs::read_link(link).is_ok_and(|t| t == tool)
}

/// The command that does the same by hand in Terminal.
pub fn manual_command(tool: &Path, link: &Path) -> String {
    format!(
        "sudo mkdir -p {} && sudo ln -sf {} {}",
        shell_quote(&link.parent().unwrap_or(Path::new("/")).to_string_lossy()),
        shell_quote(&tool.to_string_lossy()),
        shell_quote(&link.to_string_lossy())
    )
}

/// Quotes for a POSIX shell: bare when only safe characters, else in single quotes.
fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(all(target_os = "macos", not(test)))]
pub use macos::install;

#[cfg(target_os = "macos")]
mod macos {
    //! The alerts (`osascript`) and the privileged link: macOS only.

    use std::path::Path;
    use std::process::{Command, Output};

    use tauri::{AppHandle, Runtime};

    use super::{is_linked, link_as_user, manual_command, plan, Plan, LINK};

    /// What the user is told at the end.
    enum Outcome {
        /// The user said no: nothing to say.
        Cancelled,
        /// Done, or nothing to do: an informational alert.
        Done(String),
        /// Failed: a warning alert with the reason and what to do.
        Failed(String),
    }

    /// Starts the flow on a thread of its own (the alerts block; the tray's menu handler
    /// runs on the main thread).
    #[cfg_attr(test, allow(dead_code))]
    pub fn install<R: Runtime>(app: &AppHandle<R>) {
        let handle = app.clone();
        let spawned = std::thread::Builder::new()
            .name("cli-install".into())
            .spawn(move || {
                let outcome = run();
                report(&handle, outcome);
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "install command-line tool: cannot start");
            crate::notify::show(
                app,
                "Could not install the command-line tool",
                &format!("Headroom could not start the installer: {e}"),
            );
        }
    }

    fn run() -> Outcome {
        let link = Path::new(LINK);
        let exe = match std::env::current_exe() {
            Ok(exe) => exe,
            Err(e) => {
                return Outcome::Failed(format!("Headroom cannot tell where it is installed: {e}"))
            }
        };
        let (tool, replaces) = match plan(&exe, link) {
            Err(problem) => return Outcome::Failed(problem.to_string()),
            Ok(Plan::AlreadyLinked { tool }) => {
                return Outcome::Done(format!(
                    "{LINK} already points to {}. Run `headroom status` in Terminal.",
                    tool.display()
                ))
            }
            Ok(Plan::Link { tool, replaces }) => (tool, replaces),
        };
        let mut question = format!(
            "This links {LINK} to the command-line tool inside Headroom, so that `headroom \
             status`, `headroom guard -- …` and the other commands work in Terminal. macOS \
             may ask for an administrator password."
        );
        if let Some(what) = &replaces {
            question.push_str(&format!(" {LINK} is now {what}; it will be replaced."));
        }
        match confirm("Install the headroom command?", &question) {
            Ok(true) => {}
            Ok(false) => return Outcome::Cancelled,
            Err(e) => return Outcome::Failed(e),
        }
        if let Err(e) = link_as_user(&tool, link) {
            tracing::info!(error = %e, "linking as the user failed; asking for admin rights");
            match link_as_admin(&tool, link) {
                Ok(true) => {}
                Ok(false) => return Outcome::Cancelled,
                Err(e) => return Outcome::Failed(failure(&e, &tool)),
            }
        }
        if is_linked(&tool, link) {
            tracing::info!(tool = %tool.display(), link = LINK, "command-line tool linked");
            Outcome::Done(format!(
                "{LINK} now points to {}. Open a new Terminal window and run `headroom status`.",
                tool.display()
            ))
        } else {
            Outcome::Failed(failure(
                &format!("{LINK} does not point to the tool after linking"),
                &tool,
            ))
        }
    }

    fn failure(reason: &str, tool: &Path) -> String {
        format!(
            "Could not link {LINK}: {reason}\n\nTo do it by hand, run in Terminal:\n{}",
            manual_command(tool, Path::new(LINK))
        )
    }

    /// Runs an AppleScript with `argv` (no quoting of user data into the script).
    fn osascript(lines: &[&str], argv: &[&str]) -> std::io::Result<Output> {
        let mut cmd = Command::new("/usr/bin/osascript");
        for line in lines {
            cmd.arg("-e").arg(line);
        }
        cmd.args(argv).output()
    }

    /// True when the script ended with "User canceled" (error -128).
    fn cancelled(out: &Output) -> bool {
        String::from_utf8_lossy(&out.stderr).contains("(-128)")
    }

    fn stderr_of(out: &Output) -> String {
        let text = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if text.is_empty() {
            format!("osascript exited with {}", out.status)
        } else {
            text
        }
    }

    /// Asks Install/Cancel: Ok(true) to go on, Ok(false) cancelled.
    fn confirm(title: &str, message: &str) -> Result<bool, String> {
        let out = osascript(
            &[
                "on run argv",
                "activate",
                "display alert (item 1 of argv) message (item 2 of argv) buttons {\"Cancel\", \
                 \"Install\"} default button \"Install\" cancel button \"Cancel\"",
                "end run",
            ],
            &[title, message],
        )
        .map_err(|e| format!("cannot run osascript: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).contains("Install"))
        } else if cancelled(&out) {
            Ok(false)
        } else {
            Err(stderr_of(&out))
        }
    }

    /// Links through macOS's administrator prompt: Ok(false) when the user cancelled it.
    fn link_as_admin(tool: &Path, link: &Path) -> Result<bool, String> {
        let dir = link.parent().unwrap_or(Path::new("/")).to_string_lossy();
        let (tool, link) = (tool.to_string_lossy(), link.to_string_lossy());
        let out = osascript(
            &[
                "on run argv",
                "do shell script \"/bin/mkdir -p \" & quoted form of (item 1 of argv) & \" && \
                 /bin/ln -sf \" & quoted form of (item 2 of argv) & \" \" & quoted form of \
                 (item 3 of argv) with prompt \"Headroom wants to link the headroom command \
                 into /usr/local/bin.\" with administrator privileges",
                "end run",
            ],
            &[&dir, &tool, &link],
        )
        .map_err(|e| format!("cannot run osascript: {e}"))?;
        if out.status.success() {
            Ok(true)
        } else if cancelled(&out) {
            Ok(false)
        } else {
            Err(stderr_of(&out))
        }
    }

    /// Says the outcome in an alert; if even that fails, in a notification and the log.
    fn report<R: Runtime>(app: &AppHandle<R>, outcome: Outcome) {
        let (title, message, critical) = match outcome {
            Outcome::Cancelled => return,
            Outcome::Done(m) => ("Command-line tool", m, false),
            Outcome::Failed(m) => ("Could not install the command-line tool", m, true),
        };
        if critical {
            tracing::warn!(%message, "install command-line tool");
        }
        let kind = if critical {
            "as critical"
        } else {
            "as informational"
        };
        let line = format!("display alert (item 1 of argv) message (item 2 of argv) {kind}");
        let shown = osascript(
            &["on run argv", "activate", &line, "end run"],
            &[title, &message],
        );
        match shown {
            Ok(out) if out.status.success() || cancelled(&out) => {}
            Ok(out) => {
                tracing::warn!(error = %stderr_of(&out), "alert failed");
                crate::notify::show(app, title, &message);
            }
            Err(e) => {
                tracing::warn!(error = %e, "alert failed");
                crate::notify::show(app, title, &message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app_with_tool(root: &Path) -> PathBuf {
        let macos = root.join("Applications/Headroom.app/Contents/MacOS");
        std::fs::create_dir_all(&macos).unwrap();
        std::fs::write(macos.join("headroom-app"), b"app").unwrap();
        std::fs::write(macos.join("headroom"), b"cli").unwrap();
        macos.join("headroom-app")
    }

    #[test]
    fn plans_a_new_link_then_sees_it_linked() {
        let dir = tempfile::tempdir().unwrap();
        let exe = app_with_tool(dir.path());
        let tool = exe.with_file_name("headroom");
        let bin = dir.path().join("usr/local/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let link = bin.join("headroom");

        assert_eq!(
            plan(&exe, &link),
            Ok(Plan::Link {
                tool: tool.clone(),
                replaces: None
            })
        );
        link_as_user(&tool, &link).unwrap();
        assert!(is_linked(&tool, &link));
        assert_eq!(plan(&exe, &link), Ok(Plan::AlreadyLinked { tool }));
    }

    #[test]
    fn replaces_another_link_or_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let exe = app_with_tool(dir.path());
        let tool = exe.with_file_name("headroom");
        let link = dir.path().join("headroom");

        std::os::unix::fs::symlink("/opt/homebrew/bin/headroom", &link).unwrap();
        assert_eq!(
            plan(&exe, &link),
            Ok(Plan::Link {
                tool: tool.clone(),
                replaces: Some("a link to /opt/homebrew/bin/headroom".into())
            })
        );
        link_as_user(&tool, &link).unwrap();
        assert!(is_linked(&tool, &link));

        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, b"old").unwrap();
        assert!(matches!(
            plan(&exe, &link),
            Ok(Plan::Link {
                replaces: Some(_),
                ..
            })
        ));
        link_as_user(&tool, &link).unwrap();
        assert!(is_linked(&tool, &link));
    }

    #[test]
    fn refuses_the_disk_image_translocation_and_a_missing_tool() {
        refuses_an_app_on_a_read_only_volume();
        let exe = Path::new(
            "/private/var/folders/x/AppTranslocation/1234/d/Headroom.app/Contents/MacOS/headroom-app",
        );
        assert!(matches!(
            plan(exe, Path::new("/nonexistent/headroom")),
            Err(Problem::NotInstalled { .. })
        ));

        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("headroom-app");
        std::fs::write(&exe, b"app").unwrap();
        let err = plan(&exe, &dir.path().join("link")).unwrap_err();
        assert_eq!(
            err,
            Problem::NoTool {
                expected: dir.path().join("headroom")
            }
        );
        assert!(err.to_string().contains("no command-line tool inside"));
    }

    /// The disk image is a read-only volume: an app on one is refused (a real read-only
    /// tmpfs, as root; CI runs as root), and the same app on a writable volume (an external
    /// drive) is a real install.
    fn refuses_an_app_on_a_read_only_volume() {
        let volume = tempfile::tempdir().unwrap();
        let app = volume.path().join("Headroom.app/Contents/MacOS");
        let mount = |options: &str| {
            std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", options, "tmpfs"])
                .arg(volume.path())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !mount("size=1m") {
            eprintln!("skipping the disk image: mounting a volume needs root");
            return;
        }
        std::fs::create_dir_all(&app).unwrap();
        let exe = app.join("headroom-app");
        std::fs::write(&exe, b"app").unwrap();
        std::fs::write(app.join(TOOL_NAME), b"tool").unwrap();
        let link = Path::new("/nonexistent/headroom");
        let writable = plan(&exe, link);
        let remounted = mount("remount,ro,size=1m");
        let read_only = plan(&exe, link);
        let _ = std::process::Command::new("umount")
            .arg(volume.path())
            .status();
        assert!(
            !matches!(writable, Err(Problem::NotInstalled { .. })),
            "{writable:?}"
        );
        assert!(remounted, "remount read-only");
        assert!(
            matches!(read_only, Err(Problem::NotInstalled { .. })),
            "{read_only:?}"
        );
    }

    #[test]
    fn linking_into_a_missing_or_unwritable_directory_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("headroom");
        std::fs::write(&tool, b"cli").unwrap();
        let err = link_as_user(&tool, &dir.path().join("no/such/dir/headroom")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(
            link_as_user(&tool, &sub).is_err(),
            "a directory is never replaced"
        );
        assert!(sub.is_dir());
    }

    #[test]
    fn manual_command_quotes_paths_with_spaces_and_quotes() {
        let cmd = manual_command(
            Path::new("/Applications/My Apps/Bob's Headroom.app/Contents/MacOS/headroom"),
            Path::new(LINK),
        );
        assert_eq!(
            cmd,
            "sudo mkdir -p /usr/local/bin && sudo ln -sf \
             '/Applications/My Apps/Bob'\\''s Headroom.app/Contents/MacOS/headroom' \
             /usr/local/bin/headroom"
        );
    }
}
