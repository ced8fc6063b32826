//! The notifications whose buttons still wait for a click, by notification id: at most
//! [`WAITING_MAX`] at once. Holding one more gives up the oldest, handed back to be closed:
//! its buttons answer nothing after that, and its job keeps what it would have without a
//! click. On macOS each notification with buttons keeps a thread of the notification plugin
//! blocked (and a timer on the main run loop) until the user clears it; in a menu-bar app that
//! runs for weeks they must not pile up.

use std::collections::VecDeque;

/// How many notifications with buttons wait for a click at once.
pub const WAITING_MAX: usize = 8;

/// The waiting notifications, oldest first, each with what it holds (`T`: its answer and
/// texts).
#[derive(Debug)]
pub struct Waiting<T> {
    last_id: i32,
    held: VecDeque<(i32, T)>,
}

impl<T> Default for Waiting<T> {
    fn default() -> Self {
        Self {
            last_id: 0,
            held: VecDeque::new(),
        }
    }
}

impl<T> Waiting<T> {
    /// Holds `entry` for a new notification: its id (never 0, never one still held), and the
    /// notifications given up to keep at most [`WAITING_MAX`], oldest first.
    pub fn hold(&mut self, entry: T) -> (i32, Vec<(i32, T)>) {
        let id = loop {
            self.last_id = self.last_id.wrapping_add(1);
            let id = self.last_id;
            if id != 0 && !self.held.iter().any(|(held, _)| *held == id) {
                break id;
            }
        };
        self.held.push_back((id, entry));
        let over = self.held.len().saturating_sub(WAITING_MAX);
        (id, self.held.drain(..over).collect())
    }

    /// What notification `id` holds, once; `None` when it was answered or given up.
    pub fn take(&mut self, id: i32) -> Option<T> {
        let at = self.held.iter().position(|(held, _)| *held == id)?;
        self.held.remove(at).map(|(_, entry)| entry)
    }

    /// How many wait now.
    pub fn len(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_waiting_max_wait_and_the_oldest_is_given_up_first() {
        let mut waiting = Waiting::default();
        let mut ids = Vec::new();
        for n in 0..WAITING_MAX {
            let (id, given_up) = waiting.hold(n);
            assert!(given_up.is_empty(), "{n}");
            ids.push(id);
        }
        assert_eq!(waiting.len(), WAITING_MAX);
        // One more: the oldest goes, handed back with what it held.
        let (newest, given_up) = waiting.hold(WAITING_MAX);
        assert_eq!(given_up, vec![(ids[0], 0)]);
        assert_eq!(waiting.len(), WAITING_MAX);
        assert_eq!(
            waiting.take(ids[0]),
            None,
            "given up: its buttons answer nothing"
        );
        assert_eq!(waiting.take(newest), Some(WAITING_MAX));
        assert_eq!(waiting.take(newest), None, "a button answers once");
        // An answered one makes room: the next holds without giving any up.
        assert!(waiting.hold(99).1.is_empty());
        let (_, given_up) = waiting.hold(100);
        assert_eq!(given_up, vec![(ids[1], 1)]);
    }

    #[test]
    fn ids_wrap_past_zero_and_skip_an_id_still_held() {
        let mut waiting = Waiting {
            last_id: i32::MAX - 1,
            held: VecDeque::from([(1, 'a')]),
        };
        assert_eq!(waiting.hold('b').0, i32::MAX);
        assert_eq!(waiting.hold('c').0, i32::MIN);
        waiting.last_id = -1;
        assert_eq!(waiting.hold('d').0, 2, "0 is no id, 1 is still held");
        assert_eq!(waiting.take(1), Some('a'));
    }
}
