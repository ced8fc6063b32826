//! A guard that checks its own work (issue 17), with real processes and no root: a stop
//! reaches every member however many there are, output that nobody reads never delays a
//! stop, a pause undone from outside is seen, a guard killed outright leaves a job that
//! can still be resumed, requests are answered under a connection flood, and bad input is
//! a clear error. Each test looks at the processes afterwards, not only at what the guard
//! printed. (The cases that need root or real swap are in `as_root.rs` and the real-swap
//! files.)

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::guard::{
    all_in_state, continue_from_outside, control, leader_of, members, none_stopped, sleep_tag,
    socket_of, Guard, QUICK_GUARD, WAIT,
};
use support::{headroom, live_with_tag, proc_state, run_to_files, test_home, wait_until};

/// A guard over `sh -c SCRIPT` that never starts late and never stops by itself.
fn guard_script(script: &str, extra: &[&str], name: &str) -> Guard {
    let mut args = QUICK_GUARD.to_vec();
    args.extend(extra);
    args.extend(["--", "sh", "-c", script]);
    Guard::start(&args, name)
}

#[test]
fn a_stop_reaches_every_one_of_a_thousand_children() {
    // `/proc/PID/task/TID/children` gives one page per read: ~680 pids. The rest must be
    // found, stopped and counted too.
    let tag = sleep_tag(1);
    let script = format!("for i in $(seq 1000); do sleep {tag} & done; wait");
    let guard = guard_script(&script, &[], "thousand");
    let me = guard.pid();
    assert!(
        // The shell's own command line holds the tag too: 1 + 1000.
        wait_until(Duration::from_secs(60), || members(&tag, me).len() == 1001),
        "the sleeps did not start: {} of 1000",
        members(&tag, me).len().saturating_sub(1)
    );
    let leader = leader_of(&guard);
    let mut guard = guard;
    let (code, err) = control("stop", leader);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(guard.wait(), Some(3), "{}", guard.stderr());
    assert!(
        wait_until(WAIT, || members(&tag, me).is_empty()),
        "{} of 1001 still run after the stop: {}",
        members(&tag, me).len(),
        guard.stderr()
    );
    // The shell, its 1000 sleeps and the `seq` of its loop: every one counted.
    let stderr = guard.stderr();
    let counted: u32 = stderr
        .split(" processes")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(counted >= 1001, "{stderr}");
}

/// A pipe whose read end the test holds and never reads until told to.
struct StalledPipe {
    read: fs::File,
    write: fs::File,
}

impl StalledPipe {
    fn new() -> StalledPipe {
        let mut fds = [0; 2];
        // Close-on-exec: no other test's child may hold the write end open.
        // SAFETY: pipe2 writes two new fds into the array.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        use std::os::fd::FromRawFd;
        // SAFETY: both fds were just created and are owned here.
        let (read, write) =
            unsafe { (fs::File::from_raw_fd(fds[0]), fs::File::from_raw_fd(fds[1])) };
        StalledPipe { read, write }
    }

    /// Reads everything until the writers are gone, on a thread.
    fn drain(self) -> std::thread::JoinHandle<Vec<u8>> {
        drop(self.write);
        let mut read = self.read;
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = read.read_to_end(&mut out);
            out
        })
    }
}

#[test]
fn a_stalled_stderr_pipe_never_delays_a_stop() {
    // `headroom guard ... 2>&1 | less` with a reader that stopped reading: the job fills the
    // pipe first, then the guard's "stopping" line cannot be written. The stop must happen
    // all the same.
    let tag = sleep_tag(2);
    let pipe = StalledPipe::new();
    let script = format!("yes {tag} | head -c 300000 >&2 & exec sleep {tag}");
    let mut child = headroom()
        .args([
            "guard",
            "--wait-free",
            "0",
            "--kill-free",
            "99.9",
            "--poll",
            "0.2s",
        ])
        .args(["--grace", "1s", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(pipe.write.try_clone().unwrap())
        .spawn()
        .unwrap();
    let me = child.id();
    assert!(
        wait_until(WAIT, || !members(&tag, me).is_empty()),
        "the job did not start"
    );
    let stopped = wait_until(Duration::from_secs(20), || members(&tag, me).is_empty());
    let still = members(&tag, me);
    let out = pipe.drain();
    let status = child.wait().unwrap();
    let text = String::from_utf8_lossy(&out.join().unwrap()).into_owned();
    assert!(
        stopped,
        "the job ran on while stderr was not read: {still:?}"
    );
    assert_eq!(
        status.code(),
        Some(3),
        "{}",
        text.lines().last().unwrap_or("")
    );
    assert!(
        text.contains("stopping"),
        "the lines were kept and written late"
    );
}

#[test]
fn a_trace_nobody_reads_never_delays_a_stop() {
    let tag = sleep_tag(3);
    let fifo = test_home().join("stalled-trace.fifo");
    let _ = fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // The test holds both ends (O_RDWR on a FIFO never blocks on Linux) and reads nothing.
    let mut held = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let fifo_arg = fifo.display().to_string();
    let mut guard = guard_script(
        &format!("exec sleep {tag}"),
        &["--trace", &fifo_arg],
        "fifo",
    );
    let leader = leader_of(&guard);
    // Fill the FIFO to the brim: the guard's next trace line blocks.
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl on our own fd.
    unsafe { libc::fcntl(held.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let junk = vec![b'x'; 4096];
    while held.write(&junk).is_ok() {}
    let (code, err) = control("stop", leader);
    assert_eq!(code, Some(0), "{err}");
    let gone = wait_until(Duration::from_secs(10), || {
        live_with_tag(&tag).iter().all(|&p| p == guard.pid())
    });
    let mut sink = Vec::new();
    let reader = std::thread::spawn(move || {
        // SAFETY: fcntl on our own fd.
        unsafe { libc::fcntl(held.as_raw_fd(), libc::F_SETFL, 0) };
        let _ = held.read_to_end(&mut sink);
    });
    assert!(
        gone,
        "the job ran on while its trace blocked: {}",
        guard.stderr()
    );
    assert_eq!(guard.wait(), Some(3), "{}", guard.stderr());
    drop(reader);
}

#[test]
fn a_paused_job_continued_from_outside_is_guarded_again() {
    let tag = sleep_tag(4);
    let script = format!("sleep {tag} & sleep {tag} & wait");
    let mut guard = guard_script(&script, &["--on-budget", "pause"], "cont-outside");
    let me = guard.pid();
    assert!(wait_until(WAIT, || members(&tag, me).len() == 3));
    let leader = leader_of(&guard);
    assert_eq!(control("pause", leader).0, Some(0));
    assert!(
        wait_until(WAIT, || all_in_state(&tag, me, 'T')),
        "not paused"
    );
    // Once the guard has seen the pause take effect (it checks at once until it does):
    std::thread::sleep(Duration::from_millis(300));
    continue_from_outside(&members(&tag, me));
    assert!(wait_until(WAIT, || none_stopped(&tag, me)));
    assert!(
        guard.said("runs again"),
        "the guard did not see the job run again: {}",
        guard.stderr()
    );
    // Running, as far as the guard is concerned: it can be paused again, not resumed.
    let (code, err) = control("resume", leader);
    assert_eq!(code, Some(2), "resumed a job that runs: {err}");
    assert!(err.contains("not paused"), "{err}");
    assert_eq!(control("pause", leader).0, Some(0));
    assert!(
        wait_until(WAIT, || all_in_state(&tag, me, 'T')),
        "not paused again"
    );
    assert_eq!(control("stop", leader).0, Some(0));
    assert_eq!(guard.wait(), Some(3), "{}", guard.stderr());
    assert!(
        guard.stderr().contains("paused twice"),
        "{}",
        guard.stderr()
    );
    assert!(wait_until(WAIT, || members(&tag, me).is_empty()));
}

#[test]
fn a_guard_killed_outright_leaves_a_job_that_can_be_resumed() {
    // A setsid member is in a session of its own: the kernel's SIGHUP/SIGCONT for an orphaned
    // process group never reaches it. The job file says who guarded it; once that guard is
    // gone the job is "unguarded" and `headroom resume` continues it.
    let tag = sleep_tag(6);
    let script = format!("setsid sleep {tag} & exec sleep {tag}");
    let mut guard = guard_script(&script, &["--on-budget", "pause"], "killed-guard");
    let me = guard.pid();
    assert!(wait_until(WAIT, || members(&tag, me).len() == 2));
    let leader = leader_of(&guard);
    assert_eq!(control("pause", leader).0, Some(0));
    assert!(wait_until(WAIT, || all_in_state(&tag, me, 'T')));
    // The job file is written on the guard's output thread, a moment after the pause: the
    // guard is killed once `status` shows the job paused (what a user would see first).
    let status_of_leader = || {
        let (_, status, _) = run_to_files({
            let mut cmd = headroom();
            cmd.arg("status");
            cmd
        });
        status
            .lines()
            .find(|line| line.split_whitespace().next() == Some(leader.to_string().as_str()))
            .map(str::to_owned)
    };
    assert!(
        wait_until(WAIT, || status_of_leader()
            .is_some_and(|l| l.contains("paused"))),
        "status never showed the job paused"
    );
    guard.child.kill().unwrap();
    guard.child.wait().unwrap();
    // The leader's group was orphaned: SIGHUP ended it. The setsid sleep stays stopped.
    assert!(wait_until(WAIT, || members(&tag, me).len() == 1));
    let left = members(&tag, me)[0];
    assert_eq!(proc_state(left), Some('T'));
    let (code, status, err) = run_to_files({
        let mut cmd = headroom();
        cmd.arg("status");
        cmd
    });
    assert_eq!(code, Some(0), "{err}");
    assert!(
        status.contains("unguarded"),
        "status does not say the job lost its guard:\n{status}"
    );
    let (code, err) = control("resume", leader);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        wait_until(WAIT, || proc_state(left).is_some_and(|s| s != 'T')),
        "the setsid member is still stopped"
    );
    // SAFETY: our test's own sleep.
    unsafe { libc::kill(left as i32, libc::SIGKILL) };
}

#[test]
fn a_watch_killed_outright_leaves_a_process_that_can_be_resumed() {
    let tag = sleep_tag(7);
    let mut sleep = KilledAtEnd(Command::new("sleep").arg(&tag).spawn().unwrap());
    let pid = sleep.0.id();
    let pid_arg = pid.to_string();
    let mut watch = Guard::start(
        &[
            "watch",
            &pid_arg,
            "--guard",
            "--on-budget",
            "pause",
            "--poll",
            "0.2s",
        ],
        "killed-watch",
    );
    assert!(
        wait_until(WAIT, || control("pause", pid).0 == Some(0)),
        "{}",
        watch.stderr()
    );
    assert!(wait_until(WAIT, || proc_state(pid) == Some('T')));
    watch.child.kill().unwrap();
    watch.child.wait().unwrap();
    assert_eq!(proc_state(pid), Some('T'));
    let (code, err) = control("resume", pid);
    assert_eq!(code, Some(0), "{err}");
    assert!(wait_until(WAIT, || proc_state(pid).is_some_and(|s| s != 'T')));
    let _ = sleep.0.kill();
}

/// A child killed and reaped when the test ends, failed or not (a stopped one left behind
/// would hold whatever it inherited, such as a build lock).
struct KilledAtEnd(std::process::Child);

impl Drop for KilledAtEnd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_stop_is_answered_under_a_connection_flood() {
    let tag = sleep_tag(8);
    let mut guard = guard_script(&format!("exec sleep {tag}"), &[], "flood");
    let leader = leader_of(&guard);
    let mut socket = None;
    assert!(wait_until(WAIT, || {
        socket = socket_of(guard.pid());
        socket.is_some()
    }));
    let socket = socket.unwrap();
    // 500 connections that send nothing, and one that drips a byte every 100 ms.
    let idle: Vec<UnixStream> = (0..500)
        .filter_map(|_| UnixStream::connect(&socket).ok())
        .collect();
    assert!(idle.len() >= 100, "only {} connections", idle.len());
    let mut drip = UnixStream::connect(&socket).unwrap();
    let dripping = std::thread::spawn(move || {
        for _ in 0..100 {
            if drip.write_all(b" ").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let asked = Instant::now();
    let (code, err) = control("stop", leader);
    let answered = asked.elapsed();
    assert_eq!(
        code,
        Some(0),
        "a stop under load was reported as failed: {err}"
    );
    assert!(
        answered < Duration::from_secs(5),
        "answered after {answered:?}"
    );
    assert_eq!(guard.wait(), Some(3), "{}", guard.stderr());
    assert!(wait_until(WAIT, || live_with_tag(&tag).is_empty()));
    drop(idle);
    let _ = dripping.join();
}

/// Opens connections to `socket` as fast as it can until `stop`, keeping the newest 200 open
/// and sending nothing on any: the oldest are closed as new ones come, so the guard's
/// server always has more connections than it serves at once.
fn flood(socket: std::path::PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut open = std::collections::VecDeque::new();
        let mut made = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if let Ok(s) = UnixStream::connect(&socket) {
                open.push_back(s);
                made += 1;
            }
            if open.len() > 200 {
                open.pop_front();
            }
        }
        made
    })
}

#[test]
fn under_a_flood_a_request_said_failed_was_not_carried_out() {
    // A request the guard took is answered; only one not taken yet may be dropped. Each
    // pause and resume is checked against the process in /proc: exit 0 and the job is in
    // the asked state; any other exit and it is not.
    let tag = sleep_tag(11);
    let mut guard = guard_script(&format!("exec sleep {tag}"), &[], "flood-pause");
    let leader = leader_of(&guard);
    let mut socket = None;
    assert!(wait_until(WAIT, || {
        socket = socket_of(guard.pid());
        socket.is_some()
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let flooding = flood(socket.unwrap(), Arc::clone(&stop));
    let stopped = || proc_state(leader) == Some('T');
    let (mut paused, mut done, mut failed) = (false, 0, 0);
    for round in 0..40 {
        let verb = if paused { "resume" } else { "pause" };
        let (code, err) = control(verb, leader);
        if code == Some(0) {
            done += 1;
            paused = !paused;
            assert!(
                wait_until(WAIT, || stopped() == paused),
                "round {round}: {verb} said done, the job is not {verb}d: {err}"
            );
        } else {
            failed += 1;
            // Not carried out: the state stays as it was, however long one waits.
            std::thread::sleep(Duration::from_millis(1500));
            assert_eq!(
                stopped(),
                paused,
                "round {round}: {verb} exited {code:?} ({err}), yet it was carried out"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let made = flooding.join().unwrap();
    assert!(made > 1000, "the flood made only {made} connections");
    eprintln!("{done} requests done, {failed} refused under the flood of {made} connections");
    let _ = control("resume", leader);
    assert_eq!(control("stop", leader).0, Some(0));
    assert_eq!(guard.wait(), Some(3), "{}", guard.stderr());
}

#[test]
fn a_malformed_trace_is_an_error_naming_its_line() {
    let dir = test_home().join("bad-traces");
    fs::create_dir_all(&dir).unwrap();
    let huge_t = dir.join("huge-t.jsonl");
    fs::write(
        &huge_t,
        "{\"type\":\"sample\",\"t\":0,\"footprint\":1,\"swap_used\":0,\"level\":50}\n\
         {\"type\":\"sample\",\"t\":1e308,\"footprint\":1,\"swap_used\":0,\"level\":50}\n",
    )
    .unwrap();
    let long_line = dir.join("long-line.jsonl");
    let mut text =
        b"{\"type\":\"sample\",\"t\":0,\"footprint\":1,\"swap_used\":0,\"level\":50}\n".to_vec();
    text.extend(std::iter::repeat_n(b'x', 3 << 20));
    text.push(b'\n');
    fs::write(&long_line, text).unwrap();
    let bad_last = dir.join("bad-last.jsonl");
    fs::write(
        &bad_last,
        "{\"type\":\"sample\",\"t\":0,\"footprint\":1,\"swap_used\":0,\"level\":50}\n\
         this is not json\n",
    )
    .unwrap();
    let cases = [
        (huge_t.display().to_string(), ":2", "summary"),
        (huge_t.display().to_string(), ":2", "replay"),
        (long_line.display().to_string(), ":2", "summary"),
        ("/dev/zero".to_string(), ":1", "summary"),
        (bad_last.display().to_string(), ":2", "summary"),
    ];
    for (file, line, verb) in cases {
        let started = Instant::now();
        let mut cmd = headroom();
        cmd.args(["trace", verb, &file]);
        let (code, _, err) = run_to_files(cmd);
        assert_eq!(code, Some(2), "trace {verb} {file}: {err}");
        assert!(err.contains(&format!("{file}{line}")), "{file}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{file} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn json_to_a_closed_pipe_keeps_the_jobs_exit_code() {
    let script = format!(
        "set -o pipefail; '{}' guard --wait-free 0 --json -- sh -c 'exit 7' | head -c 1 >/dev/null",
        support::headroom_bin().display()
    );
    let status = Command::new("bash")
        .args(["-c", &script])
        .env("HEADROOM_HOME", test_home())
        .env("HEADROOM_JOB_CGROUP", "off")
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(7));
}

#[test]
fn a_trace_fifo_without_a_reader_is_refused_at_once() {
    let fifo = test_home().join("no-reader.fifo");
    let _ = fs::remove_file(&fifo);
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = headroom()
        .args(["guard", "--wait-free", "0", "--trace"])
        .arg(&fifo)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ended = wait_until(Duration::from_secs(10), || {
        child.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    assert!(ended, "guard hung opening a FIFO nobody reads");
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("--trace"), "{err}");
}

#[test]
fn status_escapes_terminal_codes_in_command_lines() {
    let evil = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J";
    let mut sh = Command::new("sh")
        .args(["-c", "sleep 60", evil])
        .spawn()
        .unwrap();
    let mut cmd = headroom();
    cmd.args(["status", "--top", "100000"]);
    let (code, out, err) = run_to_files(cmd);
    let _ = sh.kill();
    let _ = sh.wait();
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("evil"), "the process is not listed");
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{7}'),
        "raw terminal codes in status"
    );
}

#[test]
fn a_job_stopped_on_request_is_not_judged() {
    let tag = sleep_tag(9);
    let mut guard = guard_script(&format!("exec sleep {tag}"), &[], "requested");
    let leader = leader_of(&guard);
    assert_eq!(control("stop", leader).0, Some(0));
    assert_eq!(guard.wait(), Some(3));
    let stderr = guard.stderr();
    assert!(stderr.contains("stopped on request"), "{stderr}");
    assert!(!stderr.contains("doesn't fit"), "{stderr}");
}

#[test]
fn a_long_home_keeps_pause_resume_and_stop() {
    // The socket must not live under a path longer than sun_path allows.
    let home = test_home().join("h".repeat(90)).join("o".repeat(60));
    fs::create_dir_all(&home).unwrap();
    let tag = sleep_tag(10);
    let mut child = headroom()
        .env("HEADROOM_HOME", &home)
        .env("HEADROOM_JOB_CGROUP", "off")
        .args([
            "guard",
            "--wait-free",
            "0",
            "--poll",
            "0.2s",
            "--",
            "sleep",
            &tag,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let me = child.id();
    assert!(wait_until(WAIT, || members(&tag, me).len() == 1));
    let leader = members(&tag, me)[0];
    let ask = |verb: &str| {
        Command::new(support::headroom_bin())
            .env("HEADROOM_HOME", &home)
            .env("HEADROOM_JOB_CGROUP", "off")
            .args([verb, &leader.to_string()])
            .output()
            .unwrap()
    };
    let paused = ask("pause");
    assert_eq!(
        paused.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&paused.stderr)
    );
    assert!(wait_until(WAIT, || proc_state(leader) == Some('T')));
    assert_eq!(ask("stop").status.code(), Some(0));
    let status = child.wait().unwrap();
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(!err.contains("marks are off"), "{err}");
}

#[test]
fn a_background_child_outlives_a_fast_leader() {
    // The leader exits at once, its background child runs on: the job is that child until
    // it ends, whatever the timing of the first look.
    for i in 0..30 {
        let tag = format!("0.3{}{i:02}", std::process::id());
        let mut cmd = headroom();
        cmd.args(["guard", "--wait-free", "0", "--json", "--", "sh", "-c"])
            .arg(format!("sleep {tag} & echo started"));
        let (code, out, err) = run_to_files(cmd);
        assert_eq!(code, Some(0), "{err}");
        // (The job's own "started" comes first on the same stdout.)
        let json = &out[out.find('{').unwrap_or(0)..];
        let json: serde_json::Value = serde_json::from_str(json).unwrap();
        let seconds = json["verdict"]["duration"]["secs"].as_f64().unwrap_or(0.0)
            + json["verdict"]["duration"]["nanos"].as_f64().unwrap_or(0.0) / 1e9;
        assert!(
            seconds >= 0.25,
            "try {i}: the job ended after {seconds} s: {err}"
        );
        assert!(
            live_with_tag(&tag).is_empty(),
            "try {i}: the background child was left"
        );
    }
}
