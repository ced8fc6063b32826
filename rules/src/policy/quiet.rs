//! Quiet checks: readings that can change nothing the rules decide now, held by the driver
//! and judged a moment later, in order, with the next reading that moves (or the next
//! input, or when [`crate::policy::QUIET_HOLD`] has passed).
//!
//! A guard checks a calm job many times a second for hours; each judged check runs the
//! whole program (the job's rules, its view, its outputs), and on a small VM that costs
//! several times the reading itself (`docs/benchmarks.md`). A reading is quiet, after a
//! check of a running job far from its limits whose rules did nothing (no stop, no look
//! aimed at a crossing, no interrupt under way, no memory limit that binds), when swap in
//! use is exactly what that check read (to the page: every swap rule, the budget, its
//! warning, the growth projection and the swap steps, sees the same figure) and free memory
//! is within [`QUIET_FREE_POINTS`] of it (the free floor is at least
//! [`crate::policy::LIGHT_ROOM_PERCENT`] away). Nothing in the rules counts time alone while
//! a job runs so (the calm watch of an interrupt and a pause's checks do, and neither is
//! quiet), so judging such a reading later decides what judging it at once would have.
//! The driver takes a quiet check only where it finds what a light one would
//! (`headroom_os::members::MemberSet::quiet_look`), so the trace is the same.

use super::Observation;

/// Free memory may move this many points (percent of the total) from the last judged
/// check for a reading to be quiet: 24 MiB on a 24 GiB host, about 49 MiB on a 48 GB Mac.
pub const QUIET_FREE_POINTS: f64 = 0.1;

/// What the last judged check read, that a quiet reading matches ([`Quiet::holds`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quiet {
    /// Swap in use at the last judged check, bytes.
    pub swap_used_bytes: u64,
    /// Free memory at the last judged check, percent.
    pub free_percent: f64,
}

impl Quiet {
    /// The band around the check `obs` read.
    pub fn around(obs: &Observation) -> Quiet {
        Quiet {
            swap_used_bytes: obs.swap_used_bytes,
            free_percent: obs.free_percent,
        }
    }

    /// Whether a reading of `swap_used_bytes` and `free_percent` is quiet: the same swap,
    /// free memory within [`QUIET_FREE_POINTS`].
    pub fn holds(&self, swap_used_bytes: u64, free_percent: f64) -> bool {
        swap_used_bytes == self.swap_used_bytes
            && (free_percent - self.free_percent).abs() < QUIET_FREE_POINTS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_swap_and_nearly_the_same_free_memory_are_quiet() {
        let quiet = Quiet {
            swap_used_bytes: 100 << 20,
            free_percent: 50.0,
        };
        let table: [(u64, f64, bool); 7] = [
            (100 << 20, 50.0, true),
            (100 << 20, 50.09, true),
            (100 << 20, 49.91, true),
            (100 << 20, 50.1, false),
            (100 << 20, 49.9, false),
            ((100 << 20) + 4096, 50.0, false), // one page swapped out
            ((100 << 20) - 4096, 50.0, false), // one page back in
        ];
        for (i, (swap, free, want)) in table.into_iter().enumerate() {
            assert_eq!(quiet.holds(swap, free), want, "row {i}");
        }
    }
}
