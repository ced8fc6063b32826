//! The words of each job event, in one place: the CLI's lines on stderr and the app's
//! notifications say the same things.

use crate::policy::JobEvent;
use crate::units::format_bytes;

/// Longest command shown in a notification, characters.
const NOTIFICATION_COMMAND_CHARS: usize = 60;

/// One line for people about an event (the CLI prints it after `headroom: `).
pub fn line(event: &JobEvent, command: &str) -> String {
    match event {
        JobEvent::SwapGrew { growth_bytes, .. } => format!(
            "swap grew {} while {command} runs: it doesn't fit",
            format_bytes(*growth_bytes)
        ),
        JobEvent::Warning {
            growth_bytes,
            budget_bytes,
        } => format!(
            "warning: swap grew {} of the {} budget; {command} will be stopped at the budget",
            format_bytes(*growth_bytes),
            format_bytes(*budget_bytes)
        ),
        JobEvent::Stage { stage } => format!("stage {stage} begins"),
        JobEvent::Stopped { reason } => {
            format!("stopping {command}: {reason} (SIGTERM, SIGKILL after the grace period)")
        }
        JobEvent::Finished { verdict } => format!("{command}: {verdict}"),
    }
}

/// Title and body of a notification for an event.
pub fn notification(event: &JobEvent, command: &str) -> (String, String) {
    let short: String = command.chars().take(NOTIFICATION_COMMAND_CHARS).collect();
    match event {
        JobEvent::SwapGrew { growth_bytes, .. } => (
            "Swap is growing".into(),
            format!(
                "Swap grew {} while {short} runs: it doesn't fit",
                format_bytes(*growth_bytes)
            ),
        ),
        JobEvent::Warning {
            growth_bytes,
            budget_bytes,
        } => (
            "Guard about to stop a job".into(),
            format!(
                "{short}: swap grew {} of its {} budget. Unguard it in Headroom to spare it.",
                format_bytes(*growth_bytes),
                format_bytes(*budget_bytes)
            ),
        ),
        JobEvent::Stage { stage } => ("Stage".into(), format!("{short}: stage {stage} begins")),
        JobEvent::Stopped { reason } => ("Stopped a job".into(), format!("{short}: {reason}")),
        JobEvent::Finished { verdict } => (
            if verdict.fits {
                "It fits"
            } else {
                "It doesn't fit"
            }
            .into(),
            format!("{short}: {verdict}"),
        ),
    }
}
