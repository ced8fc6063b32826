//! The system's counters on Linux, read fully or for a light check.
//!
//! A full read takes `meminfo`, `pressure/memory` (PSI), `vmstat` and our own memory cgroup
//! (every limit on its path to the root, and where one binds, its usage, swap, OOM count and
//! peak). A light check (between full ones, see `crate::sampler`) reads only what the stop
//! rules need fresh: swap in use and free memory, and under a limit that binds that
//! cgroup's usage, inactive file cache and swap; the page and swap counts, the OOM count, the
//! pressure and the limit itself are as the last reading had them. On the live system the
//! host's part is one `sysinfo(2)` call (free RAM, total and free swap, without the kernel
//! formatting fifty lines of `meminfo`): free memory is that free RAM plus the reclaimable
//! cache the last full read found (`MemAvailable − MemFree`), at most a full read old; a
//! fixture's `/proc` is read as text.

use std::path::Path;

use super::cgroup::Found;
use super::parse::{kib, parse_meminfo, parse_psi, parse_vmstat};
use super::read::with_kept_file;
use crate::counters::Result;
use crate::error::CounterError;
use headroom_model::counters::{CgroupMemory, SystemCounters};

/// A full read (see the module docs) of the `/proc` at `proc_root`; `cgroup` reads our own
/// memory cgroup, on a host of the memory it is given.
pub(super) fn full(
    proc_root: &Path,
    page_size_bytes: u64,
    cgroup: impl FnOnce(u64) -> Found,
) -> Result<SystemCounters> {
    let mut host = host_memory(proc_root)?;
    host.pressure = match with_kept_file(&proc_root.join("pressure/memory"), None, |b| {
        Ok(parse_psi(b))
    }) {
        Ok(levels) => levels,
        // No PSI (kernel < 4.20, CONFIG_PSI off, psi=0): pressure is unknown, not an error.
        Err(CounterError::Unsupported { .. }) => None,
        Err(CounterError::Io { source, .. }) if source.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            None
        }
        Err(e) => return Err(e),
    };
    let vm = with_kept_file(&proc_root.join("vmstat"), None, |b| Ok(parse_vmstat(b)))?;
    host.swapped_in_bytes = vm.pswpin_pages.saturating_mul(page_size_bytes);
    host.swapped_out_bytes = vm.pswpout_pages.saturating_mul(page_size_bytes);
    host.paged_in_bytes = kib(vm.pgpgin_kib);
    host.paged_out_bytes = kib(vm.pgpgout_kib);
    host.oom_kills = vm.oom_kill;
    let found = cgroup(host.total_bytes);
    Ok(with_cgroup(host, found))
}

/// A light check's read (see the module docs), `last` the reading before it; `bound` reads
/// what changes in our cgroup whose limit bound then.
pub(super) fn light(
    proc_root: &Path,
    live: bool,
    last: &SystemCounters,
    bound: impl FnOnce(&CgroupMemory) -> Found,
) -> Result<SystemCounters> {
    let estimated = if live { host_from_sysinfo(last) } else { None };
    let mut host = match estimated {
        Some(host) => host,
        None => host_memory(proc_root)?,
    };
    // Under a limit, `last`'s own fields are the cgroup's: the host's are kept in it.
    host.pressure = last
        .cgroup
        .as_ref()
        .map_or(last.pressure, |c| c.host_pressure);
    host.swapped_in_bytes = last.swapped_in_bytes;
    host.swapped_out_bytes = last.swapped_out_bytes;
    host.paged_in_bytes = last.paged_in_bytes;
    host.paged_out_bytes = last.paged_out_bytes;
    host.oom_kills = last.oom_kills;
    let Some(limited) = &last.cgroup else {
        // No limit bound (or our cgroup could not be read: its note stays).
        host.cgroup_note.clone_from(&last.cgroup_note);
        return Ok(host);
    };
    let found = bound(limited);
    Ok(with_cgroup(host, found))
}

/// What `meminfo` says: the host's memory, free memory and swap (the page and swap counts
/// zero, no pressure, no cgroup).
fn host_memory(proc_root: &Path) -> Result<SystemCounters> {
    let meminfo_path = proc_root.join("meminfo");
    let mem = with_kept_file(&meminfo_path, None, |b| Ok(parse_meminfo(b)))?;
    let total_bytes = mem.total_kib.ok_or_else(|| CounterError::Parse {
        what: meminfo_path.display().to_string(),
        detail: "no MemTotal line".into(),
    })?;
    let total_bytes = kib(total_bytes);
    // Kernels before 3.14 have no MemAvailable: estimate it as free + page cache.
    let available_kib = mem
        .available_kib
        .unwrap_or(mem.free_kib.saturating_add(mem.cached_kib));
    let free_percent = free_percent(kib(available_kib), total_bytes);
    // The rest (pressure, page and swap counts, OOM kills, the cgroup) is read elsewhere.
    Ok(SystemCounters {
        total_bytes,
        free_percent,
        reclaimable_bytes: mem
            .available_kib
            .map(|available| kib(available.saturating_sub(mem.free_kib))),
        swap_used_bytes: kib(mem.swap_total_kib.saturating_sub(mem.swap_free_kib)),
        swap_total_bytes: kib(mem.swap_total_kib),
        compressed_bytes: mem.zswap_kib.map(kib),
        wired_bytes: mem.unevictable_kib.map(kib),
        app_bytes: mem.anon_kib.map(kib),
        ..SystemCounters::default()
    })
}

/// The host's memory and swap for a light check, from one `sysinfo(2)` call: free memory is
/// the free RAM it gives plus the reclaimable cache of `last` (see the module docs); the
/// zswap pool, unevictable and anonymous memory as `last` had them. `None` when `last` has
/// no reclaimable part (a kernel without `MemAvailable`) or the call fails: then `meminfo`.
fn host_from_sysinfo(last: &SystemCounters) -> Option<SystemCounters> {
    let reclaimable_bytes = last.reclaimable_bytes?;
    let ram = ram_and_swap().ok()?;
    let available_bytes = ram.free_ram_bytes.saturating_add(reclaimable_bytes);
    let free_percent = free_percent(available_bytes, ram.total_ram_bytes);
    Some(SystemCounters {
        total_bytes: ram.total_ram_bytes,
        free_percent,
        swap_used_bytes: ram.total_swap_bytes.saturating_sub(ram.free_swap_bytes),
        swap_total_bytes: ram.total_swap_bytes,
        compressed_bytes: last.compressed_bytes,
        wired_bytes: last.wired_bytes,
        app_bytes: last.app_bytes,
        reclaimable_bytes: Some(reclaimable_bytes),
        ..SystemCounters::default()
    })
}

/// `available_bytes` as a percentage of `total_bytes` (at most 100; 0 of nothing).
fn free_percent(available_bytes: u64, total_bytes: u64) -> f64 {
    if total_bytes == 0 {
        0.0
    } else {
        (available_bytes as f64 * 100.0 / total_bytes as f64).min(100.0)
    }
}

/// What `sysinfo(2)` says of memory and swap, bytes.
#[derive(Debug, Clone, Copy)]
struct RamAndSwap {
    total_ram_bytes: u64,
    free_ram_bytes: u64,
    total_swap_bytes: u64,
    free_swap_bytes: u64,
}

/// One `sysinfo(2)` call: `MemTotal`, `MemFree`, `SwapTotal` and `SwapFree` as `meminfo`
/// gives them (the kernel fills both from the same counters).
fn ram_and_swap() -> std::io::Result<RamAndSwap> {
    let mut info = std::mem::MaybeUninit::<libc::sysinfo>::zeroed();
    // SAFETY: `info` points to writable memory the size of `struct sysinfo`, which the call
    // fills whole on success; it is read only after a successful call.
    if unsafe { libc::sysinfo(info.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: sysinfo returned 0: the struct is initialised (and zeroed memory is a valid
    // `struct sysinfo` besides).
    let info = unsafe { info.assume_init() };
    let unit = u64::from(info.mem_unit.max(1));
    #[allow(
        clippy::useless_conversion,
        reason = "c_ulong is u64 here but u32 on 32-bit Linux"
    )]
    let bytes = |count: libc::c_ulong| u64::from(count).saturating_mul(unit);
    Ok(RamAndSwap {
        total_ram_bytes: bytes(info.totalram),
        free_ram_bytes: bytes(info.freeram),
        total_swap_bytes: bytes(info.totalswap),
        free_swap_bytes: bytes(info.freeswap),
    })
}

/// The host's counters with what our cgroup read `found`.
fn with_cgroup(host: SystemCounters, found: Found) -> SystemCounters {
    match found {
        Found::Limited(cgroup) => under_limit(host, cgroup),
        Found::Unlimited => host,
        Found::Unreadable(note) => SystemCounters {
            cgroup_note: Some(note),
            ..host
        },
    }
}

/// The host's counters as seen under a cgroup limit that binds: total and free are the
/// limit's, swap the cgroup's where it is accounted; the host's kept in `cgroup`.
pub(super) fn under_limit(host: SystemCounters, mut cgroup: CgroupMemory) -> SystemCounters {
    cgroup.host_free_percent = host.free_percent;
    cgroup.host_swap_used_bytes = host.swap_used_bytes;
    cgroup.host_pressure = host.pressure;
    let (swap_used, swap_total) = match cgroup.swap_used_bytes {
        Some(used) => (
            used,
            cgroup
                .swap_limit_bytes
                .map_or(host.swap_total_bytes, |l| l.min(host.swap_total_bytes)),
        ),
        None => (host.swap_used_bytes, host.swap_total_bytes),
    };
    SystemCounters {
        total_bytes: cgroup.limit_bytes,
        free_percent: cgroup.free_percent(),
        swap_used_bytes: swap_used,
        swap_total_bytes: swap_total,
        // Under a limit the cgroup's own pressure, where the kernel keeps one.
        pressure: cgroup.pressure.or(host.pressure),
        cgroup: Some(Box::new(cgroup)),
        ..host
    }
}
