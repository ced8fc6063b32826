//! The decoders on answers laid out as xnu's headers lay them out, whole and truncated.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use std::cell::Cell;

use proptest::prelude::*;

use super::*;

fn put_u32(b: &mut [u8], offset: usize, v: u32) {
    b[offset..offset + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put_u64(b: &mut [u8], offset: usize, v: u64) {
    b[offset..offset + 8].copy_from_slice(&v.to_ne_bytes());
}

/// A `proc_bsdinfo` of a stopped `python3` started at 1_700_000_000.250000.
fn bsdinfo_answer() -> Vec<u8> {
    let mut b = vec![0u8; bsdinfo::SIZE];
    put_u32(&mut b, bsdinfo::STATUS, 4); // SSTOP
    put_u32(&mut b, bsdinfo::PPID, 501);
    put_u32(&mut b, bsdinfo::RUID, 502);
    b[bsdinfo::COMM..bsdinfo::COMM + 7].copy_from_slice(b"python3");
    put_u32(&mut b, bsdinfo::PGID, 777);
    put_u64(&mut b, bsdinfo::START_SEC, 1_700_000_000);
    put_u64(&mut b, bsdinfo::START_USEC, 250_000);
    b
}

#[test]
fn bsd_info_reads_the_fields_at_xnus_offsets() {
    let info = bsd_info(&bsdinfo_answer()).unwrap();
    assert_eq!(info.run, RunState::Stopped);
    assert_eq!((info.ppid, info.pgid, info.ruid), (501, 777, 502));
    assert_eq!(info.start_micros, 1_700_000_000_250_000);
    assert_eq!(info.name, "python3", "pbi_name empty: comm");
    let mut zombie = bsdinfo_answer();
    put_u32(&mut zombie, bsdinfo::STATUS, 5);
    assert_eq!(bsd_info(&zombie).unwrap().state().run, RunState::Dead);
    let mut named = bsdinfo_answer();
    named[bsdinfo::NAME..bsdinfo::NAME + 6].copy_from_slice(b"Python");
    assert_eq!(bsd_info(&named).unwrap().name, "Python");
}

#[test]
fn the_short_answer_has_no_start_time() {
    let mut b = vec![0u8; shortinfo::SIZE];
    put_u32(&mut b, shortinfo::PPID, 1);
    put_u32(&mut b, shortinfo::PGID, 88);
    put_u32(&mut b, shortinfo::STATUS, 2);
    put_u32(&mut b, shortinfo::RUID, 0);
    b[shortinfo::COMM..shortinfo::COMM + 6].copy_from_slice(b"launch");
    let info = short_info(&b).unwrap();
    assert_eq!((info.ppid, info.pgid, info.run), (1, 88, RunState::Running));
    assert_eq!(
        info.start_micros, 0,
        "unknown: such a process is never signalled"
    );
    assert_eq!(info.name, "launch");
}

#[test]
fn vm_answers_of_each_revision_hold_only_their_fields() {
    let mut b = vec![0u8; 256 * 4];
    put_u32(&mut b, vm::WIRE_COUNT, 10);
    put_u32(&mut b, vm::PURGEABLE_COUNT, 20);
    put_u64(&mut b, vm::SWAPINS, 30);
    put_u32(&mut b, vm::COMPRESSOR_PAGE_COUNT, 40);
    put_u32(&mut b, vm::INTERNAL_PAGE_COUNT, 50);
    // REV0 (24 ints): no swap or compressor fields.
    let rev0 = VmAnswer::new(&b, vm::REV0_COUNT);
    assert_eq!(rev0.u32_at(vm::WIRE_COUNT), Some(10));
    assert_eq!(rev0.u32_at(vm::PURGEABLE_COUNT), Some(20));
    assert_eq!(rev0.u64_at(vm::SWAPINS), None);
    assert_eq!(rev0.u32_at(vm::INTERNAL_PAGE_COUNT), None);
    // REV1 (38), REV2 (40), and a newer kernel's 42: all of them.
    for count in [vm::REV1_COUNT, vm::REV2_COUNT, 42] {
        let a = VmAnswer::new(&b, count);
        assert_eq!(a.u64_at(vm::SWAPINS), Some(30), "{count}");
        assert_eq!(a.u32_at(vm::COMPRESSOR_PAGE_COUNT), Some(40));
        assert_eq!(a.u32_at(vm::INTERNAL_PAGE_COUNT), Some(50));
        assert_eq!(
            a.u64_at(38 * 4),
            (count >= 40).then_some(0),
            "swapped_count from REV2"
        );
    }
    // A count larger than the buffer reads only the buffer.
    assert_eq!(VmAnswer::new(&b[..100], 256).u64_at(vm::SWAPINS), None);
}

#[test]
fn swap_usage_unique_ids_and_the_boot_session() {
    let mut x = vec![0u8; xsw::SIZE];
    put_u64(&mut x, xsw::TOTAL, 2 << 30);
    put_u64(&mut x, 8, 1 << 30);
    put_u64(&mut x, xsw::USED, 1 << 30);
    assert_eq!(swap_usage(&x), Some((2 << 30, 1 << 30)));
    assert_eq!(swap_usage(&x[..24]), None);
    let mut u = vec![0u8; uniqinfo::SIZE];
    put_u64(&mut u, uniqinfo::UNIQUE_ID, 9001);
    put_u64(&mut u, uniqinfo::PARENT_UNIQUE_ID, 42);
    assert_eq!(unique_ids(&u), Some((9001, 42)));
    let mut uuid = b"C3F0B8B2-6E2A-4C1D-9F7E-0A1B2C3D4E5F\0".to_vec();
    assert_eq!(uuid.len(), 37, "uuid_string_t");
    assert_eq!(
        boot_session_id(&uuid).as_deref(),
        Some("C3F0B8B2-6E2A-4C1D-9F7E-0A1B2C3D4E5F")
    );
    uuid[8] = b'x';
    assert_eq!(boot_session_id(&uuid), None);
    assert_eq!(boot_session_id(b""), None);
}

#[test]
fn procargs2_skips_exec_path_and_padding() {
    let mut buf = 3i32.to_ne_bytes().to_vec();
    buf.extend_from_slice(b"/usr/bin/python3\0\0\0\0python3\0-c\0\0PATH=/usr/bin\0");
    assert_eq!(procargs2(&buf), "python3 -c ");
    assert_eq!(procargs2(&buf[..2]), "");
    assert_eq!(procargs2(&0i32.to_ne_bytes()), "");
}

#[test]
fn host_statistics_are_asked_once_a_second_and_carried() {
    // A source rate-limited as xnu does it: after 2 real calls in a window, a cached copy.
    let real_calls = Cell::new(0u32);
    let t0 = Instant::now();
    let mut gate = OncePerInterval::default();
    let mut seen = Vec::new();
    for tick in 0..30u64 {
        // Ten checks a second for three seconds.
        let now = t0 + Duration::from_millis(tick * 100);
        let v: Result<u64, ()> = gate.get(now, || {
            real_calls.set(real_calls.get() + 1);
            Ok(u64::from(real_calls.get()) * 1000)
        });
        seen.push(v.unwrap());
    }
    assert_eq!(real_calls.get(), 3, "one real call per second");
    assert!(seen.windows(2).all(|w| w[1] >= w[0]), "never back");
    // A failed call is not carried: the next read asks again.
    let mut failing = OncePerInterval::<u64>::default();
    assert!(failing.get(t0, || Err::<u64, &str>("denied")).is_err());
    assert_eq!(failing.get(t0, || Ok::<u64, &str>(7)), Ok(7));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: crate::testdata::fuzz_cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn truncated_or_mangled_answers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), count in 0u32..300) {
        let _ = bsd_info(&bytes);
        let _ = short_info(&bytes);
        let _ = swap_usage(&bytes);
        let _ = unique_ids(&bytes);
        let _ = boot_session_id(&bytes);
        let _ = procargs2(&bytes);
        let vm = VmAnswer::new(&bytes, count);
        for offset in [vm::WIRE_COUNT, vm::SWAPINS, vm::INTERNAL_PAGE_COUNT, 250, usize::MAX - 3] {
            let _ = vm.u32_at(offset);
            let _ = vm.u64_at(offset);
        }
        // A truncated answer of a whole layout is refused, not misread.
        let whole = bsdinfo_answer();
        let cut = bytes.len().min(whole.len() - 1);
        prop_assert!(bsd_info(&whole[..cut]).is_none());
    }
}

#[test]
fn procargs2_environment_ends_at_the_first_empty_string() {
    let mut buf = 2i32.to_ne_bytes().to_vec();
    buf.extend_from_slice(b"/usr/bin/python3\0\0\0\0python3\0gen.py\0HOME=/Users/me\0HEADROOM_JOB=1.2\0\0ptr_munge=\0");
    assert_eq!(
        crate::counters::xnu::procargs2_env(&buf),
        ["HOME=/Users/me", "HEADROOM_JOB=1.2"]
    );
    assert!(headroom_model::counters::env_names_job_mark(
        &["HEADROOM_JOB=9.9:1.2"],
        "1.2"
    ));
    assert!(!headroom_model::counters::env_names_job_mark(
        &["HEADROOM_JOB=11.2"],
        "1.2"
    ));
    let mut bare = 1i32.to_ne_bytes().to_vec();
    bare.extend_from_slice(b"/bin/sh\0sh\0\0apple\0");
    assert!(crate::counters::xnu::procargs2_env(&bare).is_empty());
    assert!(crate::counters::xnu::procargs2_env(&buf[..3]).is_empty());
}

#[test]
fn a_failed_host_statistics_leaves_swap_and_the_level_and_says_what_is_missing() {
    use crate::counters::CounterSource;
    // Issue 39 §5: swap, the level and memory come from sysctls that still answer.
    let mac = super::fake_tests::FakeMac::new(501);
    let reader = super::reader::XnuReader::on(mac);
    let before = reader.read_system().unwrap();
    assert!(before.in_use_bytes.is_some());
    reader.kernel().refuse_host_statistics(true);
    reader.kernel().advance(std::time::Duration::from_secs(2));
    let system = reader.read_system().unwrap();
    assert_eq!(system.total_bytes, before.total_bytes);
    assert_eq!(system.free_percent, before.free_percent);
    assert_eq!(system.swap_total_bytes, before.swap_total_bytes);
    assert_eq!(
        system.in_use_bytes, None,
        "what only the page counts say is missing"
    );
    assert_eq!(system.compressed_bytes, None);
    reader.kernel().refuse_host_statistics(false);
    reader.kernel().advance(std::time::Duration::from_secs(2));
    assert!(reader.read_system().unwrap().in_use_bytes.is_some());
}

#[test]
fn the_fake_pressure_moves_with_xnus_thresholds_and_hysteresis() {
    use super::fake_tests::pages::{pressure_after, Counts};
    // Pages: uncompressed is active (the rest 0); the compressor's pages beside it.
    let counts = |active: u64, compressor: u64| Counts {
        free: 0,
        speculative: 0,
        active,
        inactive: 0,
        wired: 0,
        compressor,
        internal: 0,
        external: 0,
        purgeable: 0,
        level: 0,
        swap_used_bytes: 0,
    };
    // (level before, uncompressed, compressor pages) -> level after. Of 100 pages the
    // compaction threshold is 50 (warn under it), 1.2 × the unthrottle one 33 (critical
    // under it); down: normal over 60, warning over 39.
    let table = [
        (1, 60, 40, 1),
        (1, 49, 51, 2),
        (1, 30, 70, 4),
        (2, 55, 45, 2),
        (2, 61, 39, 1),
        (2, 30, 70, 4),
        (4, 38, 62, 4),
        (4, 45, 55, 2),
        (4, 70, 30, 1),
    ];
    for (before, uncompressed, compressor, after) in table {
        assert_eq!(
            pressure_after(before, &counts(uncompressed, compressor)),
            after,
            "{before} with {uncompressed} + {compressor}"
        );
    }
}
