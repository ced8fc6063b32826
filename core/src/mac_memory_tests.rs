//! What a Mac holds, run here (issue 29): the fake Mac's page model with xnu's accounting
//! ([`headroom_os::counters::xnu::fake_tests::pages`]) under the macOS reader, the sampler, the
//! engine, a run's need, the room now, `fit`'s answer and the queue's admission, for a job
//! that fills RAM without swapping, one that compresses, one that swaps, and two started
//! together. The level (`kern.memorystatus_level`) is derived from the pages as xnu derives
//! it, so every test here would pass on the old rules only if the level saw active pages.

#![allow(clippy::unwrap_used)] // tests: a panic is a failed test

use std::time::{Duration, UNIX_EPOCH};

use crate::queue::{decide, Memory, Place};
use crate::sampler::{read_sample, ErrorOnce};
use headroom_model::counters::SystemCounters;
use headroom_model::process::ProcessIdentity;
use headroom_os::counters::xnu::fake_tests::pages::SWAP_FILE_BYTES;
use headroom_os::counters::xnu::fake_tests::{FakeMac, PAGE_BYTES};
use headroom_os::counters::xnu::reader::XnuReader;
use headroom_os::counters::CounterSource;
use headroom_os::members::{MemberSet, Members};
use headroom_rules::engine::{Engine, JobMode, JobSpec, Moment, StartMemory};
use headroom_rules::fit::{answer, need_of, predict, recorded, PastRun, Room, Taken};
use headroom_rules::policy::share::OtherJob;
use headroom_rules::policy::{EndReason, Limits, Verdict};

const GIB: u64 = 1 << 30;
const USER: u32 = 501;
/// The free floor every "will it fit" keeps here, percent (the default's).
/// A guard's default limits (its free floor).
fn limits() -> headroom_rules::policy::Limits {
    headroom_rules::policy::Limits::default()
}

/// A Mac with the user's guard (pid returned).
fn mac() -> (XnuReader<FakeMac>, u32) {
    let mac = FakeMac::new(USER);
    let guard = mac.spawn_user(USER, "headroom");
    (XnuReader::on(mac), guard)
}

/// One watched job on the fake Mac, sampled once a second as the guard samples it.
struct Job<'a> {
    reader: &'a XnuReader<FakeMac>,
    engine: Engine,
    id: u64,
    set: MemberSet,
    leader: u32,
    start: SystemCounters,
    seconds: u64,
}

impl<'a> Job<'a> {
    /// Starts `python3` under `guard`, as `headroom watch` would.
    fn start(reader: &'a XnuReader<FakeMac>, guard: u32) -> Self {
        let leader = reader.kernel().spawn(guard, "python3");
        reader.kernel().own_group(leader);
        let start_time = reader.process_state(leader).unwrap().start_time;
        let identity = ProcessIdentity {
            pid: leader,
            start_time,
        };
        let set = MemberSet::new(Members::of_command(identity, None));
        let start = reader.read_system().unwrap();
        let mut engine = Engine::default();
        let spec = JobSpec::new(
            "python3 gen.py".into(),
            JobMode::Watch,
            Limits::default(),
            Duration::from_secs(1),
        );
        let id = engine.add(set.ids(), spec, StartMemory::of(&start), moment(0));
        Job {
            reader,
            engine,
            id,
            set,
            leader,
            start,
            seconds: 0,
        }
    }

    /// The job touches `bytes` more, then a second passes and the guard samples.
    fn touch(&mut self, bytes: u64) {
        self.reader.kernel().touch(self.leader, bytes);
        self.reader.kernel().advance(Duration::from_secs(1));
        self.sample();
    }

    /// The job as another guard's job file shows it: its leader and its footprint at its
    /// guard's last reading.
    fn as_other(&self) -> OtherJob {
        let view = &self.engine.views()[0];
        OtherJob {
            leader: ProcessIdentity {
                pid: view.pid,
                start_time: view.start_time,
            },
            footprint_bytes: view.footprint_bytes.unwrap(),
            read_at_ms: headroom_model::units::unix_ms(moment(self.seconds).at),
        }
    }

    /// The guard samples (a second after the last): the fake Mac's clock is the caller's.
    fn sample(&mut self) {
        self.seconds += 1;
        let mut sample = read_sample(
            self.reader,
            std::slice::from_ref(&self.set),
            &mut ErrorOnce::default(),
            self.seconds,
            Duration::from_secs(self.seconds),
            None,
        );
        sample.at = moment(self.seconds).at;
        self.engine.on_sample(&sample);
    }

    /// What it has taken so far, as the queue's reservation counts it.
    fn taken_bytes(&self) -> u64 {
        let views = self.engine.views();
        views[0].taken_bytes.unwrap()
    }

    /// It exits; its verdict and the need of its run. A second passes: the page counts are
    /// asked once a second.
    fn end(mut self) -> (Verdict, u64) {
        self.reader.kernel().exit(self.leader);
        self.reader.kernel().advance(Duration::from_secs(1));
        self.engine
            .end(self.id, EndReason::Exited { code: 0 }, moment(self.seconds));
        let verdict = self.engine.verdict(self.id).unwrap().clone();
        let taken = Taken::here(&self.start, self.start.free_percent);
        assert!(
            matches!(taken, Taken::Machine { .. }),
            "a Mac's run: {taken:?}"
        );
        let (need, lower_bound) = need_of(&verdict, taken);
        assert!(!lower_bound);
        (verdict, need)
    }
}

fn moment(seconds: u64) -> Moment {
    Moment {
        at: UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds),
        clock: Duration::from_secs(seconds),
    }
}

fn room(reader: &XnuReader<FakeMac>) -> Room {
    Room::for_guard(&reader.read_system().unwrap(), &limits())
}

/// The room as the level alone said it (the rule before issue 29): free percent × memory.
fn room_by_level(system: &SystemCounters) -> u64 {
    headroom_model::units::percent_of_bytes(system.free_percent, system.total_bytes)
}

fn one_run(need_bytes: u64) -> headroom_rules::fit::Prediction {
    predict(&[PastRun {
        need_bytes,
        age: Duration::from_secs(3600),
        did_not_fit: false,
        run_time: None,
    }])
    .unwrap()
}

fn near(got: u64, want: u64, slack: u64) -> bool {
    got.abs_diff(want) <= slack
}

#[test]
fn a_job_touching_20_gb_leaves_the_level_alone_and_raises_memory_in_use_by_20_gb() {
    let (reader, guard) = mac();
    let before = reader.read_system().unwrap();
    let mut job = Job::start(&reader, guard);
    for _ in 0..10 {
        job.touch(2 * GIB);
    }
    let during = reader.read_system().unwrap();
    assert_eq!(
        during.free_percent, before.free_percent,
        "active pages count as free"
    );
    assert!(near(
        during.in_use_bytes.unwrap() - before.in_use_bytes.unwrap(),
        20 * GIB,
        2 << 20
    ));
    assert_eq!(during.swap_used_bytes, 0);
    let footprint = reader.process_memory(job.leader).unwrap().footprint_bytes;
    assert!(near(footprint, 20 * GIB, 2 << 20), "{footprint}");
    // The room is what is not in use: 20 GB less while it runs.
    let (room_before, room_during) = (before.room_bytes(), during.room_bytes());
    assert!(near(room_before - room_during, 20 * GIB, 2 << 20));
    assert_eq!(
        room_by_level(&during),
        room_by_level(&before),
        "the old rule saw nothing"
    );
    // It frees half before it ends: the room comes back, its need stays at its peak.
    reader.kernel().release(job.leader, 10 * GIB);
    job.touch(0);
    let freed = reader.read_system().unwrap();
    assert!(near(freed.room_bytes() - room_during, 10 * GIB, 2 << 20));
    // Its need is the 20 GB the machine lost, not the level's drop (0).
    let (verdict, need) = job.end();
    assert!(near(need, 20 * GIB, 2 << 20), "{need}");
    assert_eq!(verdict.lowest_free_percent, Some(before.free_percent));
    assert!(verdict.in_use_taken_bytes.is_some());
    // Once it has ended, its memory is free again.
    assert!(near(
        reader.read_system().unwrap().room_bytes(),
        room_before,
        2 << 20
    ));
}

#[test]
fn fit_answers_by_the_room_not_the_level() {
    let (reader, guard) = mac();
    let mut job = Job::start(&reader, guard);
    for _ in 0..10 {
        job.touch(2 * GIB);
    }
    let (_, need) = job.end();
    let p = one_run(need);
    // Alone on the Mac: it fits, as it did.
    assert!(answer(&p, room(&reader)).is_ok(), "{:?}", room(&reader));
    // With another 20 GB job holding its memory (touched, active: the level does not move),
    // it won't fit; the level's room would have said it does.
    let mut other = Job::start(&reader, guard);
    for _ in 0..10 {
        other.touch(2 * GIB);
    }
    let system = reader.read_system().unwrap();
    assert!(answer(&p, Room::for_guard(&system, &limits())).is_err());
    let by_level = Room {
        free_bytes: room_by_level(&system),
        floor_bytes: system.percent_bytes(limits().kill_free_percent),
    };
    assert!(answer(&p, by_level).is_ok(), "the defect the room fixes");
}

#[test]
fn a_job_that_compresses_needs_less_than_its_footprint_and_all_the_room_it_had() {
    let (reader, guard) = mac();
    let mut job = Job::start(&reader, guard);
    let room_at_start = job.start.room_bytes();
    for _ in 0..20 {
        job.touch(2 * GIB);
    }
    let system = reader.read_system().unwrap();
    let footprint = reader.process_memory(job.leader).unwrap().footprint_bytes;
    assert_eq!(system.swap_used_bytes, 0, "compressed, not swapped");
    assert!(system.compressed_bytes.unwrap() > job.start.compressed_bytes.unwrap());
    assert!(
        system.free_percent < job.start.free_percent,
        "compression lowers the level"
    );
    let rise = system.in_use_bytes.unwrap() - job.start.in_use_bytes.unwrap();
    let (_, need) = job.end();
    // Its footprint counts its compressed pages whole: what it took is the room it had
    // (policy::share), not its footprint.
    assert!(rise < footprint, "rise {rise}, footprint {footprint}");
    assert!(need < footprint, "need {need}, footprint {footprint}");
    assert!(
        need + GIB >= room_at_start - 2 * GIB,
        "need {need}, room {room_at_start}"
    );
    // So it is predicted not to fit in the room it started with: it only fit by compressing.
    let p = one_run(need);
    let start_room = Room {
        free_bytes: room_at_start,
        floor_bytes: 0,
    };
    assert!(answer(&p, start_room).is_err());
}

#[test]
fn a_job_that_swaps_needs_ram_and_swap_and_its_footprint_passes_physical_memory() {
    let (reader, guard) = mac();
    let mut job = Job::start(&reader, guard);
    let room_at_start = job.start.room_bytes();
    for _ in 0..35 {
        job.touch(2 * GIB);
    }
    let system = reader.read_system().unwrap();
    let footprint = reader.process_memory(job.leader).unwrap().footprint_bytes;
    assert!(
        footprint > system.total_bytes,
        "70 GB on a 48 GB Mac: {footprint}"
    );
    assert!(system.swap_used_bytes > 0);
    // macOS grows swap a file at a time.
    assert_eq!(system.swap_total_bytes % SWAP_FILE_BYTES, 0);
    assert!(system.swap_total_bytes >= system.swap_used_bytes);
    assert!(system.swap_total_bytes < system.swap_used_bytes + SWAP_FILE_BYTES);
    let (verdict, need) = job.end();
    assert!(!verdict.fits);
    let swap = verdict.swap_growth_bytes;
    assert_eq!(need, verdict.in_use_taken_bytes.unwrap() + swap);
    assert!(need > room_at_start, "need {need}, room {room_at_start}");
    assert!(answer(&one_run(need), room(&reader)).is_err());
}

#[test]
fn two_jobs_started_together_are_not_admitted_into_the_same_room() {
    let (reader, guard) = mac();
    let need = 20 * GIB;
    let place = |pid: u32, ticket: u64| Place {
        guard: ProcessIdentity { pid, start_time: 1 },
        ticket,
        key: "gen".into(),
        command: "python3 gen.py".into(),
        need_bytes: Some(need),
        run_time_ms: None,
        joined_at_ms: 0,
        admitted_at_ms: None,
        used_bytes: 0,
    };
    let decide_now = |me: &Place, others: &[Place]| {
        let memory = Memory {
            room: room(&reader),
            now_ms: 0,
        };
        decide(me, others, memory)
    };
    let (mut a, b) = (place(900, 1), place(901, 2));
    assert!(
        decide_now(&a, std::slice::from_ref(&b)).is_ok(),
        "A fits alone"
    );
    a.admitted_at_ms = Some(0);
    // A starts: its need is reserved, and B (same need) waits...
    assert!(decide_now(&b, std::slice::from_ref(&a)).is_err());
    let mut job = Job::start(&reader, guard);
    for step in 1..=10 {
        job.touch(2 * GIB);
        a.used_bytes = job.taken_bytes();
        // ...while A takes its memory (the reservation shrinks as the room does)...
        assert!(
            decide_now(&b, std::slice::from_ref(&a)).is_err(),
            "second {step}"
        );
    }
    // ...and once A holds it all. By the level, the room never moved: with A's reservation
    // used up, B would have been admitted into memory A holds.
    assert!(near(a.used_bytes, need, 2 << 20));
    let system = reader.read_system().unwrap();
    let by_level = Memory {
        room: Room {
            free_bytes: room_by_level(&system),
            floor_bytes: system.percent_bytes(limits().kill_free_percent),
        },
        now_ms: 0,
    };
    assert!(
        decide(&b, std::slice::from_ref(&a), by_level).is_ok(),
        "the old defect"
    );
    // When A ends, B starts.
    job.end();
    a.used_bytes = 0;
    assert!(decide_now(&b, &[]).is_ok());
}

#[test]
fn a_recorded_run_without_page_counts_is_measured_by_the_recorded_rule() {
    // A Mac run whose page counts were never read (a stageload trace, or host_statistics
    // refused): the rule of `fit::recorded` applies, from footprint, swap and the level.
    let (reader, guard) = mac();
    let mut job = Job::start(&reader, guard);
    for _ in 0..10 {
        job.touch(2 * GIB);
    }
    let (mut verdict, need) = job.end();
    verdict.in_use_taken_bytes = None;
    let base = reader.read_system().unwrap().level_base_bytes();
    let start = verdict.lowest_free_percent.unwrap();
    let by_rule = recorded(&verdict, base, start);
    assert!(near(by_rule, need, 4 << 20), "{by_rule} vs {need}");
}

#[test]
fn the_level_is_a_share_of_usable_memory_and_compressed_is_the_compressors_pages() {
    let (reader, _) = mac();
    let system = reader.read_system().unwrap();
    let usable = system.usable_bytes.unwrap();
    assert!(
        usable < system.total_bytes,
        "hw.memsize_usable < hw.memsize"
    );
    assert_eq!(system.level_base_bytes(), usable);
    assert_eq!(
        system.percent_bytes(system.free_percent),
        headroom_model::units::percent_of_bytes(system.free_percent, usable)
    );
    let c = reader.kernel().memory(|m| m.counts());
    assert_eq!(system.compressed_bytes, Some(c.compressor * PAGE_BYTES));
    let mut sysctl = [0u8; 8];
    let len = headroom_os::counters::xnu::reader::Xnu::sysctl(
        reader.kernel(),
        "vm.compressor_bytes_used",
        &mut sysctl,
    )
    .unwrap();
    assert_eq!(len, 8);
    assert!(
        u64::from_ne_bytes(sysctl) < c.compressor * PAGE_BYTES,
        "not the sysctl"
    );
    // Wired memory (a GPU allocation) lowers the level by its share of usable memory.
    reader.kernel().memory(|m| m.wire(4 * GIB));
    reader.kernel().advance(Duration::from_secs(1));
    let wired = reader.read_system().unwrap();
    let fell = system.free_percent - wired.free_percent;
    let expected = (4 * GIB) as f64 * 100.0 / usable as f64;
    assert!((fell - expected).abs() <= 1.0, "{fell} vs {expected}");
    assert!(near(
        wired.in_use_bytes.unwrap() - system.in_use_bytes.unwrap(),
        4 * GIB,
        1 << 20
    ));
}

#[test]
fn a_zombies_rusage_answers_a_zero_footprint_and_its_peak_and_it_is_no_member() {
    let (reader, guard) = mac();
    let mut job = Job::start(&reader, guard);
    job.touch(GIB);
    let leader = job.leader;
    reader.kernel().exit(leader); // a zombie: the guard has not reaped it
    let memory = reader.process_memory(leader).unwrap();
    assert_eq!(
        memory.footprint_bytes, 0,
        "xnu zeroes the exit rusage's footprint"
    );
    assert!(memory.peak_footprint_bytes.unwrap() >= GIB, "{memory:?}");
    assert_eq!(job.set.refresh(&reader).0, None, "a zombie is no member");
    reader.kernel().reap(leader);
    assert!(reader.process_memory(leader).unwrap_err().is_gone());
}

/// Two guards' jobs on one Mac, each sampled once a second with the other's job file (its
/// footprint a reading old, as the file holds it) beside it.
fn grow_together(a: &mut Job, b: &mut Job, a_bytes: u64, b_bytes: u64, seconds: u32) {
    for _ in 0..seconds {
        a.reader.kernel().touch(a.leader, a_bytes);
        b.reader.kernel().touch(b.leader, b_bytes);
        a.reader.kernel().advance(Duration::from_secs(1));
        let (a_file, b_file) = (a.as_other(), b.as_other());
        a.engine.set_other_jobs(vec![b_file]);
        b.engine.set_other_jobs(vec![a_file]);
        a.sample();
        b.sample();
    }
}

#[test]
fn two_jobs_growing_at_once_each_take_their_own_not_the_machines_rise() {
    // A grows 12 GB, B 4 GB in the same seconds: the machine's rise (16 GB) is each guard's
    // rise; each job's need is its own, within 15 % (the old rule gave B 16 GB).
    let (reader, guard) = mac();
    let mut a = Job::start(&reader, guard);
    let mut b = Job::start(&reader, guard);
    a.sample();
    b.sample();
    grow_together(&mut a, &mut b, 1200 << 20, 400 << 20, 10);
    let (a_taken, b_taken) = (a.taken_bytes(), b.taken_bytes());
    let rise = reader.read_system().unwrap().in_use_bytes.unwrap() - a.start.in_use_bytes.unwrap();
    assert!(near(rise, 16 * GIB, GIB), "rise {rise}");
    let within = |got: u64, own: u64| got.abs_diff(own) as f64 <= own as f64 * 0.15;
    assert!(within(a_taken, 12 * GIB), "A took {a_taken}");
    assert!(within(b_taken, 4 * GIB), "B took {b_taken}");
    assert!(
        a_taken + b_taken <= rise + GIB,
        "the rise counted once, not for each"
    );
    let (_, b_need) = b.end();
    let (_, a_need) = a.end();
    assert!(within(a_need, 12 * GIB), "A needs {a_need}");
    assert!(within(b_need, 4 * GIB), "B needs {b_need}");
}

#[test]
fn memory_no_footprint_shows_is_shared_among_the_jobs_that_grew() {
    // 4 GB wired as A (6 GB) and B (2 GB) grow (a GPU's buffers, allocated as the jobs
    // grow): no footprint shows it; it is shared 3:1, the whole counted once.
    let (reader, guard) = mac();
    let mut a = Job::start(&reader, guard);
    let mut b = Job::start(&reader, guard);
    a.sample();
    b.sample();
    for _ in 0..10 {
        reader.kernel().memory(|m| m.wire(400 << 20));
        grow_together(&mut a, &mut b, 600 << 20, 200 << 20, 1);
    }
    // They hold it a second: the other's job file catches up.
    grow_together(&mut a, &mut b, 0, 0, 1);
    let (a_taken, b_taken) = (a.taken_bytes(), b.taken_bytes());
    assert!(near(a_taken, 9 * GIB, GIB / 2), "A took {a_taken}");
    assert!(near(b_taken, 3 * GIB, GIB / 2), "B took {b_taken}");
}

#[test]
fn an_app_quitting_during_a_job_never_lowers_its_need_below_its_footprint() {
    // 10 GB of an app is given back while the job takes 8 GB: memory in use falls, the
    // job's rise is 0, and its need stays what it held.
    let (reader, guard) = mac();
    let app = reader.kernel().spawn_user(USER, "Xcode");
    reader.kernel().touch(app, 10 * GIB);
    reader.kernel().advance(Duration::from_secs(1));
    let mut job = Job::start(&reader, guard);
    for second in 0..8 {
        if second == 2 {
            reader.kernel().exit(app);
        }
        job.touch(GIB);
    }
    let now = reader.read_system().unwrap().in_use_bytes.unwrap();
    assert!(
        now < job.start.in_use_bytes.unwrap(),
        "the machine's rise is below 0"
    );
    let footprint = reader.process_memory(job.leader).unwrap().footprint_bytes;
    assert!(job.taken_bytes() >= footprint);
    let (_, need) = job.end();
    assert!(need >= footprint, "need {need}, footprint {footprint}");
    assert!(near(need, 8 * GIB, GIB / 2), "need {need}");
}

#[test]
fn a_third_job_waits_while_two_admitted_jobs_grow_at_once() {
    // A (needs 12 GB) and B (needs 8 GB) admitted together, both growing; C (needs 14 GB)
    // must wait until their reservations are really used: on the old rule each counted the
    // other's growth as its own, their reservations ran out at half way and C was let in.
    let (reader, guard) = mac();
    let place = |pid: u32, ticket: u64, need_bytes: u64| Place {
        guard: ProcessIdentity { pid, start_time: 1 },
        ticket,
        key: format!("job{ticket}"),
        command: format!("python3 job{ticket}.py"),
        need_bytes: Some(need_bytes),
        run_time_ms: None,
        joined_at_ms: 0,
        admitted_at_ms: Some(0),
        used_bytes: 0,
    };
    let (mut pa, mut pb) = (place(900, 1, 12 * GIB), place(901, 2, 8 * GIB));
    let mut pc = place(902, 3, 14 * GIB);
    pc.admitted_at_ms = None;
    let decide_now = |me: &Place, others: &[Place]| {
        let memory = Memory {
            room: room(&reader),
            now_ms: 0,
        };
        decide(me, others, memory)
    };
    // With A and B reserved, C's 14 GB is more than what is left (the Mac has 48).
    assert!(decide_now(&pc, &[pa.clone(), pb.clone()]).is_err());
    let mut a = Job::start(&reader, guard);
    let mut b = Job::start(&reader, guard);
    a.sample();
    b.sample();
    for step in 1..=10 {
        grow_together(&mut a, &mut b, 1200 << 20, 800 << 20, 1);
        pa.used_bytes = a.taken_bytes();
        pb.used_bytes = b.taken_bytes();
        assert!(
            decide_now(&pc, &[pa.clone(), pb.clone()]).is_err(),
            "second {step}: A used {}, B used {}",
            pa.used_bytes,
            pb.used_bytes
        );
    }
    // Once both end, C starts.
    a.end();
    b.end();
    assert!(decide_now(&pc, &[]).is_ok());
}

#[test]
fn the_pressure_level_follows_the_pages_as_xnu_moves_it() {
    // Normal while RAM holds the job, warning once the compressor holds about as much as
    // what is not compressed, and back (with xnu's hysteresis) once the job has gone. (The
    // fake swaps before the uncompressed pages fall to critical's third.)
    use headroom_model::counters::PressureLevel;
    let (reader, guard) = mac();
    let pressure = || reader.read_system().unwrap().pressure;
    assert_eq!(pressure(), Some(PressureLevel::Normal));
    let mut job = Job::start(&reader, guard);
    let mut seen = vec![PressureLevel::Normal];
    for _ in 0..40 {
        job.touch(2 * GIB);
        let now = pressure().unwrap();
        if seen.last() != Some(&now) {
            seen.push(now);
        }
    }
    assert_eq!(seen, vec![PressureLevel::Normal, PressureLevel::Warn]);
    job.end();
    assert_eq!(pressure(), Some(PressureLevel::Normal));
}
