//! Another local user against a user's jobs (issue 33), with real users: root runs the tests
//! and acts as both. The victim runs without `XDG_RUNTIME_DIR`, so its jobs' sockets are in
//! `/tmp/headroom-UID/run`; the attacker (`nobody`) makes `/tmp/headroom-UID` first, open to
//! all, and once the victim's guards run, swaps `run` for a link to a folder of its own with
//! fake sockets that answer `ok` to everything. Neither `headroom stop` nor a pausing job's
//! `yield` to a younger job may reach a fake: the folder is refused, and said so. A socket of
//! another user in the victim's own folder (only root can put one there) is refused by its
//! peer's uid. Each test looks at the processes afterwards and at what the fakes were sent.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use support::guard::{members, sleep_tag, WAIT};
use support::users::{User, NOBODY};
use support::{proc_state, wait_until};

/// True when these tests can run: they act as other users.
fn root() -> bool {
    support::users::root("they act as other users with setpriv")
}

/// A victim uid that no account has, one per test and run.
fn victim_uid(n: u32) -> u32 {
    3_000_000_000 + (std::process::id() % 100_000) * 10 + n
}

/// The attacker's fake server: answers `ok` to every line on the socket `argv[1]`, and
/// appends each line it was sent to `argv[2]`.
const FAKE_SERVER: &str = r#"
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(64)
while True:
    c, _ = s.accept()
    line = c.makefile('rb').readline()
    with open(log, 'ab') as f:
        f.write(line)
    c.sendall(b'ok\n')
    c.close()
"#;

/// `nobody` against `victim`: the victim's per-user folder made first, open to all.
struct Attack {
    attacker: User,
    /// `/tmp/headroom-VICTIM`.
    dir: PathBuf,
    /// The attacker's folder the victim's `run` is swapped for.
    evil: PathBuf,
    servers: Vec<Child>,
}

impl Attack {
    fn prepare(victim: &User) -> Attack {
        let dir = victim.tmp_dir();
        let _ = fs::remove_dir_all(&dir);
        let attacker = User::new(NOBODY);
        let made = attacker
            .command("mkdir")
            .args(["-m", "0777"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(made.success());
        let evil = dir.join("evil");
        Attack {
            attacker,
            dir,
            evil,
            servers: Vec::new(),
        }
    }

    /// Swaps the victim's `run` (if it made one) for a link to the attacker's folder, with
    /// fake sockets named after the guards `pids`.
    fn swap(&mut self, pids: &[u32]) {
        let script = "cd \"$1\" && { [ ! -e run ] || mv run run.old; } && mkdir -m 0777 evil \
                      && : > evil/log && ln -s evil run";
        let swapped = self
            .attacker
            .command("sh")
            .args(["-c", script, "sh"])
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(swapped.success());
        for pid in pids {
            let socket = self.evil.join(format!("{pid}.sock"));
            let server = self
                .attacker
                .command("python3")
                .args(["-c", FAKE_SERVER])
                .arg(&socket)
                .arg(self.evil.join("log"))
                .spawn()
                .unwrap();
            self.servers.push(server);
            assert!(wait_until(WAIT, || socket.exists()), "no fake server");
        }
    }

    /// Every line the fakes were sent.
    fn requests(&self) -> String {
        fs::read_to_string(self.evil.join("log")).unwrap_or_default()
    }
}

impl Drop for Attack {
    fn drop(&mut self) {
        for server in &mut self.servers {
            let _ = server.kill();
            let _ = server.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A victim's guard in the background (stderr in a file), killed with its job when dropped.
struct VictimGuard {
    child: Child,
    stderr: PathBuf,
    tag: String,
}

impl VictimGuard {
    fn start(victim: &User, flags: &[&str], tag: &str, log_dir: &Path) -> VictimGuard {
        let stderr = log_dir.join(format!("guard-{tag}.stderr"));
        let mut args = vec!["guard", "--wait-free", "0", "--poll", "0.2s"];
        args.extend(flags);
        args.extend(["--", "sleep", tag]);
        let child = victim
            .headroom(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let me = child.id();
        assert!(
            wait_until(WAIT, || members(tag, me).len() == 1),
            "the job did not start"
        );
        VictimGuard {
            child,
            stderr,
            tag: tag.to_string(),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn leader(&self) -> u32 {
        members(&self.tag, self.pid())[0]
    }

    fn said(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for VictimGuard {
    fn drop(&mut self) {
        let job = members(&self.tag, self.pid());
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in job {
            // SAFETY: kill has no memory-safety preconditions; the test's own sleep.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn another_user_who_made_the_run_folder_first_cannot_answer_a_stop() {
    if !root() {
        return;
    }
    let logs = tempfile::tempdir().unwrap();
    let victim = User::new(victim_uid(1));
    let mut attack = Attack::prepare(&victim);
    let guard = VictimGuard::start(&victim, &[], &sleep_tag(61), logs.path());
    // Its socket is bound by now, if it binds one.
    std::thread::sleep(Duration::from_secs(1));
    attack.swap(&[guard.pid()]);
    let leader = guard.leader();
    let out = victim
        .headroom(&["stop", &leader.to_string()])
        .output()
        .unwrap();
    let requests = attack.requests();
    assert!(requests.is_empty(), "the attacker was asked: {requests}");
    assert_eq!(out.status.code(), Some(2), "stop: {}", text(&out));
    let folder = attack.dir.display().to_string();
    assert!(
        text(&out).contains(&folder) && !text(&out).contains("stopped the job"),
        "the refusal names the folder: {}",
        text(&out)
    );
    assert!(
        proc_state(leader).is_some(),
        "(the job runs: nobody could stop it)"
    );
    assert!(
        guard.said().contains(&folder),
        "the guard says its socket is off and why: {}",
        guard.said()
    );
}

#[test]
fn another_user_who_made_the_run_folder_first_cannot_answer_a_yield() {
    if !root() {
        return;
    }
    let logs = tempfile::tempdir().unwrap();
    let victim = User::new(victim_uid(2));
    let mut attack = Attack::prepare(&victim);
    // The older job crosses its free floor at once and pauses itself (no younger job yet);
    // it resumes by itself after 6 s of calm and crosses again: then it asks the younger.
    let older = VictimGuard::start(
        &victim,
        &[
            "--on-budget",
            "pause",
            "--kill-free",
            "99.9",
            "--resume-free",
            "0",
            "--resume-calm",
            "6s",
            "--max-pauses",
            "20",
        ],
        &sleep_tag(62),
        logs.path(),
    );
    let old_leader = older.leader();
    assert!(
        wait_until(WAIT, || proc_state(old_leader) == Some('T')),
        "the older job never paused: {}",
        older.said()
    );
    let younger = VictimGuard::start(
        &victim,
        &["--on-budget", "pause", "--kill-free", "0"],
        &sleep_tag(63),
        logs.path(),
    );
    // Its job file is written and its socket bound, if it binds one.
    std::thread::sleep(Duration::from_secs(1));
    attack.swap(&[older.pid(), younger.pid()]);
    // The older job runs again, crosses, and must pause itself: the younger cannot be asked.
    assert!(
        wait_until(WAIT, || proc_state(old_leader) != Some('T')),
        "the older job never resumed: {}",
        older.said()
    );
    let paused_again = wait_until(WAIT, || proc_state(old_leader) == Some('T'));
    let requests = attack.requests();
    assert!(requests.is_empty(), "the attacker was asked: {requests}");
    assert!(
        !older.said().contains("paused in its place"),
        "the older job took the attacker's word: {}",
        older.said()
    );
    assert!(paused_again, "the older job ran on: {}", older.said());
    assert_ne!(
        proc_state(younger.leader()),
        Some('T'),
        "(the younger job was never asked)"
    );
}

#[test]
fn a_socket_of_another_user_in_our_own_folder_is_refused() {
    if !root() {
        return;
    }
    let logs = tempfile::tempdir().unwrap();
    let victim = User::new(victim_uid(3));
    let _ = fs::remove_dir_all(victim.tmp_dir());
    let guard = VictimGuard::start(&victim, &[], &sleep_tag(64), logs.path());
    let socket = victim
        .tmp_dir()
        .join("run")
        .join(format!("{}.sock", guard.pid()));
    assert!(
        wait_until(WAIT, || socket.exists()),
        "no socket: {}",
        guard.said()
    );
    // Only root can put another user's socket in the victim's private folder: it does, in
    // the guard's socket's place.
    let attacker = User::new(NOBODY);
    let planted = attacker.home.join("fake.sock");
    let log = attacker.home.join("log");
    let mut server = attacker
        .command("python3")
        .args(["-c", FAKE_SERVER])
        .arg(&planted)
        .arg(&log)
        .spawn()
        .unwrap();
    assert!(wait_until(WAIT, || planted.exists()));
    fs::rename(&socket, victim.tmp_dir().join("real.sock")).unwrap();
    fs::rename(&planted, &socket).unwrap();
    let leader = guard.leader();
    let out = victim
        .headroom(&["stop", &leader.to_string()])
        .output()
        .unwrap();
    let requests = fs::read_to_string(&log).unwrap_or_default();
    let _ = server.kill();
    let _ = server.wait();
    let _ = fs::remove_dir_all(victim.tmp_dir());
    assert!(requests.is_empty(), "the other user was asked: {requests}");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&NOBODY.to_string()),
        "the refusal names the peer's uid: {}",
        text(&out)
    );
    assert!(proc_state(leader).is_some());
}
