//! A job whose guard is gone (killed outright), taken over by `headroom pause|resume|stop`
//! (issue 33), in both membership modes: the job's own cgroup (as root) and its processes
//! (`HEADROOM_JOB_CGROUP=off`, how a Mac tracks members). The request is verified as the
//! live guard verifies it: every process of the job (its cgroup, or its whole process tree)
//! is looked at again, survivors are named, refusals are said, the exit code is honest, and
//! no cgroup is left behind once the job ends, whoever ends it. Each test looks at the
//! processes and cgroups afterwards, not only at what Headroom printed.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "linux")]

use crate::support;

use std::path::PathBuf;
use std::sync::MutexGuard;
use std::time::Duration;

use support::guard::{control, leader_of, members, sleep_tag, Guard, Leftovers, QUICK_GUARD, WAIT};
use support::{
    cgroup_dirs_of, cgroup_frozen, headroom, proc_state, real_swap_lock, run_to_files, wait_until,
};

/// How the job's members are found.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// The job's own cgroup (root).
    Cgroup,
    /// Its processes (`HEADROOM_JOB_CGROUP=off`).
    Processes,
}

/// The modes this machine can test: both as root (the lock serialises the tests that make
/// cgroups), only the processes otherwise.
fn modes() -> (Vec<Mode>, Option<MutexGuard<'static, ()>>) {
    match real_swap_lock() {
        Some(lock) => (vec![Mode::Processes, Mode::Cgroup], Some(lock)),
        None => (vec![Mode::Processes], None),
    }
}

/// A guard over `sh -c SCRIPT` in `mode`, checked every 0.2 s, 1 s of grace.
fn guard(mode: Mode, script: &str, name: &str) -> Guard {
    let mut args = QUICK_GUARD.to_vec();
    args.extend(["--", "sh", "-c", script]);
    match mode {
        Mode::Cgroup => Guard::start_in_own_cgroup(&args, name),
        Mode::Processes => Guard::start(&args, name),
    }
}

/// The jobs `headroom status` lists: (pid, state).
fn listed_jobs() -> Vec<(u32, String)> {
    let (code, out, err) = run_to_files({
        let mut cmd = headroom();
        cmd.args(["status", "--json", "--top", "0"]);
        cmd
    });
    assert_eq!(code, Some(0), "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    json["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["pid"].as_u64().unwrap() as u32,
                j["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Kills the guard outright once `status` shows the job of `leader` in `state` (its job
/// file is written on the guard's output thread, a moment after the change).
fn kill_guard_once(guard: &mut Guard, leader: u32, state: &str) {
    assert!(
        wait_until(WAIT, || listed_jobs()
            .iter()
            .any(|(pid, s)| *pid == leader && s == state)),
        "status never showed the job {state}: {}",
        guard.stderr()
    );
    guard.child.kill().unwrap();
    guard.child.wait().unwrap();
    assert!(
        wait_until(WAIT, || listed_jobs()
            .iter()
            .any(|(pid, s)| *pid == leader && s == "unguarded")),
        "status does not say the job lost its guard"
    );
}

#[test]
fn a_forking_job_whose_guard_is_gone_is_stopped_whole() {
    // The job forks every 20 ms; its guard is killed outright. `headroom stop` must stop
    // every process of the job, not only those its file listed, and say "stopped" only
    // once no process of it is left.
    let (modes, _lock) = modes();
    for (n, mode) in modes.into_iter().enumerate() {
        let tag = sleep_tag(60 + n as u32);
        let script = format!("while :; do sleep {tag} & sleep 0.02; done");
        let mut guard = guard(mode, &script, &format!("forking-{n}"));
        let me = guard.pid();
        let _leftovers = Leftovers {
            tag: tag.clone(),
            guard: me,
        };
        assert!(
            wait_until(WAIT, || members(&tag, me).len() >= 8),
            "{mode:?}: the job did not fork: {}",
            guard.stderr()
        );
        let leader = leader_of(&guard);
        let cgroups = cgroup_dirs_of(leader);
        kill_guard_once(&mut guard, leader, "running");
        // It goes on forking without its guard.
        std::thread::sleep(Duration::from_millis(500));
        let (code, err) = control("stop", leader);
        let left = members(&tag, me);
        assert_eq!(code, Some(0), "{mode:?}: {err}");
        assert!(err.contains("stopped"), "{mode:?}: {err}");
        assert!(
            left.is_empty(),
            "{mode:?}: {} processes still run after {err:?}",
            left.len()
        );
        assert!(
            !listed_jobs().iter().any(|(pid, _)| *pid == leader),
            "{mode:?}: status still lists the stopped job"
        );
        if mode == Mode::Cgroup {
            assert!(
                cgroups.iter().all(|d| !d.exists()),
                "{mode:?}: {cgroups:?} left behind"
            );
        }
    }
}

#[test]
fn a_member_of_another_user_makes_a_stop_without_guard_not_stopped() {
    // As the live guard exits 6 "NOT stopped", so does a stop of a job whose guard is gone:
    // the member it may not signal is named, the others are stopped, the job stays listed.
    let (modes, lock) = modes();
    if lock.is_none() {
        eprintln!("SKIPPED: a member of another user needs root (setpriv)");
        return;
    }
    for (n, mode) in modes.into_iter().enumerate() {
        let tag = sleep_tag(70 + n as u32);
        let script = format!(
            "setpriv --reuid=65534 --regid=65534 --clear-groups sleep {tag} & exec sleep {tag}"
        );
        let mut guard = guard(mode, &script, &format!("other-user-{n}"));
        let me = guard.pid();
        let _leftovers = Leftovers {
            tag: tag.clone(),
            guard: me,
        };
        assert!(
            wait_until(WAIT, || members(&tag, me).len() == 2),
            "{}",
            guard.stderr()
        );
        let leader = leader_of(&guard);
        let nobody = members(&tag, me)
            .into_iter()
            .find(|&p| p != leader)
            .unwrap();
        let cgroups = cgroup_dirs_of(leader);
        kill_guard_once(&mut guard, leader, "running");
        let (code, err) = control("stop", leader);
        assert_eq!(code, Some(6), "{mode:?}: {err}");
        assert!(
            err.contains("NOT stopped") && err.contains(&nobody.to_string()),
            "{mode:?}: the survivor is not named: {err}"
        );
        assert!(err.contains("65534"), "{mode:?}: why it survived: {err}");
        assert_eq!(proc_state(leader), None, "{mode:?}: our own member runs");
        assert!(
            proc_state(nobody).is_some(),
            "{mode:?}: nobody's was stopped"
        );
        assert!(
            listed_jobs()
                .iter()
                .any(|(pid, s)| *pid == leader && s == "unguarded"),
            "{mode:?}: the job that was not stopped is no longer listed"
        );
        // Once its last process ends (here: ended by root), the next look removes what
        // the job left: its file, and its cgroup.
        // SAFETY: kill has no memory-safety preconditions; the test's own sleep.
        unsafe { libc::kill(nobody as i32, libc::SIGKILL) };
        assert!(wait_until(WAIT, || proc_state(nobody).is_none()));
        assert!(
            !listed_jobs().iter().any(|(pid, _)| *pid == leader),
            "{mode:?}: the ended job is still listed"
        );
        if mode == Mode::Cgroup {
            assert!(
                cgroups.iter().all(|d| !d.exists()),
                "{mode:?}: {cgroups:?} left behind"
            );
        }
    }
}

/// True when every process of `pids` that lives is held: frozen in its cgroup, or stopped.
fn held(mode: Mode, cgroups: &[PathBuf], pids: &[u32]) -> bool {
    match mode {
        Mode::Cgroup => cgroup_frozen(cgroups),
        Mode::Processes => pids.iter().all(|&p| proc_state(p).is_none_or(|s| s == 'T')),
    }
}

/// True when no process of `pids` is held (nor frozen, nor stopped).
fn running(mode: Mode, cgroups: &[PathBuf], pids: &[u32]) -> bool {
    (mode == Mode::Processes || !cgroup_frozen(cgroups))
        && pids.iter().all(|&p| proc_state(p) != Some('T'))
}

#[test]
fn a_paused_job_whose_guard_is_gone_is_resumed_paused_and_stopped() {
    // Paused (frozen in its cgroup, or SIGSTOPped), then the guard is killed outright: the
    // job must still be resumed, paused again and stopped, each verified at once, and
    // leave no cgroup behind.
    let (modes, _lock) = modes();
    for (n, mode) in modes.into_iter().enumerate() {
        let tag = sleep_tag(80 + n as u32);
        let script = format!("setsid sleep {tag} & exec sleep {tag}");
        let mut guard = guard(mode, &script, &format!("paused-{n}"));
        let me = guard.pid();
        let _leftovers = Leftovers {
            tag: tag.clone(),
            guard: me,
        };
        assert!(wait_until(WAIT, || members(&tag, me).len() == 2));
        let leader = leader_of(&guard);
        let cgroups = cgroup_dirs_of(leader);
        assert_eq!(control("pause", leader).0, Some(0));
        assert!(wait_until(WAIT, || held(
            mode,
            &cgroups,
            &members(&tag, me)
        )));
        kill_guard_once(&mut guard, leader, "paused");
        // (Without a cgroup, the stopped leader's orphaned group gets SIGHUP: it may end.)
        let pids = members(&tag, me);
        assert!(!pids.is_empty(), "{mode:?}");
        assert!(held(mode, &cgroups, &pids), "{mode:?}: no longer paused");
        let (code, err) = control("resume", leader);
        assert_eq!(code, Some(0), "{mode:?}: {err}");
        assert!(
            running(mode, &cgroups, &pids),
            "{mode:?}: still held after {err:?}"
        );
        let (code, err) = control("pause", leader);
        assert_eq!(code, Some(0), "{mode:?}: {err}");
        assert!(
            held(mode, &cgroups, &members(&tag, me)),
            "{mode:?}: not held after {err:?}"
        );
        let (code, err) = control("stop", leader);
        assert_eq!(code, Some(0), "{mode:?}: {err}");
        let left = members(&tag, me);
        assert!(left.is_empty(), "{mode:?}: {left:?} run after {err:?}");
        if mode == Mode::Cgroup {
            assert!(
                cgroups.iter().all(|d| !d.exists()),
                "{mode:?}: {cgroups:?} left behind"
            );
        }
    }
}

#[test]
fn what_a_job_forks_after_its_guard_died_is_stopped_too() {
    // The job forks a `setsid`, double-forked worker after its guard is killed outright: the
    // worker is re-parented to init (no subreaper holds it any more), in no listed member's
    // tree. A stop without the guard must find it (its cgroup; else the job's mark in its
    // environment) and stop it, and say "stopped" only then.
    let (modes, _lock) = modes();
    for (n, mode) in modes.into_iter().enumerate() {
        let tag = sleep_tag(80 + n as u32);
        let script = format!("sleep 1.5; setsid sh -c 'sleep {tag} &'; sleep 3600");
        let mut guard = guard(mode, &script, &format!("late-fork-{n}"));
        let me = guard.pid();
        let _leftovers = Leftovers {
            tag: tag.clone(),
            guard: me,
        };
        let leader = leader_of(&guard);
        kill_guard_once(&mut guard, leader, "running");
        // The worker: the `sleep` of the tag (the leader's command line holds it too).
        let sleeper = || {
            members(&tag, me).into_iter().find(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
            })
        };
        assert!(
            wait_until(WAIT, || sleeper().is_some()),
            "{mode:?}: the job did not fork its worker"
        );
        let worker = sleeper().unwrap();
        assert_ne!(
            support::guard::ppid(worker),
            Some(leader),
            "{mode:?}: not re-parented"
        );
        let (code, err) = control("stop", leader);
        assert_eq!(code, Some(0), "{mode:?}: {err}");
        assert!(err.contains("stopped"), "{mode:?}: {err}");
        assert!(
            wait_until(Duration::from_secs(2), || {
                matches!(proc_state(worker), None | Some('Z'))
            }),
            "{mode:?}: the late worker {worker} runs on after {err:?}"
        );
        // Every cgroup made for the job (memory and freezer) is removed with it.
        let left = support::guard::job_cgroups_of(me);
        assert!(left.is_empty(), "{mode:?}: {left:?} left behind");
    }
}

/// A guard over `sh -c SCRIPT` in `mode` whose limit on open files, soft and hard, is `n`.
fn guard_with_open_files(mode: Mode, script: &str, name: &str, n: u64) -> Guard {
    use std::os::unix::process::CommandExt;
    let mut cmd = headroom();
    if mode == Mode::Cgroup {
        cmd.env_remove("HEADROOM_JOB_CGROUP");
    }
    // SAFETY: between fork and exec only async-signal-safe calls: setrlimit on a stack value.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: n,
                rlim_max: n,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let stderr = support::test_home().join(format!("{name}.stderr"));
    let child = cmd
        .args(QUICK_GUARD)
        .args(["--", "sh", "-c", script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    Guard { child, stderr }
}

#[test]
fn a_guard_out_of_descriptors_still_sees_and_stops_its_whole_job() {
    // 120 processes under a guard whose limit on open files is 64, hard: it holds fewer
    // descriptors for speed (kept /proc files, exit watches) and keeps a reserve for what it
    // cannot do without, so it sees every process, writes its job file, and stops them all.
    let (modes, _lock) = modes();
    for (n, mode) in modes.into_iter().enumerate() {
        let tag = sleep_tag(90 + n as u32);
        let script = format!("i=0; while [ $i -lt 120 ]; do sleep {tag} & i=$((i+1)); done; wait");
        let mut guard = guard_with_open_files(mode, &script, &format!("fds-{n}"), 64);
        let me = guard.pid();
        let _leftovers = Leftovers {
            tag: tag.clone(),
            guard: me,
        };
        assert!(
            wait_until(WAIT, || members(&tag, me).len() == 121),
            "{mode:?}: the job did not start: {}",
            guard.stderr()
        );
        let leader = leader_of(&guard);
        assert!(
            wait_until(WAIT, || listed_jobs().iter().any(|(pid, _)| *pid == leader)),
            "{mode:?}: no job file: {}",
            guard.stderr()
        );
        // A few checks with every member known.
        std::thread::sleep(Duration::from_millis(800));
        let (code, err) = control("stop", leader);
        assert_eq!(code, Some(0), "{mode:?}: {err} {}", guard.stderr());
        let left = members(&tag, me);
        assert!(
            left.is_empty(),
            "{mode:?}: {} still run: {}",
            left.len(),
            guard.stderr()
        );
        assert_eq!(guard.wait(), Some(3), "{mode:?}: {}", guard.stderr());
        let said = guard.stderr();
        assert!(!said.contains("Too many open files"), "{mode:?}: {said}");
        let left = support::guard::job_cgroups_of(me);
        assert!(left.is_empty(), "{mode:?}: {left:?} left behind");
    }
}

/// A job whose guard was killed outright and that then ended by itself left its cgroups
/// behind, empty, with no Headroom process left to remove them (issue 42 §7: a Python test
/// left one a CI run). The next guard started beside them removes them; it keeps the cgroup
/// of a live guard's job and of a guardless job that still runs (a takeover needs that one).
#[test]
fn the_empty_cgroup_of_a_job_whose_guard_was_killed_is_removed_by_the_next_guard() {
    use headroom_os::unix::cgroup::ORPHAN_AGE;
    use support::guard::job_cgroups_of;
    let Some(_lock) = real_swap_lock() else {
        return; // said why: making cgroups needs root
    };
    let started = std::time::Instant::now();
    let tag = sleep_tag(90);
    // Killed, its job ends by itself a moment later.
    let mut ended = guard(Mode::Cgroup, "sleep 1.5", "orphan-ended");
    // Killed, its job runs on.
    let mut running = guard(Mode::Cgroup, &format!("sleep {tag}"), "orphan-running");
    // Alive, its job runs.
    let live = guard(Mode::Cgroup, &format!("sleep {tag}"), "orphan-live");
    let _leftovers = [ended.pid(), running.pid(), live.pid()].map(|guard| Leftovers {
        tag: tag.clone(),
        guard,
    });
    for g in [&ended, &running, &live] {
        assert!(
            wait_until(WAIT, || !job_cgroups_of(g.pid()).is_empty()),
            "no job cgroup made: {}",
            g.stderr()
        );
    }
    for g in [&mut ended, &mut running] {
        g.child.kill().unwrap();
        g.child.wait().unwrap();
    }
    let ended_dirs = job_cgroups_of(ended.pid());
    assert!(
        wait_until(WAIT, || ended_dirs.iter().all(|d| fs_procs(d).is_empty())),
        "the job did not end"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        ended_dirs.iter().all(|d| d.exists()),
        "nothing removed them yet: {ended_dirs:?}"
    );
    // Old enough to be taken for a dead guard's (a cgroup just made is never removed).
    std::thread::sleep((ORPHAN_AGE + Duration::from_millis(500)).saturating_sub(started.elapsed()));
    let mut next = guard(Mode::Cgroup, "true", "orphan-next");
    assert_eq!(
        next.child.wait().unwrap().code(),
        Some(0),
        "{}",
        next.stderr()
    );
    assert!(
        ended_dirs.iter().all(|d| !d.exists()),
        "left behind: {ended_dirs:?}: {}",
        next.stderr()
    );
    assert!(
        !job_cgroups_of(running.pid()).is_empty(),
        "the cgroup of a guardless job that runs was removed"
    );
    assert!(
        !job_cgroups_of(live.pid()).is_empty(),
        "a live guard's job cgroup was removed"
    );
    assert!(
        job_cgroups_of(next.pid()).is_empty(),
        "the next guard left its own"
    );
}

/// The processes in cgroup `dir` (none when it is gone).
fn fs_procs(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}
