//! Tests of the Linux readers on fixture `/proc` trees (`os/tests/fixtures/proc-*`) and on
//! the real `/proc` of the machine running them.

use super::parse::*;
use super::*;
use headroom_model::counters::PressureLevel;

fn fixture(name: &str) -> Counters {
    Counters::with_proc_root(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
}

#[test]
fn system_counters_from_modern_fixture() {
    let c = fixture("proc-modern");
    let s = c.read_system().unwrap();
    assert_eq!(s.total_bytes, 24_683_656 * 1024);
    let expected = 12_341_828.0 * 100.0 / 24_683_656.0;
    assert!(
        (s.free_percent - expected).abs() < 1e-9,
        "{}",
        s.free_percent
    );
    assert_eq!(s.swap_total_bytes, 4_194_300 * 1024);
    assert_eq!(s.swap_used_bytes, (4_194_300 - 3_145_724) * 1024);
    assert_eq!(s.compressed_bytes, Some(20_480 * 1024));
    assert_eq!(s.wired_bytes, Some(10_516 * 1024));
    assert_eq!(s.app_bytes, Some(9_006_348 * 1024));
    // some avg10 12.5 ≥ 10 → warn; full avg10 2.0 < 10.
    assert_eq!(s.pressure, Some(PressureLevel::Warn));
    assert_eq!(s.swapped_in_bytes, 1000 * c.page_size_bytes);
    assert_eq!(s.swapped_out_bytes, 262_144 * c.page_size_bytes);
    assert_eq!(s.paged_in_bytes, 1_265_853 * 1024);
    assert_eq!(s.paged_out_bytes, 2_083_424 * 1024);
}

#[test]
fn old_kernel_without_memavailable_psi_or_zswap() {
    let s = fixture("proc-old").read_system().unwrap();
    assert_eq!(s.total_bytes, 8_000_000 * 1024);
    // MemFree + Cached = 4,000,000 of 8,000,000 kB.
    assert!((s.free_percent - 50.0).abs() < 1e-9);
    assert_eq!(s.pressure, None);
    assert_eq!(s.compressed_bytes, None);
    assert_eq!(s.wired_bytes, None);
    assert_eq!(s.swap_used_bytes, 0);
    assert_eq!(s.swapped_in_bytes, 0);
}

#[test]
fn meminfo_fields_come_from_the_first_line_that_names_them_and_the_read_stops_at_the_last() {
    let text = b"MemTotal: 100 kB\nMemFree: 10 kB\nMemAvailable: 50 kB\nCached: 5 kB\n\
        Unevictable: 1 kB\nSwapTotal: 40 kB\nSwapFree: 30 kB\nMemFree: 99 kB\nZswap: 2 kB\n\
        AnonPages: 20 kB\nSwapFree: 1 kB\nnot a line\n";
    let m = parse_meminfo(text);
    assert_eq!(m.total_kib, Some(100));
    assert_eq!(m.free_kib, 10, "the first MemFree line");
    assert_eq!(m.available_kib, Some(50));
    assert_eq!(m.cached_kib, 5);
    assert_eq!(m.unevictable_kib, Some(1));
    assert_eq!(
        (m.swap_total_kib, m.swap_free_kib),
        (40, 30),
        "read before AnonPages"
    );
    assert_eq!(m.zswap_kib, Some(2));
    assert_eq!(m.anon_kib, Some(20));
    // A kernel without some of them (before 3.14: no MemAvailable) reads to the end.
    let old = parse_meminfo(b"MemTotal: 100 kB\nMemFree: 10 kB\nSwapTotal: 4 kB\nSwapFree: 3 kB\n");
    assert_eq!(
        (old.total_kib, old.available_kib, old.swap_free_kib),
        (Some(100), None, 3)
    );
}

#[test]
fn meminfo_without_memtotal_is_a_parse_error_naming_the_file() {
    let err = fixture("proc-broken").read_system().unwrap_err();
    assert!(matches!(err, CounterError::Parse { .. }), "{err:?}");
    assert!(err.to_string().contains("proc-broken/meminfo"), "{err}");
}

#[test]
fn missing_root_is_an_error_not_a_panic() {
    let err = fixture("does-not-exist").read_system().unwrap_err();
    assert!(matches!(err, CounterError::Unsupported { .. }), "{err:?}");
    assert!(fixture("does-not-exist").scan_footprints().is_err());
}

#[test]
fn process_memory_sums_anon_and_shmem() {
    let m = fixture("proc-modern").process_memory(4242).unwrap();
    assert_eq!(m.footprint_bytes, (1_048_576 + 524_288) * 1024);
    assert_eq!(m.resident_bytes, 2_097_152 * 1024);
    assert_eq!(m.swap_bytes, Some(3_145_728 * 1024));
    assert_eq!(m.peak_footprint_bytes, None);
}

#[test]
fn kernel_thread_has_zero_footprint_and_no_swap_field() {
    let m = fixture("proc-modern").process_memory(2).unwrap();
    assert_eq!(m.footprint_bytes, 0);
    assert_eq!(m.swap_bytes, None);
}

#[test]
fn vanished_pid_is_gone() {
    let c = fixture("proc-modern");
    assert!(c.process_memory(99).unwrap_err().is_gone());
    assert!(c.process_info(99).unwrap_err().is_gone());
    assert!(c.process_memory(123_456).unwrap_err().is_gone());
}

#[test]
fn process_info_reads_stat_with_parens_in_comm() {
    let info = fixture("proc-modern").process_info(4242).unwrap();
    assert_eq!(info.name, "my (weird) job");
    assert_eq!(info.ppid, 1);
    assert_eq!(info.pgid, 4242);
    assert_eq!(info.uid, 1000);
    assert_eq!(info.start_time, 987_654);
    assert_eq!(info.command, "python3 generate.py --steps 20");
}

#[test]
fn scans_skip_vanished_processes() {
    let c = fixture("proc-modern");
    let mut rows = c.scan_footprints().unwrap();
    rows.sort_by_key(|r| r.pid);
    let pids: Vec<u32> = rows.iter().map(|r| r.pid).collect();
    assert_eq!(pids, vec![1, 2, 77, 4242]);
    assert_eq!(rows[3].name, "python3");
    assert_eq!(rows[3].ppid, 1);
    assert_eq!(rows[3].uid, 1000);
    let mut infos = c.list_processes().unwrap();
    infos.sort_by_key(|i| i.pid);
    assert_eq!(infos.len(), 4);
    assert_eq!(infos[0].command, "/sbin/init splash");
    assert_eq!(infos[1].command, "");
}

#[test]
fn children_from_every_thread() {
    let c = fixture("proc-modern");
    assert_eq!(c.child_pids(1).unwrap(), vec![77, 4242]);
    assert!(c.child_pids(4242).unwrap().is_empty());
    assert!(c.child_pids(99).unwrap_err().is_gone());
}

#[test]
fn psi_parse_levels() {
    assert_eq!(
        parse_psi(
            b"some avg10=0.00 avg60=0 avg300=0 total=0\nfull avg10=0.00 avg60=0 avg300=0 total=0\n"
        ),
        Some(PressureLevel::Normal)
    );
    assert_eq!(
        parse_psi(b"some avg10=40.00 avg60=0 avg300=0 total=0\nfull avg10=25.00 avg60=0 avg300=0 total=0\n"),
        Some(PressureLevel::Critical)
    );
    // Older kernels have only a `some` line for memory.
    assert_eq!(
        parse_psi(b"some avg10=11.00 avg60=0 avg300=0 total=0\n"),
        Some(PressureLevel::Warn)
    );
    assert_eq!(parse_psi(b"garbage"), None);
}

#[test]
fn stat_parse_rejects_truncated_lines() {
    assert_eq!(parse_stat(b"12 (x) S 1 2"), None);
    assert_eq!(parse_stat(b"no parens"), None);
}

#[test]
fn real_proc_self_is_readable() {
    let c = Counters::new();
    let me = std::process::id();
    let info = c.process_info(me).unwrap();
    assert_eq!(info.pid, me);
    // SAFETY: getuid has no preconditions and cannot fail.
    assert_eq!(info.uid, unsafe { libc::getuid() });
    let mem = c.process_memory(me).unwrap();
    assert!(mem.footprint_bytes > 0 && mem.resident_bytes >= mem.footprint_bytes / 2);
    let rows = c.scan_footprints().unwrap();
    assert!(rows.iter().any(|r| r.pid == me));
    let sys = c.read_system().unwrap();
    assert!(sys.total_bytes > 0 && (0.0..=100.0).contains(&sys.free_percent));
}

#[test]
fn real_children_of_ourselves() {
    let c = Counters::new();
    let mut child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let kids = c.child_pids(std::process::id()).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(kids.contains(&child.id()), "{kids:?} lacks {}", child.id());
}

#[test]
fn zombies_are_gone() {
    let c = Counters::new();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    // Not reaped yet: a zombie once it has exited.
    let zombie = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
    });
    assert!(zombie, "child never became a zombie");
    assert!(c.process_info(pid).unwrap_err().is_gone());
    assert!(c.process_memory(pid).unwrap_err().is_gone());
    assert!(!c.scan_footprints().unwrap().iter().any(|r| r.pid == pid));
    child.wait().unwrap();
}

/// Property tests: no `/proc` content, however mangled, makes a reader panic. Cases per
/// property: `HEADROOM_FUZZ_CASES` (200 by default; `scripts/fuzz-parsers` runs many more).
mod fuzz {
    use proptest::prelude::*;

    use super::*;

    use crate::fuzz_tests::config;

    /// Text that looks like a `/proc` file: `Key: value unit` and `key value` lines with odd
    /// numbers, signs, huge values, missing fields, stray bytes.
    fn proc_text() -> impl Strategy<Value = Vec<u8>> {
        let key = "(MemTotal|MemAvailable|MemFree|SwapTotal|SwapFree|Zswap|Unevictable|AnonPages|\
                   pswpin|pswpout|pgpgin|pgpgout|some|full|Name|PPid|Uid|VmRSS|VmSwap|RssAnon|\
                   RssShmem|State|Tgid|[A-Za-z_]{0,8})";
        let value = "(-?[0-9]{0,22}(\\.[0-9]{0,4})?|avg10=[0-9.]{0,8}|[\\t ]{0,3}|\\PC{0,6})";
        let line =
            format!("{key}(:|=| )?[ \\t]{{0,4}}{value}( ?(kB|KB|mB|B|total=[0-9]{{0,25}}))?");
        let text = prop::collection::vec(
            proptest::string::string_regex(&line).expect("a valid regex"),
            0..24,
        )
        .prop_map(|lines| lines.join("\n").into_bytes());
        prop_oneof![text, prop::collection::vec(any::<u8>(), 0..512)]
    }

    /// A `/proc/PID/stat` line: `pid (comm) state fields...`, with parentheses and spaces in
    /// comm, short or long field lists.
    fn stat_text() -> impl Strategy<Value = Vec<u8>> {
        let line = "-?[0-9]{0,8} \\(\\PC{0,20}\\)? ?[A-Za-z]? ?(-?[0-9]{0,21} ){0,30}";
        prop_oneof![
            proptest::string::string_regex(line)
                .expect("a valid regex")
                .prop_map(String::into_bytes),
            prop::collection::vec(any::<u8>(), 0..256),
        ]
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn fuzz_proc_parsers_never_panic(text in proc_text(), stat in stat_text()) {
            let _ = parse_meminfo(&text);
            let _ = parse_psi(&text);
            let _ = parse_vmstat(&text);
            let _ = parse_status(&text);
            let _ = parse_cmdline(&text);
            let _ = parse_pid_list(&text);
            let _ = parse_stat(&stat);
            let _ = parse_stat(&text);
        }

        #[test]
        fn fuzz_system_reading_of_a_mangled_proc_never_panics(
            meminfo in proc_text(), vmstat in proc_text(), psi in proc_text()
        ) {
            let dir = tempfile::tempdir().expect("a temporary folder");
            std::fs::write(dir.path().join("meminfo"), &meminfo).expect("meminfo");
            std::fs::write(dir.path().join("vmstat"), &vmstat).expect("vmstat");
            std::fs::create_dir_all(dir.path().join("pressure")).expect("pressure");
            std::fs::write(dir.path().join("pressure/memory"), &psi).expect("psi");
            let counters = Counters::with_proc_root(dir.path());
            if let Ok(s) = counters.read_system() {
                prop_assert!(s.free_percent.is_finite(), "{s:?}");
            }
        }
    }
}

#[test]
fn a_process_in_exit_is_exiting_whatever_its_state_letter() {
    // A paused job killed from outside: SIGKILL wakes it, and while the kernel frees its
    // swap (100 ms and more for a few hundred MB) it shows `R` or `D`, with PF_EXITING set.
    let dir = tempfile::tempdir().unwrap();
    let counters = Counters::with_proc_root(dir.path());
    // (state letter, flags, what it is)
    let table = [
        ('R', 0x0040_0100_u64, RunState::Running),
        ('S', 0x0040_0000, RunState::Running),
        ('T', 0x0040_0000, RunState::Stopped),
        ('R', 0x0040_0104, RunState::Exiting),
        ('D', 0x0040_0004, RunState::Exiting),
        ('T', 0x0000_0004, RunState::Exiting),
        ('Z', 0x0040_010c, RunState::Dead),
    ];
    for (pid, (letter, flags, expected)) in (100u32..).zip(table) {
        let folder = dir.path().join(pid.to_string());
        std::fs::create_dir_all(&folder).unwrap();
        let stat = format!(
            "{pid} (hog (2)) {letter} 1 {pid} {pid} 0 -1 {flags} 1 0 0 0 5 3 0 0 20 0 1 0 4242 0 0"
        );
        std::fs::write(folder.join("stat"), stat).unwrap();
        let state = counters.process_state(pid).unwrap();
        assert_eq!(state.run, expected, "{letter} with flags {flags:#x}");
        assert_eq!(state.start_time, 4242);
    }
}

#[test]
fn a_light_read_takes_meminfo_now_and_the_rest_as_the_last_read_had_it() {
    let dir = tempfile::tempdir().unwrap();
    let modern = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc-modern");
    for file in ["meminfo", "vmstat"] {
        std::fs::copy(modern.join(file), dir.path().join(file)).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("pressure")).unwrap();
    std::fs::copy(
        modern.join("pressure/memory"),
        dir.path().join("pressure/memory"),
    )
    .unwrap();
    let counters = Counters::with_proc_root(dir.path());
    let full = counters.read_system().unwrap();
    // Swap grows by 1 GiB, the page counts and the pressure move.
    let meminfo = std::fs::read_to_string(modern.join("meminfo"))
        .unwrap()
        .replace("SwapFree:        3145724 kB", "SwapFree:        2097148 kB");
    assert_ne!(
        meminfo,
        std::fs::read_to_string(modern.join("meminfo")).unwrap()
    );
    std::fs::write(dir.path().join("meminfo"), meminfo).unwrap();
    let vmstat = std::fs::read_to_string(modern.join("vmstat"))
        .unwrap()
        .replace("pswpout 262144", "pswpout 524288");
    std::fs::write(dir.path().join("vmstat"), vmstat).unwrap();
    std::fs::write(
        dir.path().join("pressure/memory"),
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    )
    .unwrap();
    let light = counters.read_system_light(&full).unwrap();
    assert_eq!(light.swap_used_bytes, full.swap_used_bytes + (1 << 30));
    assert_eq!(
        light.swapped_out_bytes, full.swapped_out_bytes,
        "vmstat: as it was"
    );
    assert_eq!(light.pressure, full.pressure, "PSI: as it was");
    let next = counters.read_system().unwrap();
    assert_eq!(next.swapped_out_bytes, 524_288 * counters.page_size_bytes);
    assert_eq!(next.pressure, Some(PressureLevel::Normal));
}

#[test]
fn a_light_read_of_the_live_system_is_one_sysinfo_call_with_the_cache_carried() {
    let counters = Counters::new();
    assert!(counters.live_processes());
    let full = counters.read_system().unwrap();
    let reclaimable = full
        .reclaimable_bytes
        .expect("this kernel has MemAvailable: the reclaimable part is read");
    // sysinfo's figures are meminfo's: the same total, the same swap (within what moves
    // between two reads on a busy machine).
    let light = counters.read_system_light(&full).unwrap();
    assert_eq!(light.total_bytes, full.total_bytes);
    assert_eq!(light.swap_total_bytes, full.swap_total_bytes);
    assert!(
        light.swap_used_bytes.abs_diff(full.swap_used_bytes) < 256 << 20,
        "{} against {}",
        light.swap_used_bytes,
        full.swap_used_bytes
    );
    assert!(
        (light.free_percent - full.free_percent).abs() < 5.0,
        "{} against {}",
        light.free_percent,
        full.free_percent
    );
    assert_eq!(light.reclaimable_bytes, Some(reclaimable), "carried");
    // Its free memory is free RAM now plus the cache the last full read found: a full read
    // that had found 1 GiB more cache makes the light one 1 GiB freer (it read no meminfo).
    // (Under a memory limit that binds, free memory is the cgroup's: the host's cache is not
    // in it, and that part says nothing.)
    if full.cgroup.is_some() {
        return;
    }
    let more_cache = SystemCounters {
        reclaimable_bytes: Some(reclaimable + (1 << 30)),
        ..full.clone()
    };
    let freer = counters.read_system_light(&more_cache).unwrap();
    let one_gib_percent = 100.0 * (1u64 << 30) as f64 / full.total_bytes as f64;
    let gained = freer.free_percent - light.free_percent;
    assert!(
        (gained - one_gib_percent).abs() < 2.0 || freer.free_percent >= 100.0,
        "{gained} points, 1 GiB is {one_gib_percent}"
    );
    // The page counts, the pressure and the OOM count as the full read had them.
    assert_eq!(light.swapped_out_bytes, full.swapped_out_bytes);
    assert_eq!(light.oom_kills, full.oom_kills);
}
