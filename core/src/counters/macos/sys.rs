//! The raw macOS calls under the reader: the C layouts it reads (with const size/offset
//! asserts, so a libc change breaks the build), sysctl, `host_statistics64`, libproc pid
//! listing and `proc_pidinfo`, and errno mapping. `mod.rs` builds the counters from them.

use std::ffi::{c_int, c_void, CStr};
use std::io;
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::OnceLock;

use libc::{integer_t, kern_return_t, mach_msg_type_number_t, mach_port_t};

use super::super::Result;
use crate::error::CounterError;

/// `HOST_VM_INFO64_REV2_COUNT`: `vm_statistics64` up to `swapped_count`, in `integer_t`s.
pub(super) const HOST_VM_INFO64_REV2_COUNT: mach_msg_type_number_t = 40;
/// MIG's maximum for a `host_info64_t` array, in `integer_t`s (`mach_types.defs`).
pub(super) const HOST_INFO64_MAX_INTS: usize = 256;
/// `MIG_ARRAY_TOO_LARGE` (`mach/mig_errors.h`): the count passed was too small (macOS 27 beta).
pub(super) const MIG_ARRAY_TOO_LARGE: kern_return_t = -307;

// Byte offsets of the `vm_statistics64` fields read below (xnu `mach/vm_statistics.h`; REV1
// ends at 152 bytes = 38 ints). libc ≥ 0.2.187 binds the whole struct; the numbers are pinned.
pub(super) const VM_WIRE_COUNT: usize = offset_of!(libc::vm_statistics64, wire_count);
pub(super) const VM_PAGEINS: usize = offset_of!(libc::vm_statistics64, pageins);
pub(super) const VM_PAGEOUTS: usize = offset_of!(libc::vm_statistics64, pageouts);
pub(super) const VM_PURGEABLE_COUNT: usize = offset_of!(libc::vm_statistics64, purgeable_count);
pub(super) const VM_SWAPINS: usize = offset_of!(libc::vm_statistics64, swapins);
pub(super) const VM_SWAPOUTS: usize = offset_of!(libc::vm_statistics64, swapouts);
pub(super) const VM_COMPRESSOR_PAGE_COUNT: usize =
    offset_of!(libc::vm_statistics64, compressor_page_count);
pub(super) const VM_INTERNAL_PAGE_COUNT: usize =
    offset_of!(libc::vm_statistics64, internal_page_count);

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
pub(super) unsafe trait Pod: Copy {}
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

pub(super) fn zeroed<T: Pod>() -> T {
    // SAFETY: `T: Pod`, so all-zero bytes are a valid `T`.
    unsafe { std::mem::zeroed() }
}

/// `SZOMB` (`sys/proc.h`): `pbi_status` of a process that exited and was not reaped yet.
pub(super) const SZOMB: u32 = 5;

/// Runs `read` for every pid; processes it fails for (gone, denied, …) are logged and skipped.
pub(super) fn for_each_pid<T>(mut read: impl FnMut(u32) -> Result<T>) -> Result<Vec<T>> {
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
pub(super) fn last_error(what: impl Into<String>, pid: Option<u32>) -> CounterError {
    CounterError::from_io(io::Error::last_os_error(), what, pid)
}

pub(super) fn parse_error(what: impl Into<String>, detail: impl Into<String>) -> CounterError {
    let (what, detail) = (what.into(), detail.into());
    CounterError::Parse { what, detail }
}

pub(super) fn c_pid(pid: u32) -> Result<libc::pid_t> {
    libc::pid_t::try_from(pid).map_err(|_| CounterError::Gone { pid })
}

/// Returns the cached value, or reads and caches it (errors are not cached).
pub(super) fn cached<T: Copy>(cell: &OnceLock<T>, read: impl FnOnce() -> Result<T>) -> Result<T> {
    if let Some(value) = cell.get() {
        return Ok(*value);
    }
    let value = read()?;
    Ok(*cell.get_or_init(|| value))
}

/// Reads sysctl `name` into `value`; returns the number of bytes the kernel wrote.
pub(super) fn sysctl_into<T: Pod>(name: &CStr, value: &mut T) -> Result<usize> {
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
pub(super) fn sysctl_by_name<T: Pod>(name: &CStr) -> Result<T> {
    let mut value = zeroed::<T>();
    let len = sysctl_into(name, &mut value)?;
    if len != size_of::<T>() {
        return Err(bad_length(name, len));
    }
    Ok(value)
}

/// Reads an integer sysctl of 4 bytes (INT, UINT) or 8 bytes (QUAD).
pub(super) fn sysctl_number(name: &CStr) -> Result<u64> {
    let mut bytes = [0u8; 8];
    let len = sysctl_into(name, &mut bytes)?;
    match (len, bytes.first_chunk::<4>()) {
        (4, Some(low)) => Ok(u64::from(u32::from_ne_bytes(*low))),
        (8, _) => Ok(u64::from_ne_bytes(bytes)),
        _ => Err(bad_length(name, len)),
    }
}

pub(super) fn bad_length(name: &CStr, len: usize) -> CounterError {
    parse_error(sysctl_what(name), format!("length {len}"))
}

pub(super) fn sysctl_what(name: &CStr) -> String {
    format!("sysctl {}", name.to_string_lossy())
}

pub(super) fn page_size_bytes() -> Result<u64> {
    static PAGE_SIZE_BYTES: OnceLock<u64> = OnceLock::new();
    cached(&PAGE_SIZE_BYTES, || sysctl_number(c"vm.pagesize"))
}

/// An 8-byte aligned `integer_t` buffer as large as MIG allows.
#[repr(C, align(8))]
pub(super) struct HostInfo64Buf(pub(super) [u8; HOST_INFO64_MAX_INTS * 4]);

/// A `vm_statistics64` answer: only the first `valid_bytes` were filled by the kernel.
pub(super) struct VmStats {
    buf: HostInfo64Buf,
    valid_bytes: usize,
}

impl VmStats {
    fn field<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let end = offset.checked_add(N)?.min(self.valid_bytes);
        self.buf.0.get(offset..end)?.try_into().ok()
    }
    pub(super) fn u32_at(&self, offset: usize) -> Option<u32> {
        self.field(offset).map(u32::from_ne_bytes)
    }
    pub(super) fn u64_at(&self, offset: usize) -> Option<u64> {
        self.field(offset).map(u64::from_ne_bytes)
    }
}

/// The host port, taken once: each `mach_host_self()` adds a send right.
pub(super) fn host_port() -> mach_port_t {
    static HOST_PORT: OnceLock<mach_port_t> = OnceLock::new();
    *HOST_PORT.get_or_init(|| {
        // SAFETY: takes no arguments and returns a port name; called once per process.
        unsafe { mach2::mach_init::mach_host_self() }
    })
}

/// `host_statistics64(HOST_VM_INFO64)` asking for REV2; on `MIG_ARRAY_TOO_LARGE` retries once
/// with the count the kernel returned, if that fits the buffer.
pub(super) fn host_vm_stats() -> Result<VmStats> {
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
pub(super) fn list_pids(
    what: &str,
    list: impl Fn(*mut c_void, c_int) -> c_int,
) -> Result<Vec<u32>> {
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

pub(super) fn all_pids() -> Result<Vec<u32>> {
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

/// `proc_pidinfo`'s `arg` for the BSD-info flavors: 0 finds live processes only.
pub(super) const LIVE_ONLY: u64 = 0;
/// `arg` != 0 finds zombies too (`bsd/kern/proc_info.c`: `if (arg) zombie = 1` for
/// `PROC_PIDTBSDINFO`, `PROC_PIDT_SHORTBSDINFO` and `PROC_PIDUNIQIDENTIFIERINFO`).
pub(super) const ZOMBIES_TOO: u64 = 1;

/// `proc_pidinfo(pid, flavor, arg)` into a `T` whose size must match the answer.
pub(super) fn pid_info<T: Pod>(pid: u32, flavor: c_int, arg: u64, flavor_name: &str) -> Result<T> {
    let what = || format!("proc_pidinfo({pid}, {flavor_name})");
    let (c_pid, mut info, size) = (c_pid(pid)?, zeroed::<T>(), size_of::<T>());
    let out = ptr::from_mut(&mut info).cast();
    // SAFETY: `out` is a writable `T: Pod` of `size` bytes (< 300, asserted) and the kernel
    // writes at most `size` bytes.
    let written = unsafe { libc::proc_pidinfo(c_pid, flavor, arg, out, size as c_int) };
    if written <= 0 {
        return Err(last_error(what(), Some(pid)));
    }
    if written as usize != size {
        let detail = format!("{written} bytes, expected {size}");
        return Err(parse_error(what(), detail));
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

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
