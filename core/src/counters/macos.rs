//! macOS counters: sysctl, `host_statistics64(HOST_VM_INFO64)` and libproc (`proc_listallpids`,
//! `proc_pidinfo`, `proc_pid_rusage`), as declared in the SDK's `<mach/vm_statistics.h>`,
//! `<sys/sysctl.h>` and `<sys/proc_info.h>`; the README's "What the numbers are" maps each.
//!
//! Every C struct read here has const size/offset asserts, so a libc layout change breaks the
//! build (`scripts/check-macos` type-checks this file from Linux). Pages are counted in kernel
//! pages (`vm.pagesize`, read once), as `vm_stat` and `top` do.
//!
//! Processes of other users: without root, `PROC_PIDTBSDINFO` is denied, so identity falls back
//! to `PROC_PIDT_SHORTBSDINFO` (ppid, pgid, uid, `comm`) and `start_time` is **0, meaning
//! unknown**; the command line is then empty and `proc_pid_rusage` is denied (scans skip them).

use std::ffi::{c_int, c_void, CStr};
use std::io;
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::OnceLock;

use libc::{c_char, integer_t, kern_return_t, mach_msg_type_number_t, mach_port_t};

use super::{FootprintRow, PressureLevel, ProcessInfo, ProcessMemory, Result, SystemCounters};
use crate::error::CounterError;

/// `HOST_VM_INFO64_REV2_COUNT`: `vm_statistics64` up to `swapped_count`, in `integer_t`s.
const HOST_VM_INFO64_REV2_COUNT: mach_msg_type_number_t = 40;
/// MIG's maximum for a `host_info64_t` array, in `integer_t`s (`mach_types.defs`).
const HOST_INFO64_MAX_INTS: usize = 256;
/// `MIG_ARRAY_TOO_LARGE` (`mach/mig_errors.h`): the count passed was too small (macOS 27 beta).
const MIG_ARRAY_TOO_LARGE: kern_return_t = -307;

// Byte offsets of the `vm_statistics64` fields read below (xnu `mach/vm_statistics.h`; REV1
// ends at 152 bytes = 38 ints). libc ≥ 0.2.187 binds the whole struct; the numbers are pinned.
const VM_WIRE_COUNT: usize = offset_of!(libc::vm_statistics64, wire_count);
const VM_PAGEINS: usize = offset_of!(libc::vm_statistics64, pageins);
const VM_PAGEOUTS: usize = offset_of!(libc::vm_statistics64, pageouts);
const VM_PURGEABLE_COUNT: usize = offset_of!(libc::vm_statistics64, purgeable_count);
const VM_SWAPINS: usize = offset_of!(libc::vm_statistics64, swapins);
const VM_SWAPOUTS: usize = offset_of!(libc::vm_statistics64, swapouts);
const VM_COMPRESSOR_PAGE_COUNT: usize = offset_of!(libc::vm_statistics64, compressor_page_count);
const VM_INTERNAL_PAGE_COUNT: usize = offset_of!(libc::vm_statistics64, internal_page_count);

const _: () = {
    use libc::{proc_bsdinfo as Bsd, proc_bsdshortinfo as Short, rusage_info_v4 as Ru};
    use libc::{vm_statistics64 as Vm, xsw_usage as Xsw};
    assert!(VM_WIRE_COUNT == 12 && VM_PAGEINS == 32 && VM_PAGEOUTS == 40);
    assert!(VM_PURGEABLE_COUNT == 88 && VM_SWAPINS == 112 && VM_SWAPOUTS == 120);
    assert!(VM_COMPRESSOR_PAGE_COUNT == 128 && VM_INTERNAL_PAGE_COUNT == 140);
    assert!(offset_of!(Vm, total_uncompressed_pages_in_compressor) == 144);
    assert!(offset_of!(Vm, swapped_count) + 8 == HOST_VM_INFO64_REV2_COUNT as usize * 4);
    assert!(size_of::<Xsw>() == 32 && offset_of!(Xsw, xsu_total) == 0);
    assert!(offset_of!(Xsw, xsu_used) == 16 && offset_of!(Xsw, xsu_pagesize) == 24);
    assert!(size_of::<Bsd>() == 136 && offset_of!(Bsd, pbi_ppid) == 16);
    assert!(offset_of!(Bsd, pbi_ruid) == 28 && offset_of!(Bsd, pbi_comm) == 48);
    assert!(offset_of!(Bsd, pbi_name) == 64 && offset_of!(Bsd, pbi_pgid) == 100);
    assert!(offset_of!(Bsd, pbi_status) == 4);
    assert!(size_of::<libc::timeval>() == 16 && offset_of!(libc::timeval, tv_usec) == 8);
    assert!(offset_of!(Bsd, pbi_start_tvsec) == 120 && offset_of!(Bsd, pbi_start_tvusec) == 128);
    assert!(size_of::<Short>() == 64 && offset_of!(Short, pbsi_ppid) == 4);
    assert!(offset_of!(Short, pbsi_pgid) == 8 && offset_of!(Short, pbsi_comm) == 16);
    assert!(offset_of!(Short, pbsi_ruid) == 44);
    assert!(size_of::<Ru>() == 296 && offset_of!(Ru, ri_resident_size) == 64);
    assert!(offset_of!(Ru, ri_phys_footprint) == 72);
    assert!(offset_of!(Ru, ri_lifetime_max_phys_footprint) == 240);
};

/// C data that the kernel fills: every byte pattern, all zeroes included, is a valid value.
///
/// # Safety
/// Implement only for integers, integer arrays and `repr(C)` structs made of them.
unsafe trait Pod: Copy {}
// SAFETY: a byte array.
unsafe impl Pod for [u8; 8] {}
// SAFETY: repr(C), integer fields only (layout asserted above).
unsafe impl Pod for libc::xsw_usage {}
// SAFETY: repr(C), integer and `c_char` array fields only (layout asserted above).
unsafe impl Pod for libc::proc_bsdinfo {}
// SAFETY: repr(C), an `i64` and an `i32` (plus tail padding; layout asserted above).
unsafe impl Pod for libc::timeval {}
// SAFETY: repr(C), integer fields, `c_char` array and a `MaybeUninit<u32>` pad (asserted above).
unsafe impl Pod for libc::proc_bsdshortinfo {}
// SAFETY: repr(C), `[u8; 16]` and `u64` fields only (layout asserted above).
unsafe impl Pod for libc::rusage_info_v4 {}

fn zeroed<T: Pod>() -> T {
    // SAFETY: `T: Pod`, so all-zero bytes are a valid `T`.
    unsafe { std::mem::zeroed() }
}

/// `SZOMB` (`sys/proc.h`): `pbi_status` of a process that exited and was not reaped yet.
const SZOMB: u32 = 5;

/// The memory counter reader for macOS. Stateless: cached values live in process statics.
#[derive(Debug, Default, Clone)]
pub struct Counters;

impl Counters {
    /// A reader for this OS.
    pub fn new() -> Self {
        Counters
    }

    /// System-wide counters: sysctls plus `host_statistics64`.
    pub fn read_system(&self) -> Result<SystemCounters> {
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
    pub fn list_processes(&self) -> Result<Vec<ProcessInfo>> {
        let mut args_buf = Vec::new();
        for_each_pid(|pid| process_info_with(pid, &mut args_buf))
    }

    /// A live process's start-time token from `PROC_PIDTBSDINFO` alone (no command line): the
    /// identity check before every signal and on every tick. A zombie is `Gone`; any other
    /// failure (denied, unexpected) is an error, never taken for "gone".
    pub fn start_time(&self, pid: u32) -> Result<u64> {
        let bsd: libc::proc_bsdinfo = pid_info(pid, libc::PROC_PIDTBSDINFO, "PROC_PIDTBSDINFO")?;
        if bsd.pbi_status == SZOMB {
            return Err(CounterError::Gone { pid });
        }
        Ok(micros(bsd.pbi_start_tvsec, bsd.pbi_start_tvusec))
    }

    /// The start-time token of `pid` even if it has exited and is not reaped yet (a child of
    /// ours): the identity of a command that ended before it could be looked at.
    pub fn start_time_even_exited(&self, pid: u32) -> Result<u64> {
        let bsd: libc::proc_bsdinfo = pid_info(pid, libc::PROC_PIDTBSDINFO, "PROC_PIDTBSDINFO")?;
        Ok(micros(bsd.pbi_start_tvsec, bsd.pbi_start_tvusec))
    }

    /// This boot's id: `kern.boottime` (seconds and microseconds of the boot), as text.
    pub fn boot_id(&self) -> Result<String> {
        let boot: libc::timeval = sysctl_by_name(c"kern.boottime")?;
        Ok(format!("{}.{:06}", boot.tv_sec, boot.tv_usec))
    }

    /// One process's identity and command line (empty when the kernel hides it).
    pub fn process_info(&self, pid: u32) -> Result<ProcessInfo> {
        process_info_with(pid, &mut Vec::new())
    }

    /// One process's identity and owner from `PROC_PIDTBSDINFO` alone, without the command
    /// line: what the safety check before a signal reads. A zombie is `Gone`.
    pub fn identity(&self, pid: u32) -> Result<ProcessInfo> {
        identity(pid)
    }

    /// One process's memory (`proc_pid_rusage`, `RUSAGE_INFO_V4`).
    pub fn process_memory(&self, pid: u32) -> Result<ProcessMemory> {
        rusage(pid)
    }

    /// Footprint of every process this user may read; others are skipped.
    pub fn scan_footprints(&self) -> Result<Vec<FootprintRow>> {
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
    pub fn child_pids(&self, pid: u32) -> Result<Vec<u32>> {
        let parent = c_pid(pid)?;
        list_pids(&format!("proc_listchildpids({pid})"), |buf, size| {
            // SAFETY: `list_pids` passes NULL with size 0 (a size query) or `size` writable bytes.
            unsafe { libc::proc_listchildpids(parent, buf, size) }
        })
    }
}

/// Runs `read` for every pid; processes it fails for (gone, denied, …) are logged and skipped.
fn for_each_pid<T>(mut read: impl FnMut(u32) -> Result<T>) -> Result<Vec<T>> {
    let pids = all_pids()?;
    let mut out = Vec::with_capacity(pids.len());
    for pid in pids {
        match read(pid) {
            Ok(item) => out.push(item),
            Err(err) => tracing::debug!(pid, %err, "skipping process"),
        }
    }
    Ok(out)
}

/// The current `errno` as an error: ESRCH on a pid is `Gone`, EPERM/EACCES `PermissionDenied`,
/// ENOENT without a pid `Unsupported` (an unknown sysctl), anything else `Io`.
fn last_error(what: impl Into<String>, pid: Option<u32>) -> CounterError {
    CounterError::from_io(io::Error::last_os_error(), what, pid)
}

fn parse_error(what: impl Into<String>, detail: impl Into<String>) -> CounterError {
    let (what, detail) = (what.into(), detail.into());
    CounterError::Parse { what, detail }
}

fn c_pid(pid: u32) -> Result<libc::pid_t> {
    libc::pid_t::try_from(pid).map_err(|_| CounterError::Gone { pid })
}

/// Returns the cached value, or reads and caches it (errors are not cached).
fn cached<T: Copy>(cell: &OnceLock<T>, read: impl FnOnce() -> Result<T>) -> Result<T> {
    if let Some(value) = cell.get() {
        return Ok(*value);
    }
    let value = read()?;
    Ok(*cell.get_or_init(|| value))
}

/// Reads sysctl `name` into `value`; returns the number of bytes the kernel wrote.
fn sysctl_into<T: Pod>(name: &CStr, value: &mut T) -> Result<usize> {
    let (out, mut len) = (ptr::from_mut(value).cast(), size_of::<T>());
    // SAFETY: `name` is NUL-terminated; `value` is a writable `T: Pod` of `len` bytes and the
    // kernel writes at most `len`; no new value is set (NULL, 0).
    let rc = unsafe { libc::sysctlbyname(name.as_ptr(), out, &mut len, ptr::null_mut(), 0) };
    if rc != 0 {
        return Err(last_error(sysctl_what(name), None));
    }
    Ok(len)
}

/// Reads a sysctl holding a C struct; its length must match `T` exactly.
fn sysctl_by_name<T: Pod>(name: &CStr) -> Result<T> {
    let mut value = zeroed::<T>();
    let len = sysctl_into(name, &mut value)?;
    if len != size_of::<T>() {
        return Err(bad_length(name, len));
    }
    Ok(value)
}

/// Reads an integer sysctl of 4 bytes (INT, UINT) or 8 bytes (QUAD).
fn sysctl_number(name: &CStr) -> Result<u64> {
    let mut bytes = [0u8; 8];
    let len = sysctl_into(name, &mut bytes)?;
    match (len, bytes.first_chunk::<4>()) {
        (4, Some(low)) => Ok(u64::from(u32::from_ne_bytes(*low))),
        (8, _) => Ok(u64::from_ne_bytes(bytes)),
        _ => Err(bad_length(name, len)),
    }
}

fn bad_length(name: &CStr, len: usize) -> CounterError {
    parse_error(sysctl_what(name), format!("length {len}"))
}

fn sysctl_what(name: &CStr) -> String {
    format!("sysctl {}", name.to_string_lossy())
}

fn page_size_bytes() -> Result<u64> {
    static PAGE_SIZE_BYTES: OnceLock<u64> = OnceLock::new();
    cached(&PAGE_SIZE_BYTES, || sysctl_number(c"vm.pagesize"))
}

/// An 8-byte aligned `integer_t` buffer as large as MIG allows.
#[repr(C, align(8))]
struct HostInfo64Buf([u8; HOST_INFO64_MAX_INTS * 4]);

/// A `vm_statistics64` answer: only the first `valid_bytes` were filled by the kernel.
struct VmStats {
    buf: HostInfo64Buf,
    valid_bytes: usize,
}

impl VmStats {
    fn field<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let end = offset.checked_add(N)?.min(self.valid_bytes);
        self.buf.0.get(offset..end)?.try_into().ok()
    }
    fn u32_at(&self, offset: usize) -> Option<u32> {
        self.field(offset).map(u32::from_ne_bytes)
    }
    fn u64_at(&self, offset: usize) -> Option<u64> {
        self.field(offset).map(u64::from_ne_bytes)
    }
}

/// The host port, taken once: each `mach_host_self()` adds a send right.
fn host_port() -> mach_port_t {
    static HOST_PORT: OnceLock<mach_port_t> = OnceLock::new();
    *HOST_PORT.get_or_init(|| {
        // SAFETY: takes no arguments and returns a port name; called once per process.
        unsafe { mach2::mach_init::mach_host_self() }
    })
}

/// `host_statistics64(HOST_VM_INFO64)` asking for REV2; on `MIG_ARRAY_TOO_LARGE` retries once
/// with the count the kernel returned, if that fits the buffer.
fn host_vm_stats() -> Result<VmStats> {
    let mut buf = HostInfo64Buf([0; HOST_INFO64_MAX_INTS * 4]);
    let mut count = HOST_VM_INFO64_REV2_COUNT;
    let (host, out) = (host_port(), buf.0.as_mut_ptr().cast::<integer_t>());
    let mut kr = libc::KERN_SUCCESS;
    for _attempt in 0..2 {
        let requested = count;
        // SAFETY: `out` is 8-byte aligned with room for HOST_INFO64_MAX_INTS integers and
        // `count` ≤ that, so the kernel writes at most `count` integers into it.
        kr = unsafe { libc::host_statistics64(host, libc::HOST_VM_INFO64, out, &mut count) };
        if kr == libc::KERN_SUCCESS {
            let valid_bytes = count.min(requested) as usize * 4;
            return Ok(VmStats { buf, valid_bytes });
        }
        if kr != MIG_ARRAY_TOO_LARGE || count == requested || count as usize > HOST_INFO64_MAX_INTS
        {
            break;
        }
    }
    Err(CounterError::Io {
        what: "host_statistics64(HOST_VM_INFO64)".into(),
        source: io::Error::other(format!("kern_return_t {kr} (count {count})")),
    })
}

/// Lists pids with a libproc call returning a pid **count**: a size query (NULL, 0) first, then
/// a buffer with headroom, doubled while the answer fills it.
fn list_pids(what: &str, list: impl Fn(*mut c_void, c_int) -> c_int) -> Result<Vec<u32>> {
    let failed = || last_error(what, None);
    let Ok(estimate) = usize::try_from(list(ptr::null_mut(), 0)) else {
        return Err(failed());
    };
    let mut capacity = estimate + estimate / 8 + 32;
    for _attempt in 0..4 {
        let mut pids: Vec<libc::pid_t> = vec![0; capacity];
        let size = c_int::try_from(capacity * size_of::<libc::pid_t>()).map_err(|_| failed())?;
        let Ok(filled) = usize::try_from(list(pids.as_mut_ptr().cast(), size)) else {
            return Err(failed());
        };
        if filled < capacity {
            pids.truncate(filled);
            return Ok(pids.into_iter().flat_map(u32::try_from).collect());
        }
        capacity *= 2;
    }
    Err(parse_error(what, "the list kept growing"))
}

fn all_pids() -> Result<Vec<u32>> {
    let pids = list_pids("proc_listallpids", |buf, size| {
        // SAFETY: `list_pids` passes NULL with size 0 (a size query) or `size` writable bytes.
        unsafe { libc::proc_listallpids(buf, size) }
    })?;
    if pids.is_empty() {
        // libproc returns 0 on failure; there is always at least launchd.
        return Err(last_error("proc_listallpids", None));
    }
    Ok(pids)
}

/// `proc_pidinfo(pid, flavor)` into a `T` whose size must match the answer.
fn pid_info<T: Pod>(pid: u32, flavor: c_int, flavor_name: &str) -> Result<T> {
    let what = || format!("proc_pidinfo({pid}, {flavor_name})");
    let (c_pid, mut info, size) = (c_pid(pid)?, zeroed::<T>(), size_of::<T>());
    let out = ptr::from_mut(&mut info).cast();
    // SAFETY: `out` is a writable `T: Pod` of `size` bytes (< 300, asserted) and the kernel
    // writes at most `size` bytes.
    let written = unsafe { libc::proc_pidinfo(c_pid, flavor, 0, out, size as c_int) };
    if written <= 0 {
        return Err(last_error(what(), Some(pid)));
    }
    if written as usize != size {
        let detail = format!("{written} bytes, expected {size}");
        return Err(parse_error(what(), detail));
    }
    Ok(info)
}

/// Identity without the command line, from `PROC_PIDTBSDINFO` (start time in microseconds
/// since the epoch), or from `PROC_PIDT_SHORTBSDINFO` when that is denied (start time 0).
fn identity(pid: u32) -> Result<ProcessInfo> {
    match pid_info::<libc::proc_bsdinfo>(pid, libc::PROC_PIDTBSDINFO, "PROC_PIDTBSDINFO") {
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
            let short: libc::proc_bsdshortinfo =
                pid_info(pid, libc::PROC_PIDT_SHORTBSDINFO, "PROC_PIDT_SHORTBSDINFO")?;
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

    #[test]
    fn vm_stats_reads_only_filled_fields() {
        let mut buf = HostInfo64Buf([0; HOST_INFO64_MAX_INTS * 4]);
        buf.0[VM_SWAPINS..VM_SWAPINS + 8].copy_from_slice(&7u64.to_ne_bytes());
        let valid_bytes = 38 * 4;
        let stats = VmStats { buf, valid_bytes };
        assert_eq!(stats.u64_at(VM_SWAPINS), Some(7));
        assert_eq!(stats.u64_at(148), None);
    }
}
