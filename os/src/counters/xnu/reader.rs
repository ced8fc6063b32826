//! The macOS counter reader, written against [`Xnu`]: the raw calls a Mac answers (sysctl,
//! `host_statistics64`, libproc) as bytes. On macOS [`XnuReader`] runs on the kernel
//! (`macos/sys.rs`); in tests it runs on a fake process table with macOS rules
//! (`fake_tests.rs`), so every decision this file makes (zombies asked for, EPERM fallbacks,
//! the host-statistics rate limit, the boot session id, the group and lineage listings) is
//! exercised on Linux, not only type-checked.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use super::{
    bsdinfo, shortinfo, uniqinfo, vm, xsw, BsdInfo, OncePerInterval, VmAnswer, LIVE_ONLY,
    ZOMBIES_TOO,
};
use crate::counters::{CounterSource, Result};
use crate::error::CounterError;
use headroom_model::counters::{
    FootprintRow, PressureLevel, ProcessInfo, ProcessMemory, ProcessState, RunState, SystemCounters,
};

/// `proc_pidinfo` flavors the reader asks for (`bsd/sys/proc_info.h`).
pub mod flavor {
    /// `PROC_PIDTBSDINFO`.
    pub const BSDINFO: i32 = 3;
    /// `PROC_PIDT_SHORTBSDINFO`.
    pub const SHORTBSDINFO: i32 = 13;
}

/// A libproc pid listing (each returns a pid count in xnu's libproc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidList {
    /// `proc_listallpids`.
    All,
    /// `proc_listchildpids(pid)`.
    Children(u32),
    /// `proc_listpgrppids(pgid)`, zombies included.
    Group(u32),
}

/// The raw calls of a Mac, answered as bytes in xnu's layouts. Errors are already mapped:
/// ESRCH is `Gone`, EPERM `PermissionDenied`.
pub trait Xnu {
    /// `sysctlbyname(name)` into `buf`; the bytes written.
    fn sysctl(&self, name: &str, buf: &mut [u8]) -> Result<usize>;
    /// `host_statistics64(HOST_VM_INFO64)`: rate-limited by xnu, see
    /// [`super::HOST_STATISTICS_EVERY`].
    fn host_vm_info(&self) -> Result<VmAnswer>;
    /// `proc_pidinfo(pid, flavor, arg)` into `buf`; the bytes written.
    fn pid_info(&self, pid: u32, flavor: i32, arg: u64, buf: &mut [u8]) -> Result<usize>;
    /// A pid listing.
    fn list_pids(&self, which: PidList) -> Result<Vec<u32>>;
    /// `KERN_PROCARGS2` of `pid` into `buf`; `None` when the kernel refuses (another user, a
    /// zombie, a gone process).
    fn procargs2(&self, pid: u32, buf: &mut Vec<u8>) -> Result<Option<usize>>;
    /// `proc_pid_rusage(pid, RUSAGE_INFO_V4)` into `buf`.
    fn rusage_v4(&self, pid: u32, buf: &mut [u8; rusage::SIZE]) -> Result<()>;
    /// Where this process keeps its last `host_statistics64` answer, so that it asks at most
    /// once per [`super::HOST_STATISTICS_EVERY`] (xnu's budget and cache are shared by every
    /// non-Apple process, see there).
    fn vm_cache(&self) -> &Mutex<OncePerInterval<VmAnswer>>;
    /// The time the cache is kept by.
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// Offsets in `struct rusage_info_v4` (`bsd/sys/resource.h`; asserted in `macos/sys.rs`).
pub mod rusage {
    /// Its size.
    pub const SIZE: usize = 296;
    /// `ri_resident_size` (u64).
    pub const RESIDENT_SIZE: usize = 64;
    /// `ri_phys_footprint` (u64).
    pub const PHYS_FOOTPRINT: usize = 72;
    /// `ri_lifetime_max_phys_footprint` (u64).
    pub const LIFETIME_MAX_PHYS_FOOTPRINT: usize = 240;
}

/// The macOS counters over a [`Xnu`].
#[derive(Debug, Clone, Default)]
pub struct XnuReader<K> {
    kernel: K,
}

impl<K: Xnu> XnuReader<K> {
    /// A reader asking `kernel`.
    pub fn on(kernel: K) -> Self {
        XnuReader { kernel }
    }

    /// The kernel it asks.
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    fn number(&self, name: &str) -> Result<u64> {
        let mut bytes = [0u8; 8];
        let len = self.kernel.sysctl(name, &mut bytes)?;
        match (len, bytes.first_chunk::<4>()) {
            (4, Some(low)) => Ok(u64::from(u32::from_ne_bytes(*low))),
            (8, _) => Ok(u64::from_ne_bytes(bytes)),
            _ => Err(parse_error(
                format!("sysctl {name}"),
                format!("length {len}"),
            )),
        }
    }

    /// `host_statistics64`, asked at most once per [`super::HOST_STATISTICS_EVERY`].
    fn vm_stats(&self) -> Result<VmAnswer> {
        let mut last = self
            .kernel
            .vm_cache()
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        last.get(self.kernel.now(), || self.kernel.host_vm_info())
    }

    /// `PROC_PIDTBSDINFO` (zombies too with `arg` [`ZOMBIES_TOO`]), or
    /// `PROC_PIDT_SHORTBSDINFO` (start time 0) when that is denied (EPERM across effective
    /// uids, `bsd/kern/proc_info.c`).
    fn bsd_info(&self, pid: u32, arg: u64) -> Result<BsdInfo> {
        let mut buf = [0u8; bsdinfo::SIZE];
        match self.kernel.pid_info(pid, flavor::BSDINFO, arg, &mut buf) {
            Ok(len) => buf.get(..len).and_then(super::bsd_info).ok_or_else(|| {
                parse_error(format!("PROC_PIDTBSDINFO({pid})"), format!("{len} bytes"))
            }),
            Err(CounterError::PermissionDenied { .. }) => {
                let mut short = [0u8; shortinfo::SIZE];
                let len = self
                    .kernel
                    .pid_info(pid, flavor::SHORTBSDINFO, arg, &mut short)?;
                short.get(..len).and_then(super::short_info).ok_or_else(|| {
                    parse_error(
                        format!("PROC_PIDT_SHORTBSDINFO({pid})"),
                        format!("{len} bytes"),
                    )
                })
            }
            Err(err) => Err(err),
        }
    }

    /// Identity without the command line, of a live process (a zombie is `Gone`).
    fn live_identity(&self, pid: u32) -> Result<ProcessInfo> {
        let info = self.bsd_info(pid, LIVE_ONLY)?;
        if info.run == RunState::Dead {
            return Err(CounterError::Gone { pid });
        }
        Ok(ProcessInfo {
            pid,
            ppid: info.ppid,
            pgid: info.pgid,
            uid: info.ruid,
            start_time: info.start_micros,
            name: info.name,
            command: String::new(),
        })
    }

    fn info_with_command(&self, pid: u32, buf: &mut Vec<u8>) -> Result<ProcessInfo> {
        let mut info = self.live_identity(pid)?;
        if let Some(len) = self.kernel.procargs2(pid, buf)? {
            info.command = super::procargs2(buf.get(..len).unwrap_or_default());
        }
        Ok(info)
    }

    fn memory(&self, pid: u32) -> Result<ProcessMemory> {
        let mut buf = [0u8; rusage::SIZE];
        self.kernel.rusage_v4(pid, &mut buf)?;
        let at = |offset| super::u64_at(&buf, offset).unwrap_or(0);
        Ok(ProcessMemory {
            pid,
            footprint_bytes: at(rusage::PHYS_FOOTPRINT),
            resident_bytes: at(rusage::RESIDENT_SIZE),
            swap_bytes: None,
            peak_footprint_bytes: Some(at(rusage::LIFETIME_MAX_PHYS_FOOTPRINT)),
        })
    }

    /// Runs `read` for every pid; processes it fails for (gone, denied, …) are skipped.
    /// Those this user may not read (every root or daemon process, and a setuid child of
    /// another effective uid: EPERM in `proc_info.c`) are expected on every scan: one line at
    /// debug says how many.
    fn for_each_pid<T>(&self, mut read: impl FnMut(u32) -> Result<T>) -> Result<Vec<T>> {
        let pids = self.all_pids()?;
        let mut out = Vec::with_capacity(pids.len());
        let mut denied = 0usize;
        for pid in pids {
            match read(pid) {
                Ok(item) => out.push(item),
                Err(CounterError::PermissionDenied { .. }) => denied += 1,
                Err(err) => tracing::debug!(pid, %err, "skipping process"),
            }
        }
        if denied > 0 {
            tracing::debug!(denied, "skipped the processes this user may not read");
        }
        Ok(out)
    }
}

/// The page counts of a `host_statistics64` answer that say what memory is in use, as
/// Activity Monitor counts it (and sysinfo, exelban/stats): app memory is internal pages less
/// purgeable ones; in use is app + wired + the compressor's pages. `None` where the answer's
/// revision does not hold the count (REV0 has no internal or compressor counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageCounts {
    /// `internal_page_count`.
    pub internal: Option<u64>,
    /// `purgeable_count`.
    pub purgeable: Option<u64>,
    /// `wire_count`.
    pub wired: Option<u64>,
    /// `compressor_page_count`.
    pub compressor: Option<u64>,
}

impl PageCounts {
    /// No count: `host_statistics64` did not answer.
    pub const NONE: PageCounts = PageCounts {
        internal: None,
        purgeable: None,
        wired: None,
        compressor: None,
    };

    /// The counts in `vm`.
    pub fn of(vm: &VmAnswer) -> Self {
        let count = |offset| vm.u32_at(offset).map(u64::from);
        PageCounts {
            internal: count(vm::INTERNAL_PAGE_COUNT),
            purgeable: count(vm::PURGEABLE_COUNT),
            wired: count(vm::WIRE_COUNT),
            compressor: count(vm::COMPRESSOR_PAGE_COUNT),
        }
    }

    /// App memory, pages: internal less purgeable.
    pub fn app(&self) -> Option<u64> {
        Some(self.internal?.saturating_sub(self.purgeable?))
    }

    /// Memory in use, pages: app + wired + compressor.
    pub fn in_use(&self) -> Option<u64> {
        Some(self.app()? + self.wired? + self.compressor?)
    }
}

fn parse_error(what: impl Into<String>, detail: impl Into<String>) -> CounterError {
    let (what, detail) = (what.into(), detail.into());
    CounterError::Parse { what, detail }
}

impl<K: Xnu> CounterSource for XnuReader<K> {
    /// System-wide counters: sysctls plus `host_statistics64` (at most once a second). When
    /// `host_statistics64` fails, what the sysctls say is read all the same (swap, the level,
    /// memory): memory in use, compressed, wired and app memory are then missing (`None`).
    fn read_system(&self) -> Result<SystemCounters> {
        let page_bytes = self.number("vm.pagesize")?;
        let mut swap = [0u8; xsw::SIZE];
        let len = self.kernel.sysctl("vm.swapusage", &mut swap)?;
        let (swap_total, swap_used) = swap
            .get(..len)
            .and_then(super::swap_usage)
            .ok_or_else(|| parse_error("sysctl vm.swapusage", format!("length {len}")))?;
        let bytes = |pages: Option<u64>| pages.map(|p| p.saturating_mul(page_bytes));
        // Swap and the level come from sysctls that still answer when the page counts do
        // not: without them, what only they say is missing (`None`; the cumulative counts 0).
        let vm = self
            .vm_stats()
            .inspect_err(|e| tracing::debug!("page counts missing: {e}"))
            .ok();
        let pages = vm.as_ref().map_or(PageCounts::NONE, PageCounts::of);
        let cumulative = |offset| {
            vm.as_ref()
                .and_then(|vm| bytes(vm.u64_at(offset)))
                .unwrap_or(0)
        };
        // The level is optional: a sandbox may hide it; everything else is required.
        let pressure = self
            .number("kern.memorystatus_vm_pressure_level")
            .ok()
            .and_then(|level| u32::try_from(level).ok())
            .and_then(PressureLevel::from_macos_level);
        Ok(SystemCounters {
            total_bytes: self.number("hw.memsize")?,
            free_percent: self.number("kern.memorystatus_level")? as f64,
            usable_bytes: self.number("hw.memsize_usable").ok(),
            in_use_bytes: bytes(pages.in_use()),
            pressure,
            swap_used_bytes: swap_used,
            swap_total_bytes: swap_total,
            // What Activity Monitor shows: the compressor's pages (`vm.compressor_bytes_used`
            // is the smaller size of the data inside its segments).
            compressed_bytes: bytes(pages.compressor),
            wired_bytes: bytes(pages.wired),
            app_bytes: bytes(pages.app()),
            // Linux's light checks carry it; a Mac reads its page counts whole each time.
            reclaimable_bytes: None,
            // Cumulative counters missing from a pre-REV1 answer read as 0.
            swapped_in_bytes: cumulative(vm::SWAPINS),
            swapped_out_bytes: cumulative(vm::SWAPOUTS),
            paged_in_bytes: cumulative(vm::PAGEINS),
            paged_out_bytes: cumulative(vm::PAGEOUTS),
            oom_kills: None,
            cgroup: None,
            cgroup_note: None,
        })
    }

    /// Every process with identity and command line; processes that vanish or deny access
    /// mid-scan are skipped.
    fn list_processes(&self) -> Result<Vec<ProcessInfo>> {
        let mut args_buf = Vec::new();
        self.for_each_pid(|pid| self.info_with_command(pid, &mut args_buf))
    }

    fn process_info(&self, pid: u32) -> Result<ProcessInfo> {
        self.info_with_command(pid, &mut Vec::new())
    }

    /// Live only, without the command line: what the safety check before a signal reads.
    fn identity(&self, pid: u32) -> Result<ProcessInfo> {
        self.live_identity(pid)
    }

    /// Start time and state from `PROC_PIDTBSDINFO`, zombies included (`arg` 1: with 0 xnu
    /// finds live processes only). For another user's process without root (EPERM) the state
    /// comes from `PROC_PIDT_SHORTBSDINFO` and the start time is 0, unknown: it is never
    /// signalled.
    fn process_state(&self, pid: u32) -> Result<ProcessState> {
        Ok(self.bsd_info(pid, ZOMBIES_TOO)?.state())
    }

    /// This boot's id: `kern.bootsessionuuid`, one per boot. (`kern.boottime` moves when the
    /// clock is set, `clock_set_calendar_microtime` in `osfmk/kern/clock.c`.)
    fn boot_id(&self) -> Result<String> {
        let mut buf = [0u8; 64];
        let len = self.kernel.sysctl("kern.bootsessionuuid", &mut buf)?;
        buf.get(..len)
            .and_then(super::boot_session_id)
            .ok_or_else(|| parse_error("sysctl kern.bootsessionuuid", "not a UUID"))
    }

    /// `proc_pid_rusage`, `RUSAGE_INFO_V4`.
    fn process_memory(&self, pid: u32) -> Result<ProcessMemory> {
        self.memory(pid)
    }

    /// Footprint of every process this user may read; others are skipped. A setuid child of
    /// another effective uid is denied here (EPERM) and logged, never taken for gone.
    fn scan_footprints(&self) -> Result<Vec<FootprintRow>> {
        self.for_each_pid(|pid| {
            let memory = self.memory(pid)?;
            let info = self.live_identity(pid)?;
            Ok(FootprintRow {
                pid,
                ppid: info.ppid,
                uid: info.uid,
                name: info.name,
                memory,
            })
        })
    }

    /// `proc_listchildpids`; empty for a pid that is gone.
    fn child_pids(&self, pid: u32) -> Result<Vec<u32>> {
        self.kernel.list_pids(PidList::Children(pid))
    }

    /// `proc_listpgrppids`, zombies included (a live group's id is never reused,
    /// `kern_fork.c`).
    fn group_pids(&self, pgid: u32) -> Result<Vec<u32>> {
        self.kernel.list_pids(PidList::Group(pgid))
    }

    fn tracks_lineage(&self) -> bool {
        true
    }

    /// `(p_uniqueid, p_puniqueid)` from `PROC_PIDUNIQIDENTIFIERINFO` (no permission needed).
    fn lineage(&self, pid: u32) -> Result<Option<(u64, u64)>> {
        let mut buf = [0u8; uniqinfo::SIZE];
        let len = self
            .kernel
            .pid_info(pid, uniqinfo::FLAVOR, LIVE_ONLY, &mut buf)?;
        Ok(buf.get(..len).and_then(super::unique_ids))
    }

    /// The environment from `KERN_PROCARGS2` (the same user's processes; the kernel refuses
    /// others' and zombies'), read into the thread's one buffer: the search asks this of
    /// every candidate process, and a buffer is `kern.argmax` (1 MiB) long.
    fn carries_job_mark(&self, pid: u32, mark: &str) -> Result<bool> {
        thread_local! {
            static ARGS: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        ARGS.with(|cell| {
            let mut buf = cell.borrow_mut();
            let Some(len) = self.kernel.procargs2(pid, &mut buf)? else {
                return Ok(false);
            };
            let env = super::procargs2_env(buf.get(..len).unwrap_or_default());
            Ok(headroom_model::counters::env_names_job_mark(&env, mark))
        })
    }

    /// `proc_listallpids` (never empty on a Mac: launchd is always there).
    fn all_pids(&self) -> Result<Vec<u32>> {
        let pids = self.kernel.list_pids(PidList::All)?;
        if pids.is_empty() {
            return Err(parse_error("proc_listallpids", "no processes"));
        }
        Ok(pids)
    }
}
