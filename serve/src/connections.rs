//! The connections the endpoint serves, for fairness at its limit: each one's state (not
//! asked yet or answering; idle since its last answer) and a way to close it gracefully.
//!
//! A new connection that finds every place taken closes the connection idle longest since an
//! answer (a keep-alive client between its requests: hyper's graceful shutdown closes it at
//! once, or after an answer under way) and takes its place, so clients that keep every
//! connection open cannot starve a new one: a keep-alive client closed so connects again,
//! as it would after any close. A connection that has not asked yet is closed by the head
//! timeout instead, and one being answered never.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::Notify;

/// The connections being served.
#[derive(Debug, Default)]
pub(crate) struct Connections {
    next: AtomicU64,
    slots: Mutex<HashMap<u64, Arc<Slot>>>,
}

/// One connection.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// When it last answered, while it waits for its next request; `None` before its first
    /// request, while it answers one, and once it is asked to close.
    idle_since: Mutex<Option<Instant>>,
    close: Notify,
}

impl Connections {
    /// A new connection's slot, and its id for [`Connections::remove`].
    pub(crate) fn add(&self) -> (u64, Arc<Slot>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot::default());
        self.lock().insert(id, Arc::clone(&slot));
        (id, slot)
    }

    /// The connection `id` is closed.
    pub(crate) fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Asks the connection idle longest since an answer to close; false when none is idle.
    pub(crate) fn close_longest_idle(&self) -> bool {
        let slots = self.lock();
        let longest = slots
            .values()
            .filter_map(|slot| Some((slot.idle()?, slot)))
            .min_by_key(|(since, _)| *since);
        match longest {
            Some((_, slot)) => {
                *slot.state() = None;
                slot.close.notify_one();
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Slot {
    /// A request came: it is being answered.
    pub(crate) fn asked(&self) {
        *self.state() = None;
    }

    /// Its answer is made: idle from now on, until the next request.
    pub(crate) fn answered(&self) {
        *self.state() = Some(Instant::now());
    }

    /// Resolves once it is asked to close.
    pub(crate) async fn closing(&self) {
        self.close.notified().await;
    }

    fn idle(&self) -> Option<Instant> {
        *self.state()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.idle_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_idle_is_closed_never_one_asking_or_answering() {
        let all = Connections::default();
        let (_, fresh) = all.add();
        let (_, busy) = all.add();
        busy.asked();
        assert!(!all.close_longest_idle(), "none is idle");
        let (_, first) = all.add();
        first.answered();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (second_id, second) = all.add();
        second.answered();
        assert!(all.close_longest_idle());
        assert!(first.idle().is_none() && second.idle().is_some());
        assert!(fresh.idle().is_none() && busy.idle().is_none());
        all.remove(second_id);
        assert!(!all.close_longest_idle(), "the first is closing already");
    }
}
