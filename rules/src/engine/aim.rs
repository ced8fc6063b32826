//! Looks aimed at the crossing. Between two regular checks of a running guard, one more look
//! comes just after the moment swap, growing at its rate, would pass the budget
//! ([`crate::policy::aim`]): a crossing is then seen within milliseconds of it instead of up
//! to a whole interval later (the sampler's phase against the crossing was all of a guard's
//! reaction time, `docs/benchmarks.md`). Such a look applies the stop rules but the growth
//! projection (`Ledger::judge_between`): two looks a few milliseconds apart are one piece of
//! evidence, and a job still under its budget when the projection said it would be past it
//! grew slower than projected (the projection starts again). So a guard that aims its looks
//! stops a job at the crossing itself, not before it, and the regular checks keep their
//! schedule. The look's sample says it was aimed
//! (`Sample::aimed`, the trace's `aimed`), so that a replay of its trace decides as the live
//! run did, and a trace without aimed looks (all of them before) replays as it always did.

use std::time::Duration;

/// When a running job's next looks come.
#[derive(Debug, Clone, Default)]
pub(super) struct Looks {
    /// When the next regular check is due (job clock).
    regular_at: Option<Duration>,
    /// The interval from the last look to the next one, and whether it is aimed.
    next: Option<(Duration, bool)>,
}

impl Looks {
    /// A regular check at `t`: the next one is due `check` later.
    pub(super) fn regular(&mut self, t: Duration, check: Duration) {
        self.regular_at = Some(t + check);
    }

    /// Whether the look at `t` is at (or past) the time of the next regular check: an aimed
    /// look there is that check too.
    pub(super) fn regular_due(&self, t: Duration) -> bool {
        self.regular_at
            .is_none_or(|at| t + Duration::from_millis(1) >= at)
    }

    /// The time from the look at `t` to the next regular check (`check` without one).
    pub(super) fn until_regular(&self, t: Duration, check: Duration) -> Duration {
        self.regular_at.map_or(check, |at| at.saturating_sub(t))
    }

    /// After the look at `t`: the next comes `aim` later when one is aimed, else at the
    /// regular check.
    pub(super) fn next(&mut self, t: Duration, aim: Option<Duration>, check: Duration) {
        self.next = Some(match aim {
            Some(aim) => (aim, true),
            None => (self.until_regular(t, check), false),
        });
    }

    /// The interval to the next look and whether it is aimed, once a running job was
    /// looked at.
    pub(super) fn next_look(&self) -> Option<(Duration, bool)> {
        self.next
    }

    /// The job is not running: no look is aimed, the regular checks start again.
    pub(super) fn clear(&mut self) {
        *self = Looks::default();
    }
}
