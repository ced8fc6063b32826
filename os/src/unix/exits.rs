//! Exit watches: which of a job's members have exited, asked of the kernel in one call
//! instead of one `/proc/PID/stat` read per member. On Linux each watch is a pidfd
//! ([`super::pidfd`]) and [`ExitWatches::any_exited`] is one `poll(2)` with no timeout over
//! all of them. Elsewhere there is no watch ([`ExitWatch::open`] is `None`) and members are
//! looked at by their state, as before (macOS reads that with one `proc_pidinfo` call, no
//! file).
//!
//! A watch is opened before the read that identifies its process (pid and start time) and
//! kept only when the process has not exited after that read: the pidfd then names the very
//! process that was read, whatever becomes of its pid later.

/// One process's exit, as the kernel will tell it.
#[derive(Debug)]
pub struct ExitWatch {
    #[cfg(target_os = "linux")]
    pinned: super::pidfd::Pinned,
}

impl ExitWatch {
    /// A watch on whatever process `pid` names now; `None` where the OS has none, the kernel
    /// refuses one (no pidfds, out of descriptors) or the process is gone.
    pub fn open(pid: u32) -> Option<ExitWatch> {
        #[cfg(target_os = "linux")]
        {
            let pinned = super::pidfd::Pinned::open(pid).ok().flatten()?;
            Some(ExitWatch { pinned })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = pid;
            None
        }
    }

    /// True once the process has exited (a zombie not yet reaped included).
    pub fn exited(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            super::pidfd::any_ready(&mut [self.pinned.poll_exit()])
        }
        #[cfg(not(target_os = "linux"))]
        {
            true
        }
    }
}

/// The exit watches of some of a job's members, by `K` (their identity).
#[derive(Debug)]
pub struct ExitWatches<K> {
    watched: Vec<(K, ExitWatch)>,
    /// What one poll is asked, kept between checks (no allocation per check).
    #[cfg(target_os = "linux")]
    polls: Vec<libc::pollfd>,
}

/// A copy watches nothing: its members are looked at by their state until it opens watches
/// of its own (a descriptor is not shared between copies).
impl<K> Clone for ExitWatches<K> {
    fn clone(&self) -> Self {
        ExitWatches::default()
    }
}

impl<K> Default for ExitWatches<K> {
    fn default() -> Self {
        ExitWatches {
            watched: Vec::new(),
            #[cfg(target_os = "linux")]
            polls: Vec::new(),
        }
    }
}

impl<K: Copy + PartialEq> ExitWatches<K> {
    /// How many members are watched.
    pub fn len(&self) -> usize {
        self.watched.len()
    }

    /// True when no member is watched.
    pub fn is_empty(&self) -> bool {
        self.watched.is_empty()
    }

    /// True when `id` is watched.
    pub fn watches(&self, id: K) -> bool {
        self.watched.iter().any(|(w, _)| *w == id)
    }

    /// Watches `id` with `watch` (opened before `id` was read: see the module's header).
    pub fn add(&mut self, id: K, watch: ExitWatch) {
        if !self.watches(id) {
            self.watched.push((id, watch));
        }
    }

    /// Keeps the watches of the members `keep` says still are (closing the others).
    pub fn retain(&mut self, mut keep: impl FnMut(K) -> bool) {
        self.watched.retain(|(id, _)| keep(*id));
    }

    /// True when a watched member has exited, asked all at once (or the asking failed: look
    /// the slow way then).
    pub fn any_exited(&mut self) -> bool {
        #[cfg(target_os = "linux")]
        {
            self.polls.clear();
            self.polls
                .extend(self.watched.iter().map(|(_, w)| w.pinned.poll_exit()));
            super::pidfd::any_ready(&mut self.polls)
        }
        #[cfg(not(target_os = "linux"))]
        {
            !self.watched.is_empty()
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_watch_sees_its_process_exit_before_and_after_it_is_reaped() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let watch = ExitWatch::open(child.id()).expect("pidfds on this kernel");
        assert!(!watch.exited());
        child.kill().unwrap();
        let exited = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            watch.exited()
        });
        assert!(exited, "a zombie counts as exited");
        child.wait().unwrap();
        assert!(watch.exited(), "and so does a reaped process");
    }

    #[test]
    fn one_poll_over_several_watches_and_the_ones_kept() {
        let mut a = Command::new("sleep").arg("30").spawn().unwrap();
        let mut b = Command::new("sleep").arg("30").spawn().unwrap();
        let mut watches = ExitWatches::<u32>::default();
        for child in [&a, &b] {
            watches.add(child.id(), ExitWatch::open(child.id()).unwrap());
        }
        watches.add(a.id(), ExitWatch::open(a.id()).unwrap());
        assert_eq!(watches.len(), 2, "one watch per member");
        assert!(!watches.any_exited());
        b.kill().unwrap();
        b.wait().unwrap();
        assert!(watches.any_exited());
        watches.retain(|pid| pid != b.id());
        assert_eq!(watches.len(), 1);
        assert!(!watches.any_exited());
        assert!(watches.clone().is_empty(), "a copy watches nothing");
        a.kill().unwrap();
        a.wait().unwrap();
        assert!(watches.any_exited());
    }

    #[test]
    fn no_watch_on_a_pid_that_names_no_process() {
        assert!(ExitWatch::open(u32::try_from(libc::pid_t::MAX).unwrap()).is_none());
    }
}
