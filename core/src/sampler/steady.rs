//! Full checks back off while nothing moves. A full check reads what a light one carries
//! over (new members, the page and swap counts, pressure, the OOM count, our cgroup's
//! limit) at a cost several light checks pay; a guard of a job that sits still (a notebook
//! between cells, a server between requests) pays it for nothing. While every check finds
//! swap within [`STEADY_SWAP_BYTES`] and free memory within [`STEADY_FREE_POINTS`] of what
//! the full check that last saw a move found (so a slow drift adds up), and the full checks
//! find the same number of members, each full check doubles the spacing to the next, up to
//! [`FULL_SPACING_MAX`]. The first check that sees either move brings the spacing back to its
//! floor (a second; further apart for a large job): the next full check comes at once if that
//! much time has passed. A member that ends as another starts, using no memory, is seen at the
//! next full check only.
//! What the stop rules read, every check reads fresh, steady or not.

use std::time::Duration;

use super::FULL_SPACING_MAX;

/// Swap that moves this much from the last full check's value is a move.
pub const STEADY_SWAP_BYTES: u64 = 1 << 20;

/// Free memory that moves this many points (percent of the total) is a move.
pub const STEADY_FREE_POINTS: f64 = 1.0;

/// The spacing doubles at most this many times (1 s → 32 s, capped at
/// [`FULL_SPACING_MAX`]).
pub const STEADY_DOUBLINGS_AT_MOST: u32 = 5;

/// What the full check that last saw a move found, to compare the checks after it with.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Anchor {
    swap_used_bytes: u64,
    free_percent: f64,
    members: usize,
}

/// How long the job has sat still, in full checks (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Steadiness {
    anchor: Option<Anchor>,
    doublings: u32,
}

impl Steadiness {
    /// The spacing of full checks now: `floor`, doubled once per full check that found
    /// nothing moved, at most [`FULL_SPACING_MAX`] (or `floor`, if that is longer).
    pub fn spacing(&self, floor: Duration) -> Duration {
        floor
            .saturating_mul(1 << self.doublings)
            .min(FULL_SPACING_MAX.max(floor))
    }

    /// A check read `swap_used_bytes` and `free_percent` (`None`: it could not read them)
    /// with `members` processes in the job; `full` when it was a full one.
    pub fn saw(&mut self, full: bool, reading: Option<(u64, f64)>, members: usize) {
        let moved = match (self.anchor, reading) {
            (Some(a), Some((swap, free))) => {
                swap.abs_diff(a.swap_used_bytes) >= STEADY_SWAP_BYTES
                    || (free - a.free_percent).abs() >= STEADY_FREE_POINTS
                    || (full && members != a.members)
            }
            _ => true,
        };
        if moved {
            self.doublings = 0;
        } else if full {
            self.doublings = (self.doublings + 1).min(STEADY_DOUBLINGS_AT_MOST);
        }
        // The anchor moves only with a move: a slow drift, under the thresholds at each full
        // check, adds up against it and is a move once it passes them.
        if full && moved {
            self.anchor = reading.map(|(swap_used_bytes, free_percent)| Anchor {
                swap_used_bytes,
                free_percent,
                members,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// (full, reading, members, spacing after it)
    type Row = (bool, Option<(u64, f64)>, usize, Duration);

    #[test]
    fn still_checks_space_full_ones_out_and_a_move_brings_them_back() {
        let s = Duration::from_secs;
        let floor = s(1);
        let mut steady = Steadiness::default();
        assert_eq!(steady.spacing(floor), floor);
        let table: [Row; 15] = [
            (true, Some((100 * MIB, 50.0)), 3, s(1)), // the first full check: nothing to compare
            (false, Some((100 * MIB, 50.4)), 3, s(1)),
            (true, Some((100 * MIB + MIB / 2, 50.5)), 3, s(2)), // still: doubles
            (true, Some((100 * MIB + MIB * 9 / 10, 50.9)), 3, s(4)), // drift, still under
            (true, Some((100 * MIB, 50.0)), 3, s(8)),
            (true, Some((100 * MIB, 50.0)), 3, s(16)),
            (true, Some((100 * MIB, 50.0)), 3, FULL_SPACING_MAX), // 32 s, capped
            (true, Some((100 * MIB, 50.0)), 3, FULL_SPACING_MAX),
            (false, Some((101 * MIB, 50.0)), 3, s(1)), // a light check sees swap move
            (true, Some((101 * MIB, 50.0)), 3, s(1)),  // the full one after it anchors anew
            (true, Some((101 * MIB + MIB / 2, 50.5)), 3, s(2)),
            (true, Some((102 * MIB, 51.0)), 3, s(1)), // the drift adds up to a move
            (true, Some((102 * MIB, 51.0)), 4, s(1)), // a new member
            (false, Some((101 * MIB, 48.9)), 4, s(1)), // free memory moved 1.1 points
            (true, None, 4, s(1)),                    // an unreadable check is a move
        ];
        for (i, (full, reading, members, want)) in table.into_iter().enumerate() {
            steady.saw(full, reading, members);
            assert_eq!(steady.spacing(floor), want, "row {i}");
        }
    }

    #[test]
    fn a_floor_longer_than_the_cap_stays() {
        let mut steady = Steadiness::default();
        for _ in 0..3 {
            steady.saw(true, Some((0, 90.0)), 1);
        }
        assert_eq!(
            steady.spacing(Duration::from_secs(60)),
            Duration::from_secs(60)
        );
    }
}
