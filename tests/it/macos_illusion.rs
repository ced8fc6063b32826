//! The footprint illusion on a real Mac (macOS only; run by `.github/workflows/macos.yml` on
//! GitHub's macOS runners, never here): a child allocates and touches memory; Headroom's
//! footprint of it equals the kernel's own `proc_pid_rusage` figure, and Headroom's system
//! readings equal `sysctl`'s (swap in use, free level). Under pressure the footprint may
//! drop below what was touched (compressed or swapped pages): that is the illusion, and the
//! test says so when it sees it rather than failing.

// A panic is a failed test: tests may unwrap.
#![allow(clippy::unwrap_used)]
#![cfg(target_os = "macos")]

use crate::support;

use std::process::{Command, Stdio};
use std::time::Duration;

use headroom_os::counters::{CounterSource, Counters};
use support::{hog_path, wait_until};

/// The kernel's footprint of `pid` (`proc_pid_rusage`, `RUSAGE_INFO_V4`).
fn kernel_footprint(pid: u32) -> u64 {
    // SAFETY: an all-zero rusage_info_v4 is valid (plain integers).
    let mut info: libc::rusage_info_v4 = unsafe { std::mem::zeroed() };
    let ptr = (&mut info as *mut libc::rusage_info_v4).cast::<libc::c_void>();
    // SAFETY: `ptr` points at a live rusage_info_v4, the struct RUSAGE_INFO_V4 fills.
    let rc = unsafe {
        libc::proc_pid_rusage(
            pid as i32,
            libc::RUSAGE_INFO_V4,
            ptr.cast::<libc::rusage_info_t>(),
        )
    };
    assert_eq!(
        rc,
        0,
        "proc_pid_rusage: {}",
        std::io::Error::last_os_error()
    );
    info.ri_phys_footprint
}

fn sysctl(name: &str) -> String {
    let out = Command::new("sysctl").args(["-n", name]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `vm.swapusage`'s "used = 123.45M" in bytes.
fn swap_used_bytes() -> u64 {
    let text = sysctl("vm.swapusage");
    let used = text
        .split("used = ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let (num, unit) = used.split_at(used.len() - 1);
    let scale = match unit {
        "K" => 1u64 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => 1,
    };
    (num.parse::<f64>().unwrap() * scale as f64) as u64
}

#[test]
fn footprint_and_system_readings_match_the_kernel() {
    let counters = Counters::new();
    let mut hog = Command::new(hog_path())
        .args(["256M", "--hold", "60"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = hog.id();
    assert!(
        wait_until(Duration::from_secs(30), || kernel_footprint(pid)
            >= 200 << 20),
        "the hog never touched its memory"
    );
    let ours = counters.process_memory(pid).unwrap().footprint_bytes;
    let kernels = kernel_footprint(pid);
    let diff = ours.abs_diff(kernels);
    assert!(
        diff < 8 << 20,
        "Headroom {ours} vs proc_pid_rusage {kernels}"
    );
    if ours < 256 << 20 {
        eprintln!(
            "the illusion, seen: 256 MiB touched, footprint {} MiB",
            ours >> 20
        );
    }
    let system = counters.read_system().unwrap();
    let level: f64 = sysctl("kern.memorystatus_level").parse().unwrap();
    assert!(
        (system.free_percent - level).abs() <= 2.0,
        "{} vs {level}",
        system.free_percent
    );
    let swap = swap_used_bytes();
    assert!(
        system.swap_used_bytes.abs_diff(swap) < 64 << 20,
        "swap: Headroom {} vs sysctl {swap}",
        system.swap_used_bytes
    );
    let _ = hog.kill();
    let _ = hog.wait();
}
