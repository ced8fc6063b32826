//! macOS counters: sysctl, `host_statistics64(HOST_VM_INFO64)` and libproc (`proc_listallpids`,
//! `proc_pidinfo`, `proc_pid_rusage`), as declared in the SDK's `<mach/vm_statistics.h>`,
//! `<sys/sysctl.h>` and `<sys/proc_info.h>`; the README's "What the numbers are" maps each.
//!
//! Every C struct read here has const size/offset asserts in `sys.rs`, so a libc layout change
//! breaks the build (`scripts/check-macos` type-checks this folder from Linux). Pages are counted in kernel
//! pages (`vm.pagesize`, read once), as `vm_stat` and `top` do.
//!
//! Processes of other users: without root, `PROC_PIDTBSDINFO` is denied, so identity falls back
//! to `PROC_PIDT_SHORTBSDINFO` (ppid, pgid, uid, `comm`) and `start_time` is **0, meaning
//! unknown**; the command line is then empty and `proc_pid_rusage` is denied (scans skip them).

mod sys;

use std::io;
use std::ptr;
use std::sync::OnceLock;

use libc::c_char;

use self::sys::{
    c_pid, cached, for_each_pid, host_vm_stats, last_error, list_pids, page_size_bytes,
    parse_error, pid_info, sysctl_by_name, sysctl_number, zeroed, LIVE_ONLY, SZOMB,
    VM_COMPRESSOR_PAGE_COUNT, VM_INTERNAL_PAGE_COUNT, VM_PAGEINS, VM_PAGEOUTS, VM_PURGEABLE_COUNT,
    VM_SWAPINS, VM_SWAPOUTS, VM_WIRE_COUNT, ZOMBIES_TOO,
};
use super::{
    CounterSource, FootprintRow, PressureLevel, ProcessInfo, ProcessMemory, ProcessState, Result,
    RunState, SystemCounters,
};
use crate::error::CounterError;

/// The memory counter reader for macOS. Stateless: cached values live in process statics.
#[derive(Debug, Default, Clone)]
pub struct Counters;

impl Counters {
    /// A reader for this OS.
    pub fn new() -> Self {
        Counters
    }
}

impl CounterSource for Counters {
    /// System-wide counters: sysctls plus `host_statistics64`.
    fn read_system(&self) -> Result<SystemCounters> {
        let page_bytes = page_size_bytes()?;
        let swap: libc::xsw_usage = sysctl_by_name(c"vm.swapusage")?;
        let vm = host_vm_stats()?;
        let bytes = |pages: Option<u64>| pages.map(|p| p.saturating_mul(page_bytes));
        let count = |offset| vm.u32_at(offset).map(u64::from);
        let app_pages = count(VM_INTERNAL_PAGE_COUNT)
            .zip(count(VM_PURGEABLE_COUNT))
            .map(|(internal, purgeable)| internal.saturating_sub(purgeable));
        // The level is optional: a sandbox may hide it; everything else is required.
        let pressure = sysctl_number(c"kern.memorystatus_vm_pressure_level")
            .ok()
            .and_then(|level| u32::try_from(level).ok())
            .and_then(PressureLevel::from_macos_level);
        Ok(SystemCounters {
            total_bytes: sysctl_number(c"hw.memsize")?,
            free_percent: sysctl_number(c"kern.memorystatus_level")? as f64,
            pressure,
            swap_used_bytes: swap.xsu_used,
            swap_total_bytes: swap.xsu_total,
            compressed_bytes: bytes(count(VM_COMPRESSOR_PAGE_COUNT)),
            wired_bytes: bytes(count(VM_WIRE_COUNT)),
            app_bytes: bytes(app_pages),
            // Cumulative counters missing from a pre-REV1 answer read as 0.
            swapped_in_bytes: bytes(vm.u64_at(VM_SWAPINS)).unwrap_or(0),
            swapped_out_bytes: bytes(vm.u64_at(VM_SWAPOUTS)).unwrap_or(0),
            paged_in_bytes: bytes(vm.u64_at(VM_PAGEINS)).unwrap_or(0),
            paged_out_bytes: bytes(vm.u64_at(VM_PAGEOUTS)).unwrap_or(0),
        })
    }

    /// Every process with identity and command line; processes that vanish or deny access
    /// mid-scan are skipped.
    fn list_processes(&self) -> Result<Vec<ProcessInfo>> {
        let mut args_buf = Vec::new();
        for_each_pid(|pid| process_info_with(pid, &mut args_buf))
    }

    /// Start time and state from `PROC_PIDTBSDINFO`, zombies included (`arg` 1: xnu's
    /// `proc_pidinfo` looks a zombie up only when `arg != 0`, `bsd/kern/proc_info.c`). For
    /// another user's process without root (EPERM) the state comes from
    /// `PROC_PIDT_SHORTBSDINFO` and the start time is 0, unknown: it is never signalled.
    fn process_state(&self, pid: u32) -> Result<ProcessState> {
        let bsd = pid_info::<libc::proc_bsdinfo>(
            pid,
            libc::PROC_PIDTBSDINFO,
            ZOMBIES_TOO,
            "PROC_PIDTBSDINFO",
        );
        match bsd {
            Ok(bsd) => Ok(ProcessState {
                start_time: micros(bsd.pbi_start_tvsec, bsd.pbi_start_tvusec),
                run: RunState::from_macos(bsd.pbi_status),
            }),
            Err(CounterError::PermissionDenied { .. }) => {
                let short: libc::proc_bsdshortinfo = pid_info(
                    pid,
                    libc::PROC_PIDT_SHORTBSDINFO,
                    ZOMBIES_TOO,
                    "PROC_PIDT_SHORTBSDINFO",
                )?;
                Ok(ProcessState {
                    start_time: 0,
                    run: RunState::from_macos(short.pbsi_status),
                })
            }
            Err(err) => Err(err),
        }
    }

    /// This boot's id: `kern.boottime` (seconds and microseconds of the boot), as text.
    fn boot_id(&self) -> Result<String> {
        let boot: libc::timeval = sysctl_by_name(c"kern.boottime")?;
        Ok(format!("{}.{:06}", boot.tv_sec, boot.tv_usec))
    }

    /// One process's identity and command line (empty when the kernel hides it).
    fn process_info(&self, pid: u32) -> Result<ProcessInfo> {
        process_info_with(pid, &mut Vec::new())
    }

    /// One process's identity and owner from `PROC_PIDTBSDINFO` alone, without the command
    /// line: what the safety check before a signal reads. A zombie is `Gone`.
    fn identity(&self, pid: u32) -> Result<ProcessInfo> {
        identity(pid)
    }

    /// One process's memory (`proc_pid_rusage`, `RUSAGE_INFO_V4`).
    fn process_memory(&self, pid: u32) -> Result<ProcessMemory> {
        rusage(pid)
    }

    /// Footprint of every process this user may read; others are skipped.
    fn scan_footprints(&self) -> Result<Vec<FootprintRow>> {
        for_each_pid(|pid| {
            let memory = rusage(pid)?;
            let info = identity(pid)?;
            let (ppid, uid, name) = (info.ppid, info.uid, info.name);
            Ok(FootprintRow {
                pid,
                ppid,
                uid,
                name,
                memory,
            })
        })
    }

    /// Direct children of a process (`proc_listchildpids`; empty for a pid that is gone).
    fn child_pids(&self, pid: u32) -> Result<Vec<u32>> {
        let parent = c_pid(pid)?;
        list_pids(&format!("proc_listchildpids({pid})"), |buf, size| {
            // SAFETY: `list_pids` passes NULL with size 0 (a size query) or `size` writable bytes.
            unsafe { libc::proc_listchildpids(parent, buf, size) }
        })
    }
}

/// Identity without the command line, from `PROC_PIDTBSDINFO` (start time in microseconds
/// since the epoch), or from `PROC_PIDT_SHORTBSDINFO` when that is denied (start time 0).
fn identity(pid: u32) -> Result<ProcessInfo> {
    match pid_info::<libc::proc_bsdinfo>(pid, libc::PROC_PIDTBSDINFO, LIVE_ONLY, "PROC_PIDTBSDINFO")
    {
        Ok(bsd) if bsd.pbi_status == SZOMB => Err(CounterError::Gone { pid }),
        Ok(bsd) => Ok(ProcessInfo {
            pid,
            ppid: bsd.pbi_ppid,
            pgid: bsd.pbi_pgid,
            uid: bsd.pbi_ruid,
            start_time: micros(bsd.pbi_start_tvsec, bsd.pbi_start_tvusec),
            name: Some(c_name(&bsd.pbi_name))
                .filter(|name| !name.is_empty())
                .unwrap_or_else(|| c_name(&bsd.pbi_comm)),
            command: String::new(),
        }),
        Err(CounterError::PermissionDenied { .. }) => {
            let short: libc::proc_bsdshortinfo = pid_info(
                pid,
                libc::PROC_PIDT_SHORTBSDINFO,
                LIVE_ONLY,
                "PROC_PIDT_SHORTBSDINFO",
            )?;
            Ok(ProcessInfo {
                pid,
                ppid: short.pbsi_ppid,
                pgid: short.pbsi_pgid,
                uid: short.pbsi_ruid,
                start_time: 0,
                name: c_name(&short.pbsi_comm),
                command: String::new(),
            })
        }
        Err(err) => Err(err),
    }
}

fn micros(seconds: u64, micros: u64) -> u64 {
    seconds.saturating_mul(1_000_000).saturating_add(micros)
}

/// A NUL-terminated (or full) C char array as lossy UTF-8.
fn c_name(chars: &[c_char]) -> String {
    let len = chars.iter().position(|&c| c == 0).unwrap_or(chars.len());
    let bytes: Vec<u8> = chars[..len].iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn process_info_with(pid: u32, args_buf: &mut Vec<u8>) -> Result<ProcessInfo> {
    let mut info = identity(pid)?;
    info.command = command_line(pid, args_buf)?;
    Ok(info)
}

/// The command line from sysctl `{CTL_KERN, KERN_PROCARGS2, pid}` into `buf` (grown to
/// `kern.argmax` once, reused across calls). Empty when the kernel refuses (EINVAL: another
/// user, a zombie or a gone process; EPERM).
fn command_line(pid: u32, buf: &mut Vec<u8>) -> Result<String> {
    static ARGMAX_BYTES: OnceLock<usize> = OnceLock::new();
    let argmax_bytes = cached(&ARGMAX_BYTES, || {
        let argmax = sysctl_number(c"kern.argmax")?;
        usize::try_from(argmax).map_err(|_| parse_error("sysctl kern.argmax", "too large"))
    })?;
    buf.resize(argmax_bytes, 0);
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, c_pid(pid)?];
    let (out, mut len) = (buf.as_mut_ptr().cast(), buf.len());
    // SAFETY: `mib` holds 3 valid ints; `out` is writable for `len` bytes and the kernel writes
    // at most `len`; no new value is set (NULL, 0).
    let rc = unsafe { libc::sysctl(mib.as_mut_ptr(), 3, out, &mut len, ptr::null_mut(), 0) };
    if rc != 0 {
        return match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINVAL | libc::EPERM) => Ok(String::new()),
            _ => Err(last_error(format!("KERN_PROCARGS2 {pid}"), Some(pid))),
        };
    }
    Ok(parse_procargs2(buf.get(..len).unwrap_or_default()))
}

/// Parses a `KERN_PROCARGS2` answer: `i32 argc`, the exec path, NUL padding, then `argc`
/// NUL-terminated arguments (the environment that follows is ignored). Joined by spaces.
fn parse_procargs2(buf: &[u8]) -> String {
    let Some((argc, rest)) = buf.split_first_chunk::<4>() else {
        return String::new();
    };
    let argc = usize::try_from(i32::from_ne_bytes(*argc)).unwrap_or(0);
    let fields = rest.split(|&b| b == 0).skip(1); // after the exec path
    let args = fields.skip_while(|f| f.is_empty()).take(argc); // after the NUL padding
    let args: Vec<_> = args.map(String::from_utf8_lossy).collect();
    args.join(" ")
}

/// `proc_pid_rusage(pid, RUSAGE_INFO_V4)`: footprint, resident size, lifetime peak footprint.
fn rusage(pid: u32) -> Result<ProcessMemory> {
    let (c_pid, mut info) = (c_pid(pid)?, zeroed::<libc::rusage_info_v4>());
    let out = ptr::from_mut(&mut info).cast();
    // SAFETY: `out` is a writable `rusage_info_v4`, the struct the kernel fills for
    // RUSAGE_INFO_V4 (296 bytes, asserted).
    if unsafe { libc::proc_pid_rusage(c_pid, libc::RUSAGE_INFO_V4, out) } != 0 {
        return Err(last_error(format!("proc_pid_rusage({pid})"), Some(pid)));
    }
    Ok(ProcessMemory {
        pid,
        footprint_bytes: info.ri_phys_footprint,
        resident_bytes: info.ri_resident_size,
        swap_bytes: None,
        peak_footprint_bytes: Some(info.ri_lifetime_max_phys_footprint),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn procargs2_skips_exec_path_and_padding() {
        let mut buf = 3i32.to_ne_bytes().to_vec();
        buf.extend_from_slice(b"/usr/bin/python3\0\0\0\0python3\0-c\0\0PATH=/usr/bin\0");
        assert_eq!(parse_procargs2(&buf), "python3 -c ");
        assert_eq!(parse_procargs2(&buf[..2]), "");
        assert_eq!(parse_procargs2(&0i32.to_ne_bytes()), "");
    }
}
