//! The open-file limit. A guard of a large job holds descriptors for speed (kept `/proc`
//! files, one exit watch per member) beside what it cannot do without (a pidfd for each
//! signal, its socket and sessions, the job file and trace). So it raises its soft limit to
//! the hard one at start ([`raise_open_files`]), hands the command it starts the limit as it
//! was ([`restore_for_child`]: a program that uses `select()` breaks past 1024), and holds
//! for speed only what the limit leaves after [`RESERVED`] ([`spare_descriptors`]).

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Descriptors never held for speed: what enforcement and output need at any moment (a
/// pidfd a signal, the job file and trace, the socket and its sessions, a takeover's reads).
pub const RESERVED: u64 = 48;

/// The most a soft limit is raised to: macOS refuses a soft limit past `OPEN_MAX` (10240)
/// even where the hard one is unlimited, and nothing here needs more.
const RAISED_AT_MOST: u64 = 10_240;

/// The soft limit as it was before [`raise_open_files`] (0: not raised).
static ORIGINAL_SOFT: AtomicU64 = AtomicU64::new(0);

/// [`spare_descriptors`], read once (and again after a raise): it is asked for each member
/// a look adds, and only this process changes its limit. `u64::MAX`: not read yet.
static SPARE: AtomicU64 = AtomicU64::new(u64::MAX);

/// `rlim_t` as a count: unsigned on Linux and macOS, signed on FreeBSD (where no
/// limit is negative: `RLIM_INFINITY` is its largest value).
#[allow(clippy::unnecessary_cast, clippy::cast_sign_loss)]
fn count(value: libc::rlim_t) -> u64 {
    value as u64
}

/// A count as `rlim_t` (see [`count`]; the counts here are far from either type's end).
#[allow(clippy::unnecessary_cast, clippy::cast_possible_wrap)]
fn rlim(value: u64) -> libc::rlim_t {
    value as libc::rlim_t
}

/// The limit on open files: (soft, hard).
fn get() -> io::Result<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the valid, exclusively borrowed `limit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((count(limit.rlim_cur), count(limit.rlim_max)))
}

/// Raises the soft limit on open files to the hard limit (at most 10,240); the
/// limit as it was is kept for the commands started after ([`restore_for_child`]). Returns
/// the soft limit now.
pub fn raise_open_files() -> io::Result<u64> {
    let (soft, hard) = get()?;
    let want = hard.min(RAISED_AT_MOST.max(soft));
    if want <= soft {
        return Ok(soft);
    }
    let raised = libc::rlimit {
        rlim_cur: rlim(want),
        rlim_max: rlim(hard),
    };
    // SAFETY: setrlimit reads one valid rlimit; it changes only this process's limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let _ = ORIGINAL_SOFT.compare_exchange(0, soft, Ordering::SeqCst, Ordering::SeqCst);
    SPARE.store(u64::MAX, Ordering::SeqCst);
    Ok(want)
}

/// The command gets the soft limit on open files as it was before [`raise_open_files`]
/// (nothing changes when it was not raised).
pub fn restore_for_child(cmd: &mut Command) {
    let original = ORIGINAL_SOFT.load(Ordering::SeqCst);
    if original == 0 {
        return;
    }
    let original = rlim(original);
    // SAFETY: the closure runs in the forked child before exec and calls only getrlimit and
    // setrlimit (async-signal-safe system calls) on a stack value; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur = original.min(limit.rlim_max);
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            Ok(())
        });
    }
}

/// How many descriptors may be held for speed in all (kept files and exit watches): the soft
/// limit on open files less [`RESERVED`], none when the limit cannot be read.
pub fn spare_descriptors() -> usize {
    let mut spare = SPARE.load(Ordering::Relaxed);
    if spare == u64::MAX {
        spare = get().map_or(0, |(soft, _)| soft).saturating_sub(RESERVED);
        SPARE.store(spare, Ordering::Relaxed);
    }
    usize::try_from(spare).unwrap_or(usize::MAX)
}

/// True for the errors of a process (or the system) out of descriptors.
pub fn out_of_descriptors(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spare_is_the_limit_less_the_reserve() {
        let soft = get().unwrap().0;
        assert_eq!(
            spare_descriptors() as u64,
            soft.saturating_sub(RESERVED).min(usize::MAX as u64)
        );
        assert!(out_of_descriptors(&io::Error::from_raw_os_error(
            libc::EMFILE
        )));
        assert!(!out_of_descriptors(&io::Error::from_raw_os_error(
            libc::ENOENT
        )));
    }
}
