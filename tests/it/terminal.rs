//! `headroom guard` in a real terminal: an interactive bash on a pseudo-terminal runs the
//! guard as a user would, and types Ctrl-C, Ctrl-\, Ctrl-Z and `fg`. The job must behave as
//! if it ran directly: it reads the terminal, the keys reach it, Ctrl-Z suspends the job
//! and the guard together, and `fg` continues both.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{headroom_bin, live_with_tag, tag, test_home};

/// An interactive bash on a pseudo-terminal, its output collected by a thread. The terminal
/// echoes what is typed: a needle that must come from a program is split with `""` in the
/// command (`echo rea""dy` prints `ready`).
struct Shell {
    master: File,
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
}

impl Shell {
    fn start() -> Shell {
        Self::start_with(false)
    }

    /// An interactive bash whose guards put their jobs in cgroups of their own when
    /// `own_cgroup` (root), else track their processes.
    fn start_with(own_cgroup: bool) -> Shell {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two fds into the locals; the other arguments may be null.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both fds were just opened by openpty and are owned here.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut cmd = Command::new("bash");
        cmd.args(["--norc", "--noprofile", "-i"])
            .env("PS1", "$ ")
            .env("TERM", "dumb")
            .env("HEADROOM_HOME", test_home())
            .env("HEADROOM_JOB_CGROUP", if own_cgroup { "on" } else { "off" })
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    headroom_bin().parent().unwrap().display(),
                    std::env::var("PATH").unwrap_or_default()
                ),
            )
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: runs in the child before exec: setsid and ioctl are async-signal-safe. The
        // new session takes the pty (now on fd 0) as its controlling terminal.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let shell = Shell { master, child, out };
        assert!(shell.wait_for("$ ", Duration::from_secs(10)), "no prompt");
        shell
    }

    fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    fn output(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    /// True once `needle` appears in the output (counting only output not yet consumed).
    fn wait_for(&self, needle: &str, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.output().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ps` of every process, for failure messages.
fn processes() -> String {
    let out = Command::new("ps")
        .args(["-eo", "pid,ppid,pgid,sid,tpgid,stat,args"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// State letter of the first live process whose command line contains `tag`.
fn state_of(tag: &str) -> Option<char> {
    let pid = *live_with_tag(tag).first()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

#[test]
fn the_job_reads_the_terminal() {
    let mut sh = Shell::start();
    let tag = tag("tty-read");
    sh.send(&format!(
        r#"headroom guard --wait-free 0 -- sh -c 'echo rea""dy; read x; echo got:$x' {tag}; echo rc=$?"#
    ));
    sh.send("\n");
    assert!(
        sh.wait_for("ready", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
    std::thread::sleep(Duration::from_millis(200));
    sh.send("hello\n");
    assert!(
        sh.wait_for("got:hello", Duration::from_secs(10)),
        "the job could not read the terminal: {}",
        sh.output()
    );
    assert!(
        sh.wait_for("rc=0", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
}

#[test]
fn ctrl_c_and_ctrl_backslash_reach_the_job() {
    let mut sh = Shell::start();
    for (key, code, name) in [("\x03", 130, "int"), ("\x1c", 131, "quit")] {
        let tag = tag(&format!("tty-{name}"));
        sh.send(&format!(
            r#"headroom guard --wait-free 0 -- sh -c 'echo rea""dy-{name}; sleep 30' {tag}; echo rc-{name}=$?"#
        ));
        sh.send("\n");
        assert!(
            sh.wait_for(&format!("ready-{name}"), Duration::from_secs(10)),
            "{}",
            sh.output()
        );
        std::thread::sleep(Duration::from_millis(300));
        sh.send(key);
        assert!(
            sh.wait_for(&format!("rc-{name}={code}"), Duration::from_secs(15)),
            "{}",
            sh.output()
        );
        assert!(
            live_with_tag(&tag).is_empty(),
            "the job outlived the guard after {name}: {}",
            sh.output()
        );
    }
}

#[test]
fn ctrl_z_suspends_the_job_and_fg_continues_it() {
    let mut sh = Shell::start();
    let tag = tag("tty-suspend");
    sh.send(&format!(
        r#"headroom guard --wait-free 0 -- sh -c 'echo rea""dy; sleep 2; echo fini""shed-job' {tag}"#
    ));
    sh.send("\n");
    assert!(
        sh.wait_for("ready", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
    std::thread::sleep(Duration::from_millis(300));
    sh.send("\x1a");
    assert!(
        sh.wait_for("Stopped", Duration::from_secs(20)),
        "the shell did not see the guard stop: {}\n{}",
        sh.output(),
        processes()
    );
    assert_eq!(
        state_of(&tag),
        Some('T'),
        "the job runs on: {}",
        sh.output()
    );
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !sh.output().contains("finished-job"),
        "the job ran on while suspended: {}",
        sh.output()
    );
    sh.send("fg\n");
    assert!(
        sh.wait_for("finished-job", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
    assert!(
        sh.wait_for("exited with code 0", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
    sh.send("echo rc-after=$?\n");
    assert!(
        sh.wait_for("rc-after=0", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
}

#[test]
fn ctrl_c_stops_a_paused_job() {
    let mut sh = Shell::start();
    let tag = tag("tty-paused");
    sh.send(&format!(
        r#"headroom guard --wait-free 0 --on-budget pause -- sh -c 'echo rea""dy; sleep 30' {tag}; echo rc-paused=$?"#
    ));
    sh.send("\n");
    assert!(
        sh.wait_for("ready", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
    // The job's leader (the guard's own command line holds the tag too), looked for until
    // it is seen: a loaded machine may show "ready" before /proc lists it.
    let find = || {
        live_with_tag(&tag).into_iter().find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sh\0-c"))
        })
    };
    let mut leader = None;
    assert!(
        support::wait_until(Duration::from_secs(10), || {
            leader = find();
            leader.is_some()
        }),
        "the job's leader was not found\n{}",
        sh.output()
    );
    let leader = leader.unwrap();
    let paused = support::headroom()
        .args(["pause", &leader.to_string()])
        .output()
        .unwrap();
    assert!(
        paused.status.success(),
        "{}",
        String::from_utf8_lossy(&paused.stderr)
    );
    assert!(
        sh.wait_for("or Ctrl-C here", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
    // The guard holds the terminal while the job is paused: Ctrl-C reaches it and stops the job.
    std::thread::sleep(Duration::from_millis(300));
    sh.send("\x03");
    assert!(
        sh.wait_for("rc-paused=130", Duration::from_secs(15)),
        "{}\n{}",
        sh.output(),
        processes()
    );
    assert!(
        live_with_tag(&tag).is_empty(),
        "left behind: {}",
        processes()
    );
}

#[test]
fn ctrl_z_also_suspends_members_in_other_sessions() {
    // Ctrl-Z stops the terminal's foreground group only; a setsid worker is in a session of
    // its own. While the guard is suspended nobody guards it, so it must be stopped too, and
    // continued with the rest on `fg`.
    let mut sh = Shell::start();
    let tag = tag("tty-suspend-setsid");
    // A sleep whose argument is a unique tag: 30.<pid>77 seconds.
    let worker = format!("30.{}77", std::process::id());
    sh.send(&format!(
        r#"headroom guard --wait-free 0 -- sh -c 'setsid sleep {worker} & echo rea""dy; sleep 30' {tag}; echo rc-setsid=$?"#
    ));
    sh.send("\n");
    assert!(
        sh.wait_for("ready", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
    std::thread::sleep(Duration::from_millis(300));
    let setsid_sleep = || {
        live_with_tag(&worker).into_iter().find(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep\0"))
        })
    };
    let pid = setsid_sleep().unwrap_or_else(|| panic!("no setsid worker: {}", processes()));
    sh.send("\x1a");
    assert!(
        sh.wait_for("Stopped", Duration::from_secs(20)),
        "{}",
        sh.output()
    );
    let stopped = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        state(pid) == Some('T')
    });
    assert!(
        stopped,
        "the setsid member ran on while the guard was suspended:\n{}",
        processes()
    );
    sh.send("fg\n");
    let running = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        state(pid).is_some_and(|s| s != 'T')
    });
    assert!(
        running,
        "fg did not continue the setsid member:\n{}",
        processes()
    );
    // The job goes on with its setsid member (Ctrl-C reaches only the terminal's group): the
    // guard still guards it, and ends once it does.
    sh.send("\x03");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(state(pid).map(|s| s != 'T'), Some(true), "{}", processes());
    // SAFETY: kill has no memory-safety preconditions; the sleep is this test's.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(
        sh.wait_for("stopped on signal 2", Duration::from_secs(15))
            || sh.wait_for("killed by signal", Duration::from_secs(1)),
        "the guard did not end with its job: {}",
        sh.output()
    );
}

fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.chars().next()
}

/// The sleeps of a job whose leader has exited: one in a session of its own (setsid), one in
/// a group of its own (setpgid), one in the leader's group; each a unique tag. (A shell
/// starts its background commands with SIGINT and SIGQUIT ignored: `env` puts them back.)
fn orphaned_members_job(tag: &str, n: u32) -> (String, [String; 3]) {
    let tags = [1, 2, 3].map(|k| format!("30.{}{n}{k}", std::process::id()));
    let [setsid, setpgid, group] = &tags;
    let keys = "env --default-signal=INT,QUIT";
    let script = format!(
        "setsid {keys} sleep {setsid} & {keys} python3 -c \"import os,time; os.setpgid(0,0); time.sleep({setpgid})\" & {keys} sleep {group} & sleep 0.5; echo lea\"\"der-gone-{n}"
    );
    let line = format!(
        r#"headroom guard --wait-free 0 -- sh -c '{}' {tag}; echo rc-{n}=$?"#,
        script.replace('\'', r"'\''")
    );
    (line, tags)
}

/// The pids of the processes (not the shell's own lines) whose command line holds `tag`.
fn pids_of(tag: &str) -> Vec<u32> {
    live_with_tag(tag)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
            let name = argv0.rsplit(|&b| b == b'/').next().unwrap_or_default();
            name == b"sleep" || name.starts_with(b"python3")
        })
        .collect()
}

#[test]
fn after_the_leader_exits_the_keys_reach_every_member_and_ctrl_z_suspends_the_guard() {
    // The leader exits and leaves members in a session of their own, a group of their own
    // and its own group. Ctrl-C and Ctrl-\ must reach each of them (not only the dead
    // leader's group), Ctrl-Z must suspend the guard with its job and `fg` continue both,
    // and the shell must get its prompt back. Both membership modes (a job cgroup as root).
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for own_cgroup in [false, true] {
        if own_cgroup && !root {
            eprintln!("SKIPPED: the job's own cgroup needs root");
            continue;
        }
        keys_after_the_leader_exits(own_cgroup);
    }
}

fn keys_after_the_leader_exits(own_cgroup: bool) {
    let mut sh = Shell::start_with(own_cgroup);
    for (n, key, name) in [(1, "\x03", "ctrl-c"), (2, "\x1c", "ctrl-backslash")] {
        let tag = tag(&format!("tty-orphans-{name}"));
        let (line, tags) = orphaned_members_job(&tag, n);
        sh.send(&line);
        sh.send("\n");
        assert!(
            sh.wait_for(&format!("leader-gone-{n}"), Duration::from_secs(10)),
            "{}",
            sh.output()
        );
        std::thread::sleep(Duration::from_millis(500));
        let members: Vec<u32> = tags.iter().flat_map(|t| pids_of(t)).collect();
        assert_eq!(members.len(), 3, "{}", processes());
        let in_job_cgroup = members.iter().all(|p| {
            std::fs::read_to_string(format!("/proc/{p}/cgroup"))
                .is_ok_and(|c| c.contains("headroom-job-"))
        });
        assert_eq!(in_job_cgroup, own_cgroup, "membership mode");
        sh.send(key);
        let gone = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            members.iter().all(|&p| state(p).is_none_or(|s| s == 'Z'))
        });
        assert!(gone, "{name} did not reach every member:\n{}", processes());
        assert!(
            sh.wait_for(&format!("rc-{n}="), Duration::from_secs(15)),
            "the guard did not end with its job: {}",
            sh.output()
        );
    }
    let tag = tag("tty-orphans-ctrl-z");
    let (line, tags) = orphaned_members_job(&tag, 3);
    sh.send(&line);
    sh.send("\n");
    assert!(
        sh.wait_for("leader-gone-3", Duration::from_secs(10)),
        "{}",
        sh.output()
    );
    std::thread::sleep(Duration::from_millis(500));
    let members: Vec<u32> = tags.iter().flat_map(|t| pids_of(t)).collect();
    assert_eq!(members.len(), 3, "{}", processes());
    sh.send("\x1a");
    assert!(
        sh.wait_for("Stopped", Duration::from_secs(20)),
        "the guard was not suspended: {}",
        sh.output()
    );
    let held = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        members.iter().all(|&p| state(p) == Some('T'))
    });
    assert!(
        held,
        "members ran on while the guard was suspended:\n{}",
        processes()
    );
    sh.send("fg\n");
    let running = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        members.iter().all(|&p| state(p).is_some_and(|s| s != 'T'))
    });
    assert!(running, "fg did not continue the members:\n{}", processes());
    std::thread::sleep(Duration::from_millis(300));
    sh.send("\x03");
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        members.iter().all(|&p| state(p).is_none_or(|s| s == 'Z'))
    });
    for &pid in &members {
        // SAFETY: kill has no memory-safety preconditions; the test's own sleeps.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(
        gone,
        "Ctrl-C after fg did not reach every member:\n{}",
        processes()
    );
    assert!(
        sh.wait_for("rc-3=", Duration::from_secs(15)),
        "{}",
        sh.output()
    );
}
