//! The OS boundary for acting on processes (Unix): signals, job control, socket peers, the
//! host name, opening an output that may be a FIFO, and folders opened step by step by
//! descriptor.
//!
//! Thin, checked wrappers that only report errors; every safety rule (identity re-checks,
//! never pid 0/1, ourselves or another user's process) lives in [`crate::enforce`]. Memory
//! numbers come from [`crate::counters`]; together the two folders are the only code that
//! calls into the OS (tests excepted).

#[cfg(target_os = "linux")]
pub mod cgroup;
pub mod fifo;
pub mod folder;
pub mod host;
pub mod jobctl;
pub mod peer;
pub mod pressure;
pub mod signals;
pub mod volume;
