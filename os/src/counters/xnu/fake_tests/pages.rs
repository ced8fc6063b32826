//! The fake Mac's memory, page by page, with xnu's accounting: every number the reader asks
//! for (`kern.memorystatus_level`, `host_statistics64`'s page counts, `vm.swapusage`, a
//! process's `phys_footprint`) is derived from one model of pages, never set by a test.
//!
//! The model (xnu-11417: `osfmk/vm/vm_pageout.c`, `vm_resident.c`, `vm_compressor.c`,
//! `bsd/kern/kern_memorystatus.c`, `osfmk/kern/task.c`):
//! - Every usable page is free, speculative, wired, the compressor's, or pageable: internal
//!   (anonymous: the processes' and other apps') or external (file-backed, "cached files").
//!   Purgeable pages are internal pages their owner marked volatile.
//! - A page a process touches comes from the free queue and goes to the active queue. When
//!   the free queue runs short, the kernel drops speculative pages, then reclaims cached
//!   files, then compresses anonymous pages (the largest holder's first; [`RATIO`] pages into
//!   one), and once the compressor holds [`COMPRESSOR_LIMIT_PERCENT`] of memory it writes its
//!   segments to swap files, which macOS creates [`SWAP_FILE_BYTES`] at a time.
//! - `kern.memorystatus_level` is (active + inactive + free + speculative) pages over usable
//!   pages (`hw.memsize_usable`): a touched page moves from free to active and the level does
//!   not move; it falls only with wired and compressed pages.
//! - Activity Monitor's "memory used" is app (internal - purgeable) + wired + the
//!   compressor's pages; what is not in use is free memory and cached files.
//! - `phys_footprint` is a task's resident anonymous pages plus its compressed ones at their
//!   uncompressed size (the `internal_compressed` ledger, swapped segments included): it can
//!   pass physical memory by compression.

use std::collections::BTreeMap;

/// Uncompressed pages per page of the compressor.
pub const RATIO: u64 = 2;
/// The compressor writes segments to swap once it holds this share of usable memory.
pub const COMPRESSOR_LIMIT_PERCENT: u64 = 50;
/// macOS creates swap files of this size as swap grows.
pub const SWAP_FILE_BYTES: u64 = 1 << 30;
/// The free pages the kernel keeps (its free target).
const FREE_TARGET_PAGES: u64 = 4096;

/// One holder's anonymous memory, pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Resident (active).
    pub resident: u64,
    /// Compressed and still in RAM, at their uncompressed size.
    pub compressed: u64,
    /// Compressed and written to swap, at their uncompressed size.
    pub swapped: u64,
    /// The largest footprint it ever had.
    pub lifetime_max: u64,
}

impl Held {
    /// Its footprint, pages: resident + compressed, swapped ones included.
    pub fn footprint(&self) -> u64 {
        self.resident + self.compressed + self.swapped
    }
}

/// Who holds pages: a process, or the other apps of the Mac.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Holder {
    /// A process of the fake table.
    Pid(u32),
    /// Everything else that runs.
    Others,
}

/// The Mac's memory.
#[derive(Debug, Clone)]
pub struct Memory {
    /// Bytes per page.
    pub page_bytes: u64,
    /// Physical memory (`hw.memsize`), pages.
    pub total: u64,
    /// What the kernel hands out (`hw.memsize_usable`), pages.
    pub usable: u64,
    /// Wired: the kernel's and the GPU's.
    pub wired: u64,
    /// Cached files (external, inactive).
    pub file_cache: u64,
    /// Speculative (read ahead).
    pub speculative: u64,
    /// Other apps' purgeable (volatile) pages.
    pub purgeable: u64,
    /// Anonymous memory by holder.
    pub held: BTreeMap<Holder, Held>,
    /// Swap files, bytes.
    pub swap_files_bytes: u64,
    /// Pages written to swap since boot.
    pub swapouts: u64,
    /// Pages read back from swap since boot.
    pub swapins: u64,
}

/// The whole memory at one instant: what the kernel's counters say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// `vm_page_free_count` (speculative pages not included).
    pub free: u64,
    /// `vm_page_speculative_count`.
    pub speculative: u64,
    /// `vm_page_active_count`.
    pub active: u64,
    /// `vm_page_inactive_count`.
    pub inactive: u64,
    /// `vm_page_wire_count`.
    pub wired: u64,
    /// `compressor_page_count`.
    pub compressor: u64,
    /// `internal_page_count`.
    pub internal: u64,
    /// `external_page_count`.
    pub external: u64,
    /// `purgeable_count`.
    pub purgeable: u64,
    /// `kern.memorystatus_level`, percent.
    pub level: u64,
    /// Swap in use, bytes.
    pub swap_used_bytes: u64,
}

/// `kern.memorystatus_vm_pressure_level` after `level` (1 normal, 2 warning, 4 critical)
/// as xnu moves it (`vm_compressor.h`'s `VM_PRESSURE_*` macros with `vm_compressor_init`'s
/// divisors for a Mac of more than 3 GB: minor compaction 20, swap unthrottle 35): from the
/// pages not compressed (active, inactive, free, speculative) against all of them and the
/// compressor's, with the macros' hysteresis on the way down. (xnu's "compressor low on
/// space" is left out: the fake's compressor never fills.)
pub fn pressure_after(level: u32, c: &Counts) -> u32 {
    let uncompressed = c.active + c.inactive + c.free + c.speculative;
    let available = uncompressed + c.compressor;
    let compact = available * 10 / 20;
    let unthrottle = available * 10 / 35;
    match level {
        1 if uncompressed < 12 * unthrottle / 10 => 4,
        1 if uncompressed < compact => 2,
        2 if uncompressed < 12 * unthrottle / 10 => 4,
        2 if uncompressed > 12 * compact / 10 => 1,
        4 if uncompressed > 14 * unthrottle / 10 => {
            if uncompressed > 12 * compact / 10 {
                1
            } else {
                2
            }
        }
        level => level,
    }
}

impl Memory {
    /// A 48 GB Apple Silicon Mac a while after boot: 3 GiB wired, 6 GiB of cached files,
    /// other apps holding 8 GiB (2 GiB of it compressed), no swap yet; about 28 GiB free.
    pub fn mac_48g(page_bytes: u64) -> Self {
        let gib = (1 << 30) / page_bytes;
        let others = Held {
            resident: 6 * gib,
            compressed: 2 * gib,
            swapped: 0,
            lifetime_max: 8 * gib,
        };
        Memory {
            page_bytes,
            total: 48 * gib,
            usable: 48 * gib - gib / 2,
            wired: 3 * gib,
            file_cache: 6 * gib,
            speculative: gib / 2,
            purgeable: gib / 2,
            held: BTreeMap::from([(Holder::Others, others)]),
            swap_files_bytes: 0,
            swapouts: 0,
            swapins: 0,
        }
    }

    /// The counters now.
    pub fn counts(&self) -> Counts {
        let resident: u64 = self.held.values().map(|h| h.resident).sum();
        let compressed: u64 = self.held.values().map(|h| h.compressed).sum();
        let swapped: u64 = self.held.values().map(|h| h.swapped).sum();
        let compressor = compressed.div_ceil(RATIO);
        let internal = resident + self.purgeable;
        let taken = self.wired + compressor + internal + self.file_cache + self.speculative;
        let free = self.usable.saturating_sub(taken);
        let (active, inactive) = (resident, self.purgeable + self.file_cache);
        Counts {
            free,
            speculative: self.speculative,
            active,
            inactive,
            wired: self.wired,
            compressor,
            internal,
            external: self.file_cache,
            purgeable: self.purgeable,
            level: (active + inactive + free + self.speculative) * 100 / self.usable,
            swap_used_bytes: swapped.div_ceil(RATIO) * self.page_bytes,
        }
    }

    /// What `holder` holds (nothing for one unknown).
    pub fn of(&self, holder: Holder) -> Held {
        self.held.get(&holder).copied().unwrap_or_default()
    }

    /// `holder` touches `bytes` of new anonymous memory.
    pub fn touch(&mut self, holder: Holder, bytes: u64) {
        let pages = bytes.div_ceil(self.page_bytes);
        self.make_room(pages);
        let held = self.held.entry(holder).or_default();
        held.resident += pages;
        held.lifetime_max = held.lifetime_max.max(held.footprint());
    }

    /// `holder` frees `bytes` of its anonymous memory, resident pages first.
    pub fn release(&mut self, holder: Holder, bytes: u64) {
        let mut pages = bytes.div_ceil(self.page_bytes);
        if let Some(held) = self.held.get_mut(&holder) {
            for part in [&mut held.resident, &mut held.compressed, &mut held.swapped] {
                let freed = pages.min(*part);
                *part -= freed;
                pages -= freed;
            }
        }
    }

    /// `holder` exits: all it held is freed.
    pub fn exit(&mut self, holder: Holder) {
        self.held.remove(&holder);
    }

    /// `bytes` more are wired (a GPU allocation).
    pub fn wire(&mut self, bytes: u64) {
        let pages = bytes.div_ceil(self.page_bytes);
        self.make_room(pages);
        self.wired += pages;
    }

    /// The holder with the most pages of `part`.
    fn largest(&self, part: fn(&Held) -> u64) -> Option<Holder> {
        self.held
            .iter()
            .filter(|(_, h)| part(h) > 0)
            .max_by_key(|(holder, h)| (part(h), std::cmp::Reverse(**holder)))
            .map(|(holder, _)| *holder)
    }

    /// Frees pages until `pages` more can be taken with the free target kept: speculative
    /// pages, then cached files, then compression, swap once the compressor is at its limit.
    fn make_room(&mut self, pages: u64) {
        let limit = self.usable * COMPRESSOR_LIMIT_PERCENT / 100;
        loop {
            let now = self.counts();
            let short = (pages + FREE_TARGET_PAGES).saturating_sub(now.free);
            if short == 0 {
                return;
            }
            if self.speculative > 0 {
                self.speculative -= short.min(self.speculative);
            } else if self.file_cache > 0 {
                self.file_cache -= short.min(self.file_cache);
            } else if now.compressor >= limit {
                if !self.swap_out(short * RATIO) {
                    return;
                }
            } else if !self.compress((short * RATIO).div_ceil(RATIO - 1)) {
                return;
            }
        }
    }

    /// Compresses up to `pages` of the largest resident holder's; false when none is left.
    fn compress(&mut self, pages: u64) -> bool {
        let Some(victim) = self.largest(|h| h.resident) else {
            return false;
        };
        let held = self.held.entry(victim).or_default();
        let moved = pages.min(held.resident).max(1).min(held.resident);
        held.resident -= moved;
        held.compressed += moved;
        true
    }

    /// Writes up to `pages` (uncompressed) of the largest compressed holder's to swap,
    /// growing the swap files; false when nothing is left to write.
    fn swap_out(&mut self, pages: u64) -> bool {
        let Some(victim) = self.largest(|h| h.compressed) else {
            return false;
        };
        let held = self.held.entry(victim).or_default();
        let moved = pages.min(held.compressed).max(1).min(held.compressed);
        held.compressed -= moved;
        held.swapped += moved;
        self.swapouts += moved.div_ceil(RATIO);
        let used = self.counts().swap_used_bytes;
        while self.swap_files_bytes < used {
            self.swap_files_bytes += SWAP_FILE_BYTES;
        }
        true
    }
}
