//! A Mac in a box, for tests: a process table with macOS's rules behind [`Xnu`] (and
//! [`SendSignal`]), so the macOS reader ([`super::reader::XnuReader`]) and everything above it
//! (members, the stop, the pause, the boot id) run on Linux as they would on a Mac.
//!
//! The rules, each from xnu (cited in `os/src/counters/xnu.rs` and in
//! docs/verification.md):
//! - no subreaper: a process whose parent exits is re-parented to launchd (pid 1), which
//!   reaps its zombies at once; a live process group's id is never reused;
//! - `PROC_PIDTBSDINFO`, `PROC_PIDT_SHORTBSDINFO` and `PROC_PIDUNIQIDENTIFIERINFO` find a
//!   zombie only with `arg != 0`; pid listings include zombies;
//! - across effective uids (the reader not root) `PROC_PIDTBSDINFO` and `proc_pid_rusage` are
//!   EPERM, `KERN_PROCARGS2` is refused, `SHORTBSDINFO` and the unique ids are answered; a
//!   signal to another uid's process is EPERM;
//! - pids are handed out in sequence, wrapping at [`PID_MAX`], skipping live ones (and zombies);
//! - a stopped process keeps SIGTERM pending until it is continued;
//! - `host_statistics64` shares one budget and one cache among all third-party callers: in a
//!   window of 1 s after a real call, a random 2 to 10 calls are real (xnu's
//!   `rate_limit_host_statistics`; here from a seeded generator), the rest get the cached
//!   answer;
//! - `kern.boottime` moves when the clock is set; `kern.bootsessionuuid` does not;
//! - memory is pages, with xnu's accounting ([`pages`]): the level, the page counts, swap
//!   (files grown on demand) and each footprint are derived, never set;
//! - exec re-inserts the process under its parent (`pinsertchild`), which resets
//!   `p_puniqueid` to the current parent's unique id: an orphan re-parented to launchd that
//!   then execs names launchd as its parent;
//! - a zombie's `proc_pid_rusage` answers with a footprint of 0 and its lifetime peak.

#![allow(clippy::unwrap_used)] // test support: a panic is a failed test

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{vm, OncePerInterval, VmAnswer};
use pages::{Holder, Memory};

mod kernel;
pub mod pages;
use crate::counters::Result;
use crate::error::CounterError;

/// xnu's `PID_MAX`.
pub const PID_MAX: u32 = 99_999;
/// Real `host_statistics64` answers per window among all callers: xnu draws a number
/// from 2 to 10 for each window.
pub const HOST_STATS_REAL_PER_WINDOW: std::ops::RangeInclusive<u32> = 2..=10;
const HOST_STATS_WINDOW: Duration = Duration::from_secs(1);

/// A process's state in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// Running or asleep.
    Running,
    /// Stopped by SIGSTOP.
    Stopped,
    /// Exited, not reaped.
    Zombie,
    /// In `exit` (killed, freeing its memory): `SRUN` with `PROC_FLAG_INEXIT`.
    Exiting,
}

/// One process of the fake table.
#[derive(Debug, Clone)]
pub struct Proc {
    /// Parent pid.
    pub ppid: u32,
    /// Process group.
    pub pgid: u32,
    /// Effective (and real) uid.
    pub uid: u32,
    /// Start time, microseconds since the epoch.
    pub start_micros: u64,
    /// `p_uniqueid`.
    pub unique: u64,
    /// `p_puniqueid`: the parent it was forked from.
    pub parent_unique: u64,
    /// State.
    pub run: Run,
    /// Its name.
    pub name: String,
    /// Ignores SIGTERM.
    pub ignores_term: bool,
    /// SIGTERM arrived while stopped.
    pub term_pending: bool,
    /// Its lifetime peak footprint once it is a zombie (its pages are freed), pages.
    pub exited_lifetime_max: u64,
    /// Its environment (`NAME=value`): inherited on fork, kept through exec.
    pub env: Vec<String>,
}

#[derive(Debug)]
struct Host {
    window_start: Option<Instant>,
    calls_in_window: u32,
    /// Real answers this window (drawn at its start).
    budget: u32,
    /// The generator's state (xorshift64).
    seed: u64,
    cached: Option<Vec<u8>>,
    real_calls: u32,
    cached_calls: u32,
    /// Every call fails (`KERN_FAILURE`), as a sandbox or a bad port would.
    refused: bool,
}

#[derive(Debug)]
struct Table {
    procs: BTreeMap<u32, Proc>,
    last_pid: u32,
    next_unique: u64,
    wall_micros: u64,
    now: Instant,
    viewer_uid: u32,
    boot_micros: u64,
    boot_uuid: String,
    memory: Memory,
    host: Host,
    /// `kern.memorystatus_vm_pressure_level` as last read ([`pages::pressure_after`]).
    pressure: u32,
}

/// The fake Mac. pid 1 is launchd (root); the test's own processes are added with
/// [`FakeMac::spawn`].
#[derive(Debug)]
pub struct FakeMac {
    table: Mutex<Table>,
    cache: Mutex<OncePerInterval<VmAnswer>>,
}

/// Page size of an Apple Silicon Mac.
pub const PAGE_BYTES: u64 = 16_384;

impl FakeMac {
    /// From now on `host_statistics64` fails (or answers again, `refused` false).
    pub fn refuse_host_statistics(&self, refused: bool) {
        self.lock().host.refused = refused;
    }

    /// A Mac booted a while ago, the reader running as `viewer_uid`.
    pub fn new(viewer_uid: u32) -> Self {
        let launchd = Proc {
            ppid: 0,
            pgid: 1,
            uid: 0,
            start_micros: 1_700_000_000_000_000,
            unique: 1,
            parent_unique: 0,
            run: Run::Running,
            name: "launchd".into(),
            ignores_term: true,
            term_pending: false,
            exited_lifetime_max: 0,
            env: Vec::new(),
        };
        let mut memory = Memory::mac_48g(PAGE_BYTES);
        memory.touch(Holder::Pid(1), 20 << 20);
        FakeMac {
            table: Mutex::new(Table {
                procs: BTreeMap::from([(1, launchd)]),
                last_pid: 400,
                next_unique: 1000,
                wall_micros: 1_700_000_100_000_000,
                now: Instant::now(),
                viewer_uid,
                boot_micros: 1_700_000_000_000_000,
                boot_uuid: "6A1B2C3D-4E5F-4071-8293-A4B5C6D7E8F9".into(),
                memory,
                pressure: 1,
                host: Host {
                    window_start: None,
                    calls_in_window: 0,
                    budget: 0,
                    seed: 0x9E37_79B9_7F4A_7C15,
                    cached: None,
                    real_calls: 0,
                    cached_calls: 0,
                    refused: false,
                },
            }),
            cache: Mutex::new(OncePerInterval::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `fork()` of `parent` (same group, its uid), named `name`; the new pid.
    pub fn spawn(&self, parent: u32, name: &str) -> u32 {
        let mut t = self.lock();
        let pid = t.free_pid();
        let p = t.procs[&parent].clone();
        t.next_unique += 1;
        t.wall_micros += 1_000;
        let child = Proc {
            ppid: parent,
            pgid: p.pgid,
            uid: p.uid,
            start_micros: t.wall_micros,
            unique: t.next_unique,
            parent_unique: p.unique,
            run: Run::Running,
            name: name.into(),
            ignores_term: false,
            term_pending: false,
            exited_lifetime_max: 0,
            env: p.env.clone(),
        };
        t.procs.insert(pid, child);
        t.memory.touch(Holder::Pid(pid), 1 << 20);
        pid
    }

    /// A process the test harness stands for (the guard): a child of launchd owned by `uid`.
    pub fn spawn_user(&self, uid: u32, name: &str) -> u32 {
        let pid = self.spawn(1, name);
        self.with(pid, |p| p.uid = uid);
        pid
    }

    /// Changes one process.
    pub fn with(&self, pid: u32, change: impl FnOnce(&mut Proc)) {
        change(self.lock().procs.get_mut(&pid).unwrap());
    }

    /// `pid`'s environment becomes `env` (`NAME=value`; empty: `env -i`).
    pub fn set_env(&self, pid: u32, env: &[&str]) {
        self.with(pid, |p| p.env = env.iter().map(|e| e.to_string()).collect());
    }

    /// `setpgid(pid, pid)`: leads a group of its own.
    pub fn own_group(&self, pid: u32) {
        self.with(pid, |p| p.pgid = pid);
    }

    /// Exits `pid`: a zombie until its parent reaps it (launchd reaps at once); its children
    /// go to launchd.
    pub fn exit(&self, pid: u32) {
        self.lock().exit(pid);
    }

    /// The parent reaps zombie `pid`.
    pub fn reap(&self, pid: u32) {
        let mut t = self.lock();
        if t.procs.get(&pid).is_some_and(|p| p.run == Run::Zombie) {
            t.procs.remove(&pid);
        }
    }

    /// The process `pid`, if the table has it (zombies too).
    pub fn get(&self, pid: u32) -> Option<Proc> {
        self.lock().procs.get(&pid).cloned()
    }

    /// Makes the next `spawn` get `pid` (if free): pid reuse on demand.
    pub fn next_pid_is(&self, pid: u32) {
        self.lock().last_pid = pid - 1;
    }

    /// Time passes.
    pub fn advance(&self, by: Duration) {
        let mut t = self.lock();
        t.now += by;
        t.wall_micros += u64::try_from(by.as_micros()).unwrap();
    }

    /// The clock is set: wall time and `kern.boottime` move by `micros`, the boot does not.
    pub fn set_clock(&self, micros: i64) {
        let mut t = self.lock();
        t.wall_micros = t.wall_micros.saturating_add_signed(micros);
        t.boot_micros = t.boot_micros.saturating_add_signed(micros);
    }

    /// `pid` touches `bytes` of new anonymous memory (the kernel makes room as xnu does).
    pub fn touch(&self, pid: u32, bytes: u64) {
        self.lock().memory.touch(Holder::Pid(pid), bytes);
    }

    /// `pid` frees `bytes` of its anonymous memory.
    pub fn release(&self, pid: u32, bytes: u64) {
        self.lock().memory.release(Holder::Pid(pid), bytes);
    }

    /// Acts on the Mac's memory (other apps', wired, cached files).
    pub fn memory<T>(&self, act: impl FnOnce(&mut Memory) -> T) -> T {
        act(&mut self.lock().memory)
    }

    /// `exec` in `pid`: the new image keeps its pid, group and unique id, and is re-inserted
    /// under its current parent, which resets `p_puniqueid` to that parent's unique id
    /// (`pinsertchild` from `cloneproc`, `kern_exec.c`).
    pub fn exec(&self, pid: u32, name: &str) {
        let mut t = self.lock();
        let parent = t.procs[&pid].ppid;
        let parent_unique = t.procs.get(&parent).map_or(0, |p| p.unique);
        let p = t.procs.get_mut(&pid).unwrap();
        p.parent_unique = parent_unique;
        p.name = name.into();
    }

    /// `(real, cached)` `host_statistics64` answers given so far.
    pub fn host_calls(&self) -> (u32, u32) {
        let t = self.lock();
        (t.host.real_calls, t.host.cached_calls)
    }

    /// Another third-party monitor calls `host_statistics64` (they share xnu's cache).
    pub fn other_monitor_polls(&self) {
        let _ = self.lock().host_statistics();
    }
}

impl Table {
    fn free_pid(&mut self) -> u32 {
        loop {
            self.last_pid = if self.last_pid >= PID_MAX {
                100
            } else {
                self.last_pid + 1
            };
            let pid = self.last_pid;
            // xnu's `forkproc`: a pid is free when no process, zombie or group has it.
            let taken = self.procs.contains_key(&pid) || self.procs.values().any(|p| p.pgid == pid);
            if !taken {
                return pid;
            }
        }
    }

    fn exit(&mut self, pid: u32) {
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        if p.run == Run::Zombie {
            return;
        }
        p.run = Run::Zombie;
        let parent = p.ppid;
        p.exited_lifetime_max = self.memory.of(Holder::Pid(pid)).lifetime_max;
        self.memory.exit(Holder::Pid(pid));
        for child in self.procs.values_mut().filter(|c| c.ppid == pid) {
            child.ppid = 1;
        }
        let launchd_children: Vec<u32> = self
            .procs
            .iter()
            .filter(|(_, c)| c.ppid == 1 && c.run == Run::Zombie)
            .map(|(&pid, _)| pid)
            .collect();
        for zombie in launchd_children {
            self.procs.remove(&zombie);
        }
        if parent == 1 {
            self.procs.remove(&pid);
        }
    }

    fn visible(&self, pid: u32, arg: u64) -> Result<&Proc> {
        match self.procs.get(&pid) {
            Some(p) if p.run != Run::Zombie || arg != 0 => Ok(p),
            _ => Err(CounterError::Gone { pid }),
        }
    }

    fn may_read(&self, p: &Proc, what: &str) -> Result<()> {
        if self.viewer_uid == 0 || p.uid == self.viewer_uid {
            Ok(())
        } else {
            Err(CounterError::PermissionDenied { what: what.into() })
        }
    }

    fn host_statistics(&mut self) -> Vec<u8> {
        let now = self.now;
        let in_window = self
            .host
            .window_start
            .is_some_and(|start| now.saturating_duration_since(start) < HOST_STATS_WINDOW);
        if in_window {
            self.host.calls_in_window += 1;
            if self.host.calls_in_window > self.host.budget {
                if let Some(cached) = &self.host.cached {
                    self.host.cached_calls += 1;
                    return cached.clone();
                }
            }
        } else {
            self.host.window_start = Some(now);
            self.host.calls_in_window = 1;
            self.host.budget = self.host.draw_budget();
        }
        let b = self.vm_statistics();
        self.host.real_calls += 1;
        self.host.cached = Some(b.clone());
        b
    }

    /// A `vm_statistics64` of the memory now, as xnu-11417 fills it: REV1's 38 integers
    /// (`host.c`, `HOST_VM_INFO64_LATEST_COUNT`), whatever count is asked.
    fn vm_statistics(&self) -> Vec<u8> {
        let c = self.memory.counts();
        let mut b = vec![0u8; vm::REV1_COUNT as usize * 4];
        let u32s = [
            // host_statistics64 counts speculative pages in free_count.
            (vm::FREE_COUNT, c.free + c.speculative),
            (vm::ACTIVE_COUNT, c.active),
            (vm::INACTIVE_COUNT, c.inactive),
            (vm::WIRE_COUNT, c.wired),
            (vm::PURGEABLE_COUNT, c.purgeable),
            (vm::SPECULATIVE_COUNT, c.speculative),
            (vm::COMPRESSOR_PAGE_COUNT, c.compressor),
            (vm::EXTERNAL_PAGE_COUNT, c.external),
            (vm::INTERNAL_PAGE_COUNT, c.internal),
        ];
        for (offset, pages) in u32s {
            put(&mut b, offset, &u32::try_from(pages).unwrap().to_ne_bytes());
        }
        put(&mut b, vm::SWAPINS, &self.memory.swapins.to_ne_bytes());
        put(&mut b, vm::SWAPOUTS, &self.memory.swapouts.to_ne_bytes());
        b
    }
}

impl Host {
    /// xnu's budget for a new window: a random 2 to 10 (xorshift64 here, seeded: the same
    /// draws on every run).
    fn draw_budget(&mut self) -> u32 {
        let mut x = self.seed;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed = x;
        let (low, high) = (
            *HOST_STATS_REAL_PER_WINDOW.start(),
            *HOST_STATS_REAL_PER_WINDOW.end(),
        );
        low + u32::try_from(x % u64::from(high - low + 1)).unwrap()
    }
}

/// Writes `bytes` into `buf` at `offset`.
fn put(buf: &mut [u8], offset: usize, bytes: &[u8]) {
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
}
