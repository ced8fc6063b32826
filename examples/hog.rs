//! A memory hog for Headroom's end-to-end tests: allocates and touches SIZE of memory, then
//! holds it until killed (or for `--hold`).
//!
//! `hog SIZE [--children N] [--delay MS] [--step-ms MS] [--hold SECONDS] [--tag WORD]`:
//! `--step-ms` sleeps after each MiB (a slow allocator); with `--children`,
//! it first starts N child hogs of 1 MiB each (with the same tag), so that its process tree
//! has descendants to stop; `--delay` waits before allocating; `--tag` only marks the command
//! line so tests can find every hog they started; `--term-file PATH` writes the wall-clock
//! time (Unix nanoseconds) at which SIGTERM arrived to PATH, then exits 143 (for the
//! reaction-time benchmark); `--main-exits-first SECONDS` ends the main thread once the
//! memory is held, while a second thread holds on for SECONDS and then exits the process
//! with status 7 (the main thread a zombie meanwhile, as in a multi-threaded program's
//! `exit_group`, only longer). Touching every page
//! makes the memory resident; under a memory cgroup limit the kernel then swaps it out while
//! the hog's footprint stays near the limit (the footprint illusion).

use std::process::{Child, Command, ExitCode};
use std::time::Duration;

const PAGE: usize = 4096;
const CHUNK: usize = 1 << 20;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(size) = args
        .first()
        .and_then(|s| headroom_model::units::parse_bytes(s).ok())
    else {
        eprintln!("usage: hog SIZE [--children N] [--hold SECONDS]");
        return ExitCode::from(2);
    };
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    if let Some(i) = args.iter().position(|a| a == "--term-file") {
        let Some(path) = args.get(i + 1).cloned() else {
            return ExitCode::from(2);
        };
        if let Err(e) = record_sigterm(path) {
            eprintln!("hog: cannot catch SIGTERM: {e}");
            return ExitCode::from(1);
        }
    }
    let mut children: Vec<Child> = Vec::new();
    for _ in 0..flag("--children").unwrap_or(0) {
        let Ok(exe) = std::env::current_exe() else {
            return ExitCode::from(1);
        };
        let mut cmd = Command::new(exe);
        cmd.arg("1M");
        if let Some(i) = args.iter().position(|a| a == "--tag") {
            cmd.args(&args[i..(i + 2).min(args.len())]);
        }
        match cmd.spawn() {
            Ok(child) => children.push(child),
            Err(e) => {
                eprintln!("hog: cannot start a child: {e}");
                return ExitCode::from(1);
            }
        }
    }
    if let Some(ms) = flag("--delay") {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let chunks = usize::try_from(size).unwrap_or(usize::MAX).div_ceil(CHUNK);
    let mut held: Vec<Vec<u8>> = Vec::with_capacity(chunks);
    let step = flag("--step-ms").map(Duration::from_millis);
    for i in 0..chunks {
        if let Some(step) = step {
            std::thread::sleep(step);
        }
        let mut chunk = vec![0u8; CHUNK];
        // A different byte per page and chunk: every page is touched and distinct.
        for (p, page) in chunk.chunks_mut(PAGE).enumerate() {
            page[0] = (i.wrapping_mul(31).wrapping_add(p) % 251) as u8 + 1;
            page[PAGE / 2] = page[0].wrapping_mul(7);
        }
        held.push(chunk);
    }
    eprintln!("hog: holding {} MiB in pid {}", chunks, std::process::id());
    if let Some(seconds) = flag("--main-exits-first") {
        main_exits_first(held, Duration::from_secs(seconds));
    }
    let hold = flag("--hold").map_or(Duration::MAX, Duration::from_secs);
    std::thread::sleep(hold);
    std::hint::black_box(&held);
    for mut child in children {
        let _ = child.kill();
        let _ = child.wait();
    }
    ExitCode::SUCCESS
}

/// Ends the main thread; a second thread holds `held` for `hold`, then exits the process
/// with status 7. (Linux: `SYS_exit` ends the calling thread alone, with no unwinding; a
/// `pthread_exit` would unwind into Rust's `main`. Elsewhere the main thread waits.)
fn main_exits_first(held: Vec<Vec<u8>>, hold: Duration) -> ! {
    let worker = std::thread::spawn(move || {
        std::thread::sleep(hold);
        std::hint::black_box(&held);
        std::process::exit(7);
    });
    #[cfg(target_os = "linux")]
    // SAFETY: SYS_exit ends only the calling (main) thread; the process lives on in the
    // worker, which owns everything it uses and ends the process.
    unsafe {
        libc::syscall(libc::SYS_exit, 0);
    }
    let _ = worker.join();
    std::process::exit(7)
}

/// On SIGTERM, writes the time it arrived to `path` and exits 143.
fn record_sigterm(path: String) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGTERM])?;
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            let _ = std::fs::write(&path, now.to_string());
            std::process::exit(143);
        }
    });
    Ok(())
}
