//! The guard's warning, pause and stop, pushed to the job: an output of the driver (on a
//! thread of its own, like every other) that sends each [`JobEvent::Warning`],
//! [`JobEvent::Paused`] and [`JobEvent::Stopped`] to the version-2 sessions open on the job's
//! socket ([`crate::socket::Sessions`]), with the stage the job is in. A job that listens
//! (the Python package's `on_warning`, `on_pause`, `on_stop`) can free memory before its
//! budget is reached, learn it was paused, or save its work within the stop's grace.

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
    grace: Duration,
}

impl SessionPushes {
    /// Pushes to `sessions`; a stop's push says `grace`, the time before SIGKILL.
    pub(super) fn new(sessions: Sessions, grace: Duration) -> Self {
        SessionPushes { sessions, grace }
    }

    /// The push an event makes, if any.
    fn push_of(&self, event: &JobEvent, view: &JobView) -> Option<Push> {
        let stage = view.current_stage.clone();
        let job = view.pid;
        match event {
            JobEvent::Warning {
                growth_bytes,
                budget_bytes,
                then,
            } => Some(Push::Warning {
                growth_bytes: *growth_bytes,
                budget_bytes: *budget_bytes,
                then: then.as_str().into(),
                stage,
                job,
            }),
            JobEvent::Paused {
                reason,
                growth_bytes,
                pause,
                max_pauses,
            } => Some(Push::Paused {
                growth_bytes: *growth_bytes,
                pause: *pause,
                max_pauses: *max_pauses,
                reason: reason.as_ref().map(ToString::to_string),
                stage,
                job,
            }),
            JobEvent::Stopped { reason } => Some(Push::Stopping {
                reason: reason.to_string(),
                grace_ms: u64::try_from(self.grace.as_millis()).unwrap_or(u64::MAX),
                stage,
                job,
            }),
            _ => None,
        }
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
        if let Some(push) = self.push_of(event, view) {
            let reached = self.sessions.push(&push);
            tracing::info!(reached, ?push, "pushed to the job's sessions");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_rules::policy::{OnBudget, StopReason};

    fn view() -> JobView {
        JobView {
            pid: 4243,
            current_stage: Some("decode".into()),
            ..JobView::default()
        }
    }

    #[test]
    fn a_warning_a_pause_and_a_stop_are_pushed_and_nothing_else() {
        let pushes = SessionPushes::new(Sessions::default(), Duration::from_secs(5));
        let budget = StopReason::SwapBudget {
            growth_bytes: 120,
            budget_bytes: 100,
        };
        let table = [
            (
                JobEvent::Warning {
                    growth_bytes: 80,
                    budget_bytes: 100,
                    then: OnBudget::Pause,
                },
                Some(
                    r#"{"warning":{"growth_bytes":80,"budget_bytes":100,"then":"pause","stage":"decode","job":4243}}"#,
                ),
            ),
            (
                JobEvent::Paused {
                    reason: None,
                    growth_bytes: 7,
                    pause: 1,
                    max_pauses: 3,
                },
                Some(
                    r#"{"paused":{"growth_bytes":7,"pause":1,"max_pauses":3,"reason":null,"stage":"decode","job":4243}}"#,
                ),
            ),
            (
                JobEvent::Stopped {
                    reason: budget.clone(),
                },
                None,
            ),
            (
                JobEvent::Stage {
                    stage: "decode".into(),
                },
                None,
            ),
        ];
        for (event, expected) in table {
            let pushed = pushes
                .push_of(&event, &view())
                .map(|p| serde_json::to_string(&p).unwrap());
            match expected {
                Some(line) => assert_eq!(pushed.as_deref(), Some(line), "{event:?}"),
                None if matches!(event, JobEvent::Stopped { .. }) => {
                    let value: serde_json::Value = serde_json::from_str(&pushed.unwrap()).unwrap();
                    assert_eq!(value["stopping"]["grace_ms"], 5000);
                    assert_eq!(value["stopping"]["reason"], budget.to_string());
                    assert_eq!(value["stopping"]["stage"], "decode");
                    assert_eq!(value["stopping"]["job"], 4243);
                }
                None => assert_eq!(pushed, None, "{event:?}"),
            }
        }
    }
}
