//! The raw macOS calls under the reader: sysctl, `host_statistics64`, libproc pid listings,
//! `proc_pidinfo`, `KERN_PROCARGS2` and `proc_pid_rusage` into raw buffers, and errno mapping;
//! plus the const asserts that the offsets and flavors `super::super::xnu` uses are libc's
//! (so a libc change breaks the build).

use std::ffi::{c_int, c_void, CString};
use std::io;
use std::mem::{offset_of, size_of};
use std::ptr;
use std::sync::OnceLock;

use libc::{integer_t, kern_return_t, mach_msg_type_number_t, mach_port_t};

use super::super::xnu::reader::{flavor, rusage, PidList};
use super::super::xnu::{bsdinfo, shortinfo, vm, xsw, VmAnswer};
use super::super::Result;
use crate::error::CounterError;

/// MIG's maximum for a `host_info64_t` array, in `integer_t`s (`mach_types.defs`).
const HOST_INFO64_MAX_INTS: usize = 256;
/// `MIG_ARRAY_TOO_LARGE` (`mach/mig_errors.h`): the count passed was too small (macOS 27 beta).
const MIG_ARRAY_TOO_LARGE: kern_return_t = -307;

const _: () = {
    use libc::{proc_bsdinfo as Bsd, proc_bsdshortinfo as Short, rusage_info_v4 as Ru};
    use libc::{vm_statistics64 as Vm, xsw_usage as Xsw};
    assert!(offset_of!(Vm, free_count) == vm::FREE_COUNT);
    assert!(offset_of!(Vm, active_count) == vm::ACTIVE_COUNT);
    assert!(offset_of!(Vm, inactive_count) == vm::INACTIVE_COUNT);
    assert!(offset_of!(Vm, wire_count) == vm::WIRE_COUNT);
    assert!(offset_of!(Vm, speculative_count) == vm::SPECULATIVE_COUNT);
    assert!(offset_of!(Vm, external_page_count) == vm::EXTERNAL_PAGE_COUNT);
    assert!(offset_of!(Vm, pageins) == vm::PAGEINS && offset_of!(Vm, pageouts) == vm::PAGEOUTS);
    assert!(offset_of!(Vm, purgeable_count) == vm::PURGEABLE_COUNT);
    assert!(offset_of!(Vm, swapins) == vm::SWAPINS && offset_of!(Vm, swapouts) == vm::SWAPOUTS);
    assert!(offset_of!(Vm, compressor_page_count) == vm::COMPRESSOR_PAGE_COUNT);
    assert!(offset_of!(Vm, internal_page_count) == vm::INTERNAL_PAGE_COUNT);
    assert!(offset_of!(Vm, speculative_count) + 4 == vm::REV0_COUNT as usize * 4);
    assert!(
        offset_of!(Vm, total_uncompressed_pages_in_compressor) + 8 == vm::REV1_COUNT as usize * 4
    );
    assert!(offset_of!(Vm, swapped_count) + 8 == vm::REV2_COUNT as usize * 4);
    assert!(size_of::<Xsw>() == xsw::SIZE && offset_of!(Xsw, xsu_total) == xsw::TOTAL);
    assert!(offset_of!(Xsw, xsu_used) == xsw::USED);
    assert!(size_of::<Bsd>() == bsdinfo::SIZE && offset_of!(Bsd, pbi_ppid) == bsdinfo::PPID);
    assert!(
        offset_of!(Bsd, pbi_ruid) == bsdinfo::RUID && offset_of!(Bsd, pbi_comm) == bsdinfo::COMM
    );
    assert!(
        offset_of!(Bsd, pbi_name) == bsdinfo::NAME && offset_of!(Bsd, pbi_pgid) == bsdinfo::PGID
    );
    assert!(offset_of!(Bsd, pbi_status) == bsdinfo::STATUS);
    assert!(offset_of!(Bsd, pbi_flags) == bsdinfo::FLAGS);
    assert!(offset_of!(Bsd, pbi_start_tvsec) == bsdinfo::START_SEC);
    assert!(offset_of!(Bsd, pbi_start_tvusec) == bsdinfo::START_USEC);
    assert!(
        size_of::<Short>() == shortinfo::SIZE && offset_of!(Short, pbsi_ppid) == shortinfo::PPID
    );
    assert!(
        offset_of!(Short, pbsi_pgid) == shortinfo::PGID
            && offset_of!(Short, pbsi_comm) == shortinfo::COMM
    );
    assert!(offset_of!(Short, pbsi_ruid) == shortinfo::RUID);
    assert!(offset_of!(Short, pbsi_status) == shortinfo::STATUS);
    assert!(offset_of!(Short, pbsi_flags) == shortinfo::FLAGS);
    assert!(size_of::<Ru>() == rusage::SIZE);
    assert!(offset_of!(Ru, ri_resident_size) == rusage::RESIDENT_SIZE);
    assert!(offset_of!(Ru, ri_phys_footprint) == rusage::PHYS_FOOTPRINT);
    assert!(offset_of!(Ru, ri_lifetime_max_phys_footprint) == rusage::LIFETIME_MAX_PHYS_FOOTPRINT);
    assert!(libc::PROC_PIDTBSDINFO == flavor::BSDINFO);
    assert!(libc::PROC_PIDT_SHORTBSDINFO == flavor::SHORTBSDINFO);
};

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

/// Reads sysctl `name` into `buf`; returns the number of bytes the kernel wrote.
pub(super) fn sysctl_bytes(name: &str, buf: &mut [u8]) -> Result<usize> {
    let what = || format!("sysctl {name}");
    let name = CString::new(name).map_err(|_| parse_error(what(), "a NUL in the name"))?;
    let (out, mut len) = (buf.as_mut_ptr().cast::<c_void>(), buf.len());
    // SAFETY: `name` is NUL-terminated; `out` is writable for `len` bytes and the kernel
    // writes at most `len`; no new value is set (NULL, 0).
    let rc = unsafe { libc::sysctlbyname(name.as_ptr(), out, &mut len, ptr::null_mut(), 0) };
    if rc != 0 {
        return Err(last_error(what(), None));
    }
    Ok(len.min(buf.len()))
}

/// An 8-byte aligned `integer_t` buffer as large as MIG allows.
#[repr(C, align(8))]
struct HostInfo64Buf([u8; HOST_INFO64_MAX_INTS * 4]);

/// The host port, taken once: each `mach_host_self()` adds a send right.
fn host_port() -> mach_port_t {
    static HOST_PORT: OnceLock<mach_port_t> = OnceLock::new();
    *HOST_PORT.get_or_init(|| {
        // SAFETY: takes no arguments and returns a port name; called once per process.
        unsafe { mach2::mach_init::mach_host_self() }
    })
}

/// `host_statistics64(HOST_VM_INFO64)` asking for REV2; on `MIG_ARRAY_TOO_LARGE` retries once
/// with the count the kernel returned, if that fits the buffer. (Rate-limited by xnu: the
/// caller asks at most once a second.)
pub(super) fn host_vm_stats() -> Result<VmAnswer> {
    let mut buf = HostInfo64Buf([0; HOST_INFO64_MAX_INTS * 4]);
    let mut count: mach_msg_type_number_t = vm::REV2_COUNT;
    let (host, out) = (host_port(), buf.0.as_mut_ptr().cast::<integer_t>());
    let mut kr = libc::KERN_SUCCESS;
    for _attempt in 0..2 {
        let requested = count;
        // SAFETY: `out` is 8-byte aligned with room for HOST_INFO64_MAX_INTS integers and
        // `count` ≤ that, so the kernel writes at most `count` integers into it.
        kr = unsafe { libc::host_statistics64(host, libc::HOST_VM_INFO64, out, &mut count) };
        if kr == libc::KERN_SUCCESS {
            return Ok(VmAnswer::new(&buf.0, count.min(requested)));
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

/// One libproc listing (each returns a pid count).
pub(super) fn list(which: PidList) -> Result<Vec<u32>> {
    match which {
        PidList::All => list_pids("proc_listallpids", |buf, size| {
            // SAFETY: `list_pids` passes NULL with size 0 (a size query) or `size` writable bytes.
            unsafe { libc::proc_listallpids(buf, size) }
        }),
        PidList::Children(pid) => {
            let parent = c_pid(pid)?;
            list_pids(&format!("proc_listchildpids({pid})"), |buf, size| {
                // SAFETY: as above.
                unsafe { libc::proc_listchildpids(parent, buf, size) }
            })
        }
        PidList::Group(pgid) => {
            let group = c_pid(pgid)?;
            list_pids(&format!("proc_listpgrppids({pgid})"), |buf, size| {
                // SAFETY: as above.
                unsafe { libc::proc_listpgrppids(group, buf, size) }
            })
        }
    }
}

/// The command line from sysctl `{CTL_KERN, KERN_PROCARGS2, pid}` into `buf` (grown to
/// `kern.argmax` once, reused across calls); `None` when the kernel refuses (EINVAL: another
/// user, a zombie or a gone process; EPERM).
pub(super) fn procargs2(pid: u32, buf: &mut Vec<u8>) -> Result<Option<usize>> {
    static ARGMAX_BYTES: OnceLock<usize> = OnceLock::new();
    let argmax_bytes = match ARGMAX_BYTES.get() {
        Some(bytes) => *bytes,
        None => {
            let mut raw = [0u8; 4];
            sysctl_bytes("kern.argmax", &mut raw)?;
            let bytes = usize::try_from(i32::from_ne_bytes(raw))
                .map_err(|_| parse_error("sysctl kern.argmax", "negative"))?;
            *ARGMAX_BYTES.get_or_init(|| bytes)
        }
    };
    buf.resize(argmax_bytes, 0);
    let mut mib = [libc::CTL_KERN, libc::KERN_PROCARGS2, c_pid(pid)?];
    let (out, mut len) = (buf.as_mut_ptr().cast(), buf.len());
    // SAFETY: `mib` holds 3 valid ints; `out` is writable for `len` bytes and the kernel writes
    // at most `len`; no new value is set (NULL, 0).
    let rc = unsafe { libc::sysctl(mib.as_mut_ptr(), 3, out, &mut len, ptr::null_mut(), 0) };
    if rc != 0 {
        return match io::Error::last_os_error().raw_os_error() {
            Some(libc::EINVAL | libc::EPERM) => Ok(None),
            _ => Err(last_error(format!("KERN_PROCARGS2 {pid}"), Some(pid))),
        };
    }
    Ok(Some(len.min(buf.len())))
}

/// An 8-byte aligned `rusage_info_v4`-sized buffer.
#[repr(C, align(8))]
struct RusageBuf([u8; rusage::SIZE]);

/// `proc_pid_rusage(pid, RUSAGE_INFO_V4)` into `buf`.
pub(super) fn rusage_v4(pid: u32, buf: &mut [u8; rusage::SIZE]) -> Result<()> {
    let mut aligned = RusageBuf([0; rusage::SIZE]);
    let out = aligned.0.as_mut_ptr().cast();
    // SAFETY: `out` is an 8-byte aligned buffer of `rusage_info_v4`'s size (asserted above),
    // the struct the kernel fills for RUSAGE_INFO_V4.
    if unsafe { libc::proc_pid_rusage(c_pid(pid)?, libc::RUSAGE_INFO_V4, out) } != 0 {
        return Err(last_error(format!("proc_pid_rusage({pid})"), Some(pid)));
    }
    *buf = aligned.0;
    Ok(())
}

/// `proc_pidinfo(pid, flavor, arg)` into `buf`; returns the bytes written (0 is an error:
/// libproc returns 0 with `errno` set).
pub(super) fn pid_info(pid: u32, flavor: c_int, arg: u64, buf: &mut [u8]) -> Result<usize> {
    let c_pid = c_pid(pid)?;
    let size = c_int::try_from(buf.len()).unwrap_or(c_int::MAX);
    let out = buf.as_mut_ptr().cast::<c_void>();
    // SAFETY: `out` is writable for `size` bytes (at most the buffer's length) and the
    // kernel writes at most `size` bytes.
    let written = unsafe { libc::proc_pidinfo(c_pid, flavor, arg, out, size) };
    if written <= 0 {
        return Err(last_error(
            format!("proc_pidinfo({pid}, flavor {flavor})"),
            Some(pid),
        ));
    }
    Ok(usize::try_from(written).unwrap_or(0).min(buf.len()))
}
