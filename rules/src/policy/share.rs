//! What a job took of the machine's memory in use, where the OS counts memory by pages
//! (macOS): its own footprint, with the machine-wide rise since its start shared among the
//! jobs that grew, never counted whole for each (docs/safety.md, "What a job took").
//!
//! The rise of memory in use since a job started holds what the job took that no footprint
//! shows (wired GPU memory, the kernel's share), but also what every other process took or
//! gave back in that time. So a job is charged:
//!
//! - its share of the rise, in proportion to how much its footprint grew beside the
//!   footprint growth of the other jobs running (`rise × own ÷ (own + others)`; the whole
//!   rise when no job's footprint grew: nobody else to share it with);
//! - never less than its own footprint: an app that quits while the job runs lowers the
//!   rise, not what the job holds. The footprint counts as much as the room the job found
//!   at its start at most ([`own_bytes`]): a footprint counts compressed pages at their
//!   uncompressed size, so a job that fit by compressing took all the room it had, not its
//!   footprint (a recorded Pixal3D run peaked at a 69.6 GB footprint on a 48 GB Mac
//!   without swapping).

use std::time::Duration;

pub use super::Others;
use headroom_model::process::ProcessIdentity;

/// Another job running beside the one judged (of the same engine, or of another guard as its
/// job file says), as its share of the rise is weighed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OtherJob {
    /// Its leader.
    pub leader: ProcessIdentity,
    /// Its footprint as last read, bytes.
    pub footprint_bytes: u64,
    /// When that footprint was read, ms since the Unix epoch.
    pub read_at_ms: i64,
}

/// How much the footprints of the jobs in `now` grew since `at_start` (the same jobs as seen
/// when the judged job started), bytes: a job not seen then counts whole, one that shrank or
/// ended counts nothing.
pub fn others_growth_bytes(at_start: &[OtherJob], now: &[OtherJob]) -> u64 {
    now.iter()
        .map(|other| {
            let base = at_start
                .iter()
                .find(|o| o.leader == other.leader)
                .map_or(0, |o| o.footprint_bytes);
            other.footprint_bytes.saturating_sub(base)
        })
        .fold(0u64, u64::saturating_add)
}

/// A job's footprint as what it took counts it: `footprint_bytes`, at most `room_start_bytes`
/// (the memory not in use at its start).
pub fn own_bytes(footprint_bytes: u64, room_start_bytes: u64) -> u64 {
    footprint_bytes.min(room_start_bytes)
}

/// The others of one observation at `now_ms` (none when there are none): their growth since
/// `at_start`, and the age of the oldest footprint among them.
pub fn others_of(at_start: &[OtherJob], now: &[OtherJob], now_ms: i64) -> Option<Others> {
    let oldest_ms = now.iter().map(|o| o.read_at_ms).min()?;
    let lag_ms = u64::try_from(now_ms.saturating_sub(oldest_ms)).unwrap_or(0);
    Some(Others {
        growth_bytes: others_growth_bytes(at_start, now),
        lag: Duration::from_millis(lag_ms),
    })
}

/// What a job took, bytes: `rise_bytes` (memory in use now less at its start, pages) shared
/// by `own_bytes` (its footprint now) against `others_growth_bytes` (how much the other
/// running jobs' footprints grew since it started), and at least `own_bytes`.
pub fn taken_bytes(rise_bytes: u64, own_bytes: u64, others_growth_bytes: u64) -> u64 {
    let grown = u128::from(own_bytes) + u128::from(others_growth_bytes);
    let share = if grown == 0 || others_growth_bytes == 0 {
        u128::from(rise_bytes)
    } else {
        u128::from(rise_bytes) * u128::from(own_bytes) / grown
    };
    u64::try_from(share).unwrap_or(u64::MAX).max(own_bytes)
}

#[cfg(test)]
mod tests {
    use super::{others_growth_bytes, taken_bytes, OtherJob};
    use headroom_model::process::ProcessIdentity;

    const GIB: u64 = 1 << 30;

    #[test]
    fn a_job_is_charged_its_share_of_the_rise_and_never_less_than_its_footprint() {
        // (rise, own, others' growth) -> taken
        let table = [
            // Alone: the whole rise (wired memory its footprint does not show included).
            (20 * GIB, 16 * GIB, 0, 20 * GIB),
            // Alone, footprint above the rise (an app quit meanwhile): its footprint.
            (2 * GIB, 10 * GIB, 0, 10 * GIB),
            // Two jobs growing at once, 8 and 4 GiB: each its own, not 12.
            (12 * GIB, 8 * GIB, 4 * GIB, 8 * GIB),
            (12 * GIB, 4 * GIB, 8 * GIB, 4 * GIB),
            // 3 GiB no footprint shows, shared 2:1.
            (15 * GIB, 8 * GIB, 4 * GIB, 10 * GIB),
            // The other job's growth is not the job's: none of its own, nothing to share.
            (4 * GIB, 0, 4 * GIB, 0),
            // No rise, no footprint.
            (0, 0, 0, 0),
            // Counts near the top of u64 do not overflow.
            (u64::MAX, u64::MAX, u64::MAX, u64::MAX),
        ];
        for (rise, own, others, want) in table {
            assert_eq!(
                taken_bytes(rise, own, others),
                want,
                "rise {rise}, own {own}, others {others}"
            );
        }
    }

    #[test]
    fn a_footprint_counts_up_to_the_room_found_at_the_start() {
        use super::own_bytes;
        assert_eq!(own_bytes(8 * GIB, 40 * GIB), 8 * GIB);
        // 69.6 GB of footprint in 43 GB of room: it compressed, and took the room.
        assert_eq!(own_bytes(70 * GIB, 43 * GIB), 43 * GIB);
        assert_eq!(own_bytes(0, 0), 0);
    }

    #[test]
    fn the_others_growth_is_counted_from_the_judged_jobs_start() {
        let job = |pid: u32, footprint_bytes: u64| OtherJob {
            leader: ProcessIdentity { pid, start_time: 7 },
            footprint_bytes,
            read_at_ms: 0,
        };
        let at_start = [job(10, 4 * GIB), job(11, 2 * GIB)];
        // 10 grew by 1, 11 shrank (nothing), 12 started since (whole).
        let now = [job(10, 5 * GIB), job(11, GIB), job(12, 3 * GIB)];
        assert_eq!(others_growth_bytes(&at_start, &now), 4 * GIB);
        // A pid reused by another process is another job.
        let reused = [OtherJob {
            leader: ProcessIdentity {
                pid: 10,
                start_time: 8,
            },
            footprint_bytes: 5 * GIB,
            read_at_ms: 0,
        }];
        assert_eq!(others_growth_bytes(&at_start, &reused), 5 * GIB);
        assert_eq!(others_growth_bytes(&at_start, &[]), 0);
    }
}
