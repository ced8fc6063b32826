//! The answers macOS gives, decoded from their bytes in xnu's layouts: pure functions that
//! compile everywhere, so they are tested on Linux against answers built from the headers'
//! layouts (and property-tested on truncated ones). The macOS backend (`macos/`) reads raw
//! buffers and decodes them here; `macos/sys.rs` asserts at compile time that these offsets
//! are libc's.
//!
//! Sources: `bsd/sys/sysctl.h` (`xsw_usage`), `osfmk/mach/vm_statistics.h`
//! (`vm_statistics64`), `bsd/sys/proc_info.h` (`proc_bsdinfo`, `proc_bsdshortinfo`,
//! `proc_uniqidentifierinfo`), `bsd/kern/kern_sysctl.c` (`KERN_PROCARGS2`,
//! `kern.bootsessionuuid`), xnu-8019 (macOS 12) and xnu-11417 (macOS 15).

use headroom_model::counters::{ProcessState, RunState};
use std::time::{Duration, Instant};

pub mod reader;

fn u32_at(b: &[u8], offset: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(*b.get(offset..)?.first_chunk::<4>()?))
}

fn u64_at(b: &[u8], offset: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(*b.get(offset..)?.first_chunk::<8>()?))
}

/// A NUL-terminated (or full) C char array as lossy UTF-8.
pub fn c_string(bytes: &[u8]) -> String {
    let len = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..len]).into_owned()
}

/// `struct xsw_usage` (`vm.swapusage`): 32 bytes.
pub mod xsw {
    /// Its size.
    pub const SIZE: usize = 32;
    /// `xsu_total` (u64).
    pub const TOTAL: usize = 0;
    /// `xsu_used` (u64).
    pub const USED: usize = 16;
}

/// Swap total and used, bytes, from a `vm.swapusage` answer; `None` unless whole.
pub fn swap_usage(b: &[u8]) -> Option<(u64, u64)> {
    if b.len() != xsw::SIZE {
        return None;
    }
    Some((u64_at(b, xsw::TOTAL)?, u64_at(b, xsw::USED)?))
}

/// Offsets in `vm_statistics64` (bytes) and the revisions' sizes (in `integer_t`s).
pub mod vm {
    /// `HOST_VM_INFO64_REV0_COUNT` in xnu-11417: 24 ints; less fails.
    pub const REV0_COUNT: u32 = 24;
    /// `HOST_VM_INFO64_REV1_COUNT`: 38 ints (152 bytes), up to
    /// `total_uncompressed_pages_in_compressor`.
    pub const REV1_COUNT: u32 = 38;
    /// `HOST_VM_INFO64_REV2_COUNT`: 40 ints, with `swapped_count`.
    pub const REV2_COUNT: u32 = 40;
    /// `free_count` (u32; speculative pages included, as `vm_stat` says).
    pub const FREE_COUNT: usize = 0;
    /// `active_count` (u32).
    pub const ACTIVE_COUNT: usize = 4;
    /// `inactive_count` (u32).
    pub const INACTIVE_COUNT: usize = 8;
    /// `wire_count` (u32).
    pub const WIRE_COUNT: usize = 12;
    /// `pageins` (u64).
    pub const PAGEINS: usize = 32;
    /// `pageouts` (u64).
    pub const PAGEOUTS: usize = 40;
    /// `purgeable_count` (u32).
    pub const PURGEABLE_COUNT: usize = 88;
    /// `speculative_count` (u32).
    pub const SPECULATIVE_COUNT: usize = 92;
    /// `swapins` (u64).
    pub const SWAPINS: usize = 112;
    /// `swapouts` (u64).
    pub const SWAPOUTS: usize = 120;
    /// `compressor_page_count` (u32).
    pub const COMPRESSOR_PAGE_COUNT: usize = 128;
    /// `external_page_count` (u32): file-backed pages (with purgeable ones, Activity
    /// Monitor's "cached files").
    pub const EXTERNAL_PAGE_COUNT: usize = 136;
    /// `internal_page_count` (u32).
    pub const INTERNAL_PAGE_COUNT: usize = 140;
}

/// A `host_statistics64(HOST_VM_INFO64)` answer: the kernel filled the first `count`
/// `integer_t`s (the revision it knows), the rest is not to be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmAnswer {
    bytes: Vec<u8>,
    valid_bytes: usize,
}

impl VmAnswer {
    /// The answer in `bytes`, of which the kernel said it filled `count` ints.
    pub fn new(bytes: &[u8], count: u32) -> Self {
        let valid = usize::try_from(count)
            .unwrap_or(0)
            .saturating_mul(4)
            .min(bytes.len());
        VmAnswer {
            bytes: bytes[..valid].to_vec(),
            valid_bytes: valid,
        }
    }

    /// A u32 field at `offset`, if the answer holds it.
    pub fn u32_at(&self, offset: usize) -> Option<u32> {
        let end = offset.checked_add(4)?;
        (end <= self.valid_bytes).then(|| u32_at(&self.bytes, offset))?
    }

    /// A u64 field at `offset`, if the answer holds it.
    pub fn u64_at(&self, offset: usize) -> Option<u64> {
        let end = offset.checked_add(8)?;
        (end <= self.valid_bytes).then(|| u64_at(&self.bytes, offset))?
    }
}

/// `struct proc_bsdinfo` (`PROC_PIDTBSDINFO`): 136 bytes.
pub mod bsdinfo {
    /// Its size.
    pub const SIZE: usize = 136;
    /// `pbi_flags` (u32; `PROC_FLAG_INEXIT` 4: the process is in `exit`).
    pub const FLAGS: usize = 0;
    /// `pbi_status` (u32: `SIDL` 1, `SRUN` 2, `SSLEEP` 3, `SSTOP` 4, `SZOMB` 5).
    pub const STATUS: usize = 4;
    /// `pbi_ppid`.
    pub const PPID: usize = 16;
    /// `pbi_ruid`.
    pub const RUID: usize = 28;
    /// `pbi_comm` (16 chars).
    pub const COMM: usize = 48;
    /// `pbi_name` (32 chars).
    pub const NAME: usize = 64;
    /// `pbi_pgid`.
    pub const PGID: usize = 100;
    /// `pbi_start_tvsec` (u64).
    pub const START_SEC: usize = 120;
    /// `pbi_start_tvusec` (u64).
    pub const START_USEC: usize = 128;
}

/// `struct proc_bsdshortinfo` (`PROC_PIDT_SHORTBSDINFO`, no permission needed): 64 bytes.
pub mod shortinfo {
    /// Its size.
    pub const SIZE: usize = 64;
    /// `pbsi_ppid`.
    pub const PPID: usize = 4;
    /// `pbsi_pgid`.
    pub const PGID: usize = 8;
    /// `pbsi_status`.
    pub const STATUS: usize = 12;
    /// `pbsi_comm` (16 chars).
    pub const COMM: usize = 16;
    /// `pbsi_flags` (as `pbi_flags`).
    pub const FLAGS: usize = 32;
    /// `pbsi_ruid`.
    pub const RUID: usize = 44;
}

/// `struct proc_uniqidentifierinfo` (`PROC_PIDUNIQIDENTIFIERINFO` = 17, private; no
/// permission needed): 56 bytes.
pub mod uniqinfo {
    /// The flavor (`bsd/sys/proc_info_private.h`).
    pub const FLAVOR: i32 = 17;
    /// Its size (`_Static_assert` in xnu-11417).
    pub const SIZE: usize = 56;
    /// `p_uniqueid` (u64): never reused in a boot.
    pub const UNIQUE_ID: usize = 16;
    /// `p_puniqueid` (u64): the parent's at fork, "doesn't change if reparented"
    /// (`proc_internal.h`).
    pub const PARENT_UNIQUE_ID: usize = 24;
}

/// What a BSD-info answer says of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BsdInfo {
    /// Its state.
    pub run: RunState,
    /// Parent pid.
    pub ppid: u32,
    /// Process group.
    pub pgid: u32,
    /// Real uid.
    pub ruid: u32,
    /// Start time, microseconds since the epoch (0: the short answer has none).
    pub start_micros: u64,
    /// Its name (`pbi_name`, else `comm`).
    pub name: String,
}

impl BsdInfo {
    /// Its start-time token and state.
    pub fn state(&self) -> ProcessState {
        ProcessState {
            start_time: self.start_micros,
            run: self.run,
        }
    }
}

/// Decodes a `PROC_PIDTBSDINFO` answer; `None` unless it is whole.
pub fn bsd_info(b: &[u8]) -> Option<BsdInfo> {
    if b.len() != bsdinfo::SIZE {
        return None;
    }
    let name = c_string(b.get(bsdinfo::NAME..bsdinfo::NAME + 32)?);
    let name = if name.is_empty() {
        c_string(b.get(bsdinfo::COMM..bsdinfo::COMM + 16)?)
    } else {
        name
    };
    let (sec, usec) = (
        u64_at(b, bsdinfo::START_SEC)?,
        u64_at(b, bsdinfo::START_USEC)?,
    );
    Some(BsdInfo {
        run: RunState::from_macos(u32_at(b, bsdinfo::STATUS)?, u32_at(b, bsdinfo::FLAGS)?),
        ppid: u32_at(b, bsdinfo::PPID)?,
        pgid: u32_at(b, bsdinfo::PGID)?,
        ruid: u32_at(b, bsdinfo::RUID)?,
        start_micros: sec.saturating_mul(1_000_000).saturating_add(usec),
        name,
    })
}

/// Decodes a `PROC_PIDT_SHORTBSDINFO` answer (no start time: 0); `None` unless whole.
pub fn short_info(b: &[u8]) -> Option<BsdInfo> {
    if b.len() != shortinfo::SIZE {
        return None;
    }
    Some(BsdInfo {
        run: RunState::from_macos(u32_at(b, shortinfo::STATUS)?, u32_at(b, shortinfo::FLAGS)?),
        ppid: u32_at(b, shortinfo::PPID)?,
        pgid: u32_at(b, shortinfo::PGID)?,
        ruid: u32_at(b, shortinfo::RUID)?,
        start_micros: 0,
        name: c_string(b.get(shortinfo::COMM..shortinfo::COMM + 16)?),
    })
}

/// A process's unique id and its parent's (at fork): `(p_uniqueid, p_puniqueid)`.
pub fn unique_ids(b: &[u8]) -> Option<(u64, u64)> {
    if b.len() != uniqinfo::SIZE {
        return None;
    }
    Some((
        u64_at(b, uniqinfo::UNIQUE_ID)?,
        u64_at(b, uniqinfo::PARENT_UNIQUE_ID)?,
    ))
}

/// A `kern.bootsessionuuid` answer (a 36-character UUID and its NUL, `uuid_string_t`): the
/// one id of this boot, which no clock change moves (`kern.boottime` does).
pub fn boot_session_id(b: &[u8]) -> Option<String> {
    let text = c_string(b);
    let uuid = text.len() == 36
        && text.char_indices().all(|(i, c)| {
            if [8, 13, 18, 23].contains(&i) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
    uuid.then_some(text)
}

/// Parses a `KERN_PROCARGS2` answer: `i32 argc`, the exec path, NUL padding, then `argc`
/// NUL-terminated arguments (the environment that follows is ignored). Joined by spaces.
pub fn procargs2(buf: &[u8]) -> String {
    let Some((argc, rest)) = buf.split_first_chunk::<4>() else {
        return String::new();
    };
    let argc = usize::try_from(i32::from_ne_bytes(*argc)).unwrap_or(0);
    let fields = rest.split(|&b| b == 0).skip(1); // after the exec path
    let args = fields.skip_while(|f| f.is_empty()).take(argc); // after the NUL padding
    let args: Vec<_> = args.map(String::from_utf8_lossy).collect();
    args.join(" ")
}

/// The environment of a `KERN_PROCARGS2` answer: the `NAME=value` strings after the `argc`
/// arguments, up to the first empty one (what follows is Apple's own strings).
pub fn procargs2_env(buf: &[u8]) -> Vec<String> {
    let Some((argc, rest)) = buf.split_first_chunk::<4>() else {
        return Vec::new();
    };
    let argc = usize::try_from(i32::from_ne_bytes(*argc)).unwrap_or(0);
    let fields = rest.split(|&b| b == 0).skip(1); // after the exec path
    let mut fields = fields.skip_while(|f| f.is_empty()).skip(argc);
    let env = fields.by_ref().take_while(|f| !f.is_empty());
    env.map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

/// How often this process asks `host_statistics64` at most. Since macOS 11 xnu rate-limits
/// non-Apple binaries (`rate_limit_host_statistics`, `osfmk/kern/host.c`) with ONE budget and
/// ONE cached answer for all of them together (`g_host_stats_cache`): a random 2 to 10 real
/// answers per 1 s window among every such process, then the cached snapshot of whichever
/// call was last real. A cached answer is at most a window old and looks fresh. Asking once a
/// second keeps Headroom's own share small (several guards and the app each ask once a
/// second); a reading may still be another process's snapshot of the same second, so nothing
/// here derives a rate from these counts, and what must be fresh at every check (swap, the
/// level) comes from sysctls, which are not rate-limited.
pub const HOST_STATISTICS_EVERY: Duration = Duration::from_secs(1);

/// The last real answer of a call that must not be made more than once per
/// [`HOST_STATISTICS_EVERY`]: later reads carry it.
#[derive(Debug, Clone, Default)]
pub struct OncePerInterval<T> {
    last: Option<(Instant, T)>,
}

impl<T> OncePerInterval<T> {
    /// Nothing asked yet.
    pub const fn new() -> Self {
        OncePerInterval { last: None }
    }
}

impl<T: Clone> OncePerInterval<T> {
    /// The value as of at most [`HOST_STATISTICS_EVERY`] before `now`: `fetch` runs only
    /// when the last answer is older (a failed fetch is not kept).
    pub fn get<E>(&mut self, now: Instant, fetch: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        if let Some((at, value)) = &self.last {
            if now.saturating_duration_since(*at) < HOST_STATISTICS_EVERY {
                return Ok(value.clone());
            }
        }
        let value = fetch()?;
        self.last = Some((now, value.clone()));
        Ok(value)
    }
}

/// `proc_pidinfo`'s `arg` for the BSD-info flavors: 0 finds live processes only.
pub const LIVE_ONLY: u64 = 0;
/// `arg` != 0 finds zombies too (`bsd/kern/proc_info.c`: `if (arg) findzomb = 1` for
/// `PROC_PIDTBSDINFO`, `PROC_PIDT_SHORTBSDINFO` and `PROC_PIDUNIQIDENTIFIERINFO`).
pub const ZOMBIES_TOO: u64 = 1;

// The fake Mac: this crate's tests, and the tests of the crates above (feature `fake-mac`,
// a dev-dependency of headroom-core only).
#[cfg(all(unix, any(test, feature = "fake-mac")))]
#[doc(hidden)]
pub mod fake_tests;
#[cfg(all(test, unix))]
mod lineage_tests;
#[cfg(all(test, unix))]
mod mac_tests;
#[cfg(test)]
mod tests;
