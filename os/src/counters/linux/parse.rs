//! Pure parsers of Linux `/proc` text: `meminfo`, `vmstat`, `pressure/memory`, and a
//! process's `status`, `stat`, `cmdline` and `children`. No I/O; a mangled file gives zeros or
//! `None`, never a panic (property-tested in `tests.rs` and `core/src/fuzz_tests.rs`).

use headroom_model::counters::{PressureLevel, ProcessMemory};

const KIB: u64 = 1024;

/// Parses the first `u64` after `key` in a `/proc`-style `Key:   value unit` text.
///
pub(super) fn parse_kv_u64(line: &[u8]) -> Option<u64> {
    let mut value: u64 = 0;
    let mut seen = false;
    for &b in line {
        if b.is_ascii_digit() {
            value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            seen = true;
        } else if seen {
            break;
        }
    }
    seen.then_some(value)
}

/// Fields of `/proc/meminfo` that Headroom uses, in KiB.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Meminfo {
    pub(super) total_kib: Option<u64>,
    pub(super) free_kib: u64,
    pub(super) cached_kib: u64,
    pub(super) available_kib: Option<u64>,
    pub(super) swap_total_kib: u64,
    pub(super) swap_free_kib: u64,
    pub(super) zswap_kib: Option<u64>,
    pub(super) unevictable_kib: Option<u64>,
    pub(super) anon_kib: Option<u64>,
}

/// `k` KiB in bytes, saturating: a mangled file gives a huge value, never a wrapped one.
pub(super) fn kib(k: u64) -> u64 {
    k.saturating_mul(KIB)
}

/// The `/proc/meminfo` fields [`parse_meminfo`] reads, in the kernel's order.
const MEMINFO_FIELDS: [&[u8]; 9] = [
    b"MemTotal",
    b"MemFree",
    b"MemAvailable",
    b"Cached",
    b"Unevictable",
    b"SwapTotal",
    b"SwapFree",
    b"Zswap",
    b"AnonPages",
];

/// `/proc/meminfo`'s fields that Headroom reads, each from the first line that names it;
/// the read stops once all are (the first twenty-odd of some fifty lines: it runs at every
/// check).
pub(super) fn parse_meminfo(bytes: &[u8]) -> Meminfo {
    let mut m = Meminfo::default();
    let mut seen = [false; MEMINFO_FIELDS.len()];
    let mut left = MEMINFO_FIELDS.len();
    for line in bytes.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let Some(field) = MEMINFO_FIELDS.iter().position(|f| *f == &line[..colon]) else {
            continue;
        };
        if std::mem::replace(&mut seen[field], true) {
            continue;
        }
        let value = parse_kv_u64(&line[colon..]);
        match field {
            0 => m.total_kib = value,
            1 => m.free_kib = value.unwrap_or(0),
            2 => m.available_kib = value,
            3 => m.cached_kib = value.unwrap_or(0),
            4 => m.unevictable_kib = value,
            5 => m.swap_total_kib = value.unwrap_or(0),
            6 => m.swap_free_kib = value.unwrap_or(0),
            7 => m.zswap_kib = value,
            _ => m.anon_kib = value,
        }
        left -= 1;
        if left == 0 {
            break;
        }
    }
    m
}

/// PSI `some`/`full` `avg10` → level; `None` if the file has no `some` line.
pub(super) fn parse_psi(bytes: &[u8]) -> Option<PressureLevel> {
    let text = std::str::from_utf8(bytes).ok()?;
    let avg10 = |kind: &str| -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with(kind))?;
        let field = line
            .split_whitespace()
            .find_map(|f| f.strip_prefix("avg10="))?;
        field.parse().ok()
    };
    let some = avg10("some")?;
    Some(PressureLevel::from_psi(some, avg10("full").unwrap_or(0.0)))
}

#[derive(Debug, Default, PartialEq)]
pub(super) struct Vmstat {
    pub(super) pswpin_pages: u64,
    pub(super) pswpout_pages: u64,
    pub(super) pgpgin_kib: u64,
    pub(super) pgpgout_kib: u64,
    /// `oom_kill` (kernel 4.13+).
    pub(super) oom_kill: Option<u64>,
}

pub(super) fn parse_vmstat(bytes: &[u8]) -> Vmstat {
    let mut v = Vmstat::default();
    // Five of some 170 lines are read: a value is parsed only for them, and the scan stops
    // once all five are seen (each once: the first line that names it counts).
    let mut seen = [false; 5];
    for line in bytes.split(|&b| b == b'\n') {
        let Some(space) = line.iter().position(|&b| b == b' ') else {
            continue;
        };
        let field = match &line[..space] {
            b"pswpin" => 0,
            b"pswpout" => 1,
            b"pgpgin" => 2,
            b"pgpgout" => 3,
            b"oom_kill" => 4,
            _ => continue,
        };
        if std::mem::replace(&mut seen[field], true) {
            continue;
        }
        let value = parse_kv_u64(&line[space..]).unwrap_or(0);
        match field {
            0 => v.pswpin_pages = value,
            1 => v.pswpout_pages = value,
            2 => v.pgpgin_kib = value,
            3 => v.pgpgout_kib = value,
            _ => v.oom_kill = Some(value),
        }
        if seen.iter().all(|&s| s) {
            break;
        }
    }
    v
}

/// Fields of `/proc/PID/status`. Kernel threads have no `Vm*`/`Rss*` lines: zeros.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Status {
    pub(super) name: String,
    pub(super) state: u8,
    pub(super) ppid: u32,
    pub(super) tgid: Option<u32>,
    pub(super) uid: Option<u32>,
    pub(super) rss_kib: u64,
    pub(super) anon_kib: u64,
    pub(super) shmem_kib: u64,
    pub(super) swap_kib: Option<u64>,
    /// `Threads`: the process's threads (a zombie leader with more than one is still alive).
    pub(super) threads: u32,
}

impl Status {
    /// True when the process has exited: a zombie whose threads are all gone (a zombie
    /// leader with live threads is a process whose main thread ended first).
    pub(super) fn exited(&self) -> bool {
        is_dead(self.state) && self.threads <= 1
    }

    pub(super) fn memory(&self, pid: u32) -> ProcessMemory {
        ProcessMemory {
            pid,
            footprint_bytes: kib(self.anon_kib.saturating_add(self.shmem_kib)),
            resident_bytes: kib(self.rss_kib),
            swap_bytes: self.swap_kib.map(kib),
            peak_footprint_bytes: None,
        }
    }
}

pub(super) fn parse_status(bytes: &[u8]) -> Status {
    let mut s = Status::default();
    for line in bytes.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let rest = &line[colon + 1..];
        match &line[..colon] {
            b"Name" => s.name = String::from_utf8_lossy(rest.trim_ascii()).into_owned(),
            b"State" => s.state = rest.trim_ascii().first().copied().unwrap_or(0),
            b"PPid" => {
                s.ppid = parse_kv_u64(rest)
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(0)
            }
            b"Tgid" => s.tgid = parse_kv_u64(rest).and_then(|v| u32::try_from(v).ok()),
            b"Uid" => s.uid = parse_kv_u64(rest).and_then(|v| u32::try_from(v).ok()),
            b"VmRSS" => s.rss_kib = parse_kv_u64(rest).unwrap_or(0),
            b"RssAnon" => s.anon_kib = parse_kv_u64(rest).unwrap_or(0),
            b"RssShmem" => s.shmem_kib = parse_kv_u64(rest).unwrap_or(0),
            b"VmSwap" => s.swap_kib = parse_kv_u64(rest),
            b"Threads" => {
                s.threads = parse_kv_u64(rest)
                    .and_then(|v| u32::try_from(v).ok())
                    .unwrap_or(1);
                break; // the last field we use
            }
            _ => {}
        }
    }
    s
}

#[derive(Debug, PartialEq)]
pub(super) struct Stat {
    pub(super) comm: String,
    pub(super) state: u8,
    pub(super) ppid: u32,
    pub(super) pgrp: u32,
    /// The `flags` field (`PF_*`).
    pub(super) flags: u64,
    /// `num_threads` (field 20).
    pub(super) threads: u32,
    pub(super) start_ticks: u64,
}

/// `/proc/PID/stat`: `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
/// cmajflt utime stime cutime cstime priority nice threads itrealvalue starttime …`. The comm
/// may hold spaces and parentheses, so fields are counted from the last `)`.
pub(super) fn parse_stat(bytes: &[u8]) -> Option<Stat> {
    let open = bytes.iter().position(|&b| b == b'(')?;
    let close = bytes.iter().rposition(|&b| b == b')')?;
    let comm = String::from_utf8_lossy(bytes.get(open + 1..close)?).into_owned();
    let rest = std::str::from_utf8(bytes.get(close + 1..)?).ok()?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // fields[0] is the state (field 3); starttime is field 22 → index 19.
    Some(Stat {
        comm,
        state: fields.first()?.bytes().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        flags: fields.get(6)?.parse().ok()?,
        threads: fields.get(17)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// `Z` (zombie) and `X` (dead): the process has exited.
pub(super) fn is_dead(state: u8) -> bool {
    matches!(state, b'Z' | b'X')
}

pub(super) fn parse_cmdline(bytes: &[u8]) -> String {
    let trimmed = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    let text = String::from_utf8_lossy(trimmed);
    text.replace('\0', " ")
}

pub(super) fn parse_pid_list(bytes: &[u8]) -> Vec<u32> {
    std::str::from_utf8(bytes)
        .unwrap_or("")
        .split_ascii_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_parse() {
        assert_eq!(
            parse_kv_u64(b"MemTotal:       24558400 kB"),
            Some(24_558_400)
        );
        assert_eq!(parse_kv_u64(b"VmSwap:\t       0 kB"), Some(0));
        assert_eq!(parse_kv_u64(b"Name: bash"), None);
        assert_eq!(parse_kv_u64(b"X: 99999999999999999999999 kB"), None);
    }
}
