//! A job-file listing read at most once per interval, for callers on a hot path: the app's
//! metrics are fed on every sample (every 100 ms near a budget), and a folder read with a
//! liveness check per file each time would be most of a sample's cost.

use std::time::{Duration, Instant};

use super::JobFile;

/// How old a listing may be before it is read again: job files are rewritten about once a
/// second, so a fresher listing would show nothing new.
pub const LISTING_MAX_AGE: Duration = Duration::from_secs(1);

/// The last listing of the job files and when it was read.
#[derive(Debug, Clone)]
pub struct Listing {
    max_age: Duration,
    last: Option<(Instant, Vec<JobFile>)>,
}

impl Default for Listing {
    fn default() -> Self {
        Listing::new(LISTING_MAX_AGE)
    }
}

impl Listing {
    /// A listing read again when it is older than `max_age`.
    pub fn new(max_age: Duration) -> Self {
        Listing {
            max_age,
            last: None,
        }
    }

    /// The jobs as of at most `max_age` before `now`; `read` (usually [`JobFile::list`]) runs
    /// only when the last listing is older than that, or there is none.
    pub fn get(&mut self, now: Instant, read: impl FnOnce() -> Vec<JobFile>) -> &[JobFile] {
        let fresh = self
            .last
            .as_ref()
            .is_some_and(|(at, _)| now.saturating_duration_since(*at) < self.max_age);
        if !fresh {
            self.last = Some((now, read()));
        }
        self.last.as_ref().map_or(&[], |(_, jobs)| jobs.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn reads_at_most_once_per_max_age() {
        let reads = Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Vec::new()
        };
        let mut listing = Listing::new(Duration::from_secs(1));
        let t0 = Instant::now();
        let table = [
            (0, 1),    // no listing yet: read
            (100, 1),  // 100 ms old: reused
            (999, 1),  // still fresh
            (1000, 2), // 1 s old: read again
            (1500, 2),
            (2100, 3),
        ];
        for (at_ms, expected_reads) in table {
            listing.get(t0 + Duration::from_millis(at_ms), read);
            assert_eq!(reads.get(), expected_reads, "at {at_ms} ms");
        }
    }
}
