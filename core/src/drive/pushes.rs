//! The guard's warning, pushed to the job: an output of the driver (on a thread of its own,
//! like every other) that sends each [`JobEvent::Warning`] to the version-2 sessions open on
//! the job's socket ([`crate::socket::Sessions`]), with the stage the job is in. A job that
//! listens (the Python package's `on_warning`) can free memory before its budget is reached.

use std::io;
use std::time::Duration;

use super::outputs::Sink;
use crate::socket::{Push, Sessions};
use headroom_rules::engine::JobView;
use headroom_rules::policy::JobEvent;

/// Pushes the guard's warnings to the job's sessions.
#[derive(Debug)]
pub(super) struct SessionPushes {
    sessions: Sessions,
}

impl SessionPushes {
    pub(super) fn new(sessions: Sessions) -> Self {
        SessionPushes { sessions }
    }
}

impl Sink for SessionPushes {
    fn name(&self) -> String {
        "the job's connections".into()
    }

    fn wants_samples(&self) -> bool {
        false
    }

    fn event(&mut self, _t: Duration, event: &JobEvent, view: &JobView) -> io::Result<()> {
        if let JobEvent::Warning {
            growth_bytes,
            budget_bytes,
            then,
        } = event
        {
            let reached = self.sessions.push(&Push::Warning {
                growth_bytes: *growth_bytes,
                budget_bytes: *budget_bytes,
                then: then.as_str().into(),
                stage: view.current_stage.clone(),
                job: view.pid,
            });
            tracing::info!(reached, "the warning was pushed to the job's sessions");
        }
        Ok(())
    }
}
