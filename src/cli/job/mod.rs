//! The commands about one job: `guard` (with its place in line for `--wait-fit`, its
//! signals, its sinks and its CI report), `watch`, `pause|resume|stop`, `mark`, `queue`,
//! and the budget flags they share.

pub mod budget;
pub mod control;
pub mod guard;
pub mod mark;
pub mod queue;
pub mod report;
pub mod signals;
pub mod sinks;
pub mod wait_fit;
pub mod watch;
