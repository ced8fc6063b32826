//! The words of each job event, in one place both read: the CLI's lines on stderr and the
//! app's notifications say the same things. Words, not decisions: the engine
//! (`headroom_rules`) decides and names events; what people read of them is here.

use headroom_model::units::{format_bytes, format_duration};
use headroom_rules::policy::{JobEvent, OnBudget, StopReason};

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
            then,
        } => format!(
            "warning: swap grew {} of the {} budget; {command} will be {} at the budget",
            format_bytes(*growth_bytes),
            format_bytes(*budget_bytes),
            done(*then)
        ),
        JobEvent::Stage { stage } => format!("stage {stage} begins"),
        JobEvent::StageEnded { stage } => format!("stage {stage} ends"),
        JobEvent::Reported { report } => reported(report),
        JobEvent::Paused {
            reason,
            growth_bytes,
            pause,
            max_pauses,
        } => format!(
            "paused {command} (SIGSTOP, pause {pause} of {max_pauses}): {}; swap grew {} since it started",
            why(reason.as_ref()),
            format_bytes(*growth_bytes)
        ),
        JobEvent::MadeRoom {
            reason,
            younger_pid,
            asked,
            swap_used_bytes,
        } => format!(
            "{reason}: the younger job of pid {younger_pid} {} (the youngest pauses first); {command} goes on, a new budget counts from swap {}",
            if *asked { "is paused in its place" } else { "was paused a moment ago" },
            format_bytes(*swap_used_bytes)
        ),
        JobEvent::Interrupted { .. } | JobEvent::Rearmed { .. } => interrupt_line(event, command),
        JobEvent::Resumed {
            free_percent,
            paused,
            swap_used_bytes,
        } => format!(
            "resumed {command} after {} paused{}; a new budget counts from swap {}",
            format_duration(*paused),
            back(*free_percent),
            format_bytes(*swap_used_bytes)
        ),
        JobEvent::Stopped { reason } => {
            format!("stopping {command}: {reason} (SIGTERM, SIGKILL after the grace period)")
        }
        JobEvent::Refused { action, members } => format!(
            "warning: cannot {action} {}: {}; {}",
            pids(members.iter().map(|(pid, _)| *pid)),
            reasons(members),
            left(action)
        ),
        JobEvent::RunsAgain { pids: running, continued } => format!(
            "paused {command} runs again: {} {}; it is guarded as running, its budget applies",
            pids(running.iter().copied()),
            if *continued {
                "continued by someone else (not Headroom)"
            } else {
                "never stopped"
            }
        ),
        JobEvent::Finished { verdict } => format!("{command}: {verdict}"),
    }
}

/// `pid 42`, `pids 42, 43` (the first ten, then how many more).
fn pids(list: impl Iterator<Item = u32>) -> String {
    let all: Vec<u32> = list.collect();
    let shown: Vec<String> = all.iter().take(10).map(u32::to_string).collect();
    let more = all.len().saturating_sub(10);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    match all.len() {
        1 => format!("pid {}{tail}", shown.join(", ")),
        _ => format!("pids {}{tail}", shown.join(", ")),
    }
}

/// The distinct reasons of refused members, joined.
fn reasons(members: &[(u32, String)]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for (_, why) in members {
        if !seen.contains(&why.as_str()) {
            seen.push(why);
        }
    }
    seen.join("; ")
}

/// What a refused signal leaves.
fn left(action: &str) -> &'static str {
    match action {
        "pause" => "it keeps running",
        "resume" => "it stays stopped",
        _ => "it is left running",
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
            then,
        } => (
            format!("Guard about to {} a job", verb(*then)),
            format!(
                "{short}: swap grew {} of its {} budget. Unguard it in Headroom to spare it.",
                format_bytes(*growth_bytes),
                format_bytes(*budget_bytes)
            ),
        ),
        JobEvent::Stage { stage } => ("Stage".into(), format!("{short}: stage {stage} begins")),
        JobEvent::StageEnded { stage } => ("Stage".into(), format!("{short}: stage {stage} ends")),
        JobEvent::Reported { report } => ("Stage".into(), format!("{short}: {}", reported(report))),
        JobEvent::Paused {
            reason,
            growth_bytes,
            pause,
            max_pauses,
        } => (
            "Paused a job".into(),
            format!(
                "{short}: {} (pause {pause} of {max_pauses}); swap grew {}. Resume or stop it in Headroom.",
                why(reason.as_ref()),
                format_bytes(*growth_bytes)
            ),
        ),
        JobEvent::Interrupted { leader, hard_bytes, .. } => interrupted(&short, *leader, *hard_bytes),
        JobEvent::Rearmed { .. } => (
            "Budget back".into(),
            format!("{short}: swap stopped growing after the interrupt; its whole budget counts again."),
        ),
        JobEvent::MadeRoom { younger_pid, .. } => (
            "Paused a younger job".into(),
            format!("{short} passed its budget: the younger job of pid {younger_pid} is paused in its place."),
        ),
        JobEvent::Resumed {
            free_percent,
            paused,
            ..
        } => (
            "Resumed a job".into(),
            format!(
                "{short}: resumed after {} paused{}",
                format_duration(*paused),
                back(*free_percent)
            ),
        ),
        JobEvent::Stopped { reason } => ("Stopped a job".into(), format!("{short}: {reason}")),
        JobEvent::Refused { .. } => (
            "Cannot act on a process".into(),
            format!("{short}: {}", line(event, command).trim_start_matches("warning: ")),
        ),
        JobEvent::RunsAgain { .. } => (
            "A paused job runs again".into(),
            format!("{short}: continued from outside Headroom; guarded as running"),
        ),
        JobEvent::Finished { verdict } => (
            match verdict.word() {
                "fits" | "tight" => "It fits",
                "stopped" => "Stopped",
                _ => "It doesn't fit",
            }
            .into(),
            format!("{short}: {verdict}"),
        ),
    }
}

/// `loaded unet (4.7 GiB in 3.1 s) in stage denoise`, `released vae (160 MiB)`, `mark: label`.
fn reported(event: &headroom_rules::stages::Reported) -> String {
    let verb = match event.kind.as_str() {
        "load" => "loaded",
        "reload" => "loaded again",
        "release" => "released",
        _ => "mark:",
    };
    let mut text = verb.to_string();
    for part in [&event.name, &event.note].into_iter().flatten() {
        text.push(' ');
        text.push_str(part);
    }
    let size = event.nbytes.map(format_bytes);
    let took = event.seconds.map(|s| format!("{s:.1} s"));
    match (size, took) {
        (Some(size), Some(took)) => text.push_str(&format!(" ({size} in {took})")),
        (Some(one), None) | (None, Some(one)) => text.push_str(&format!(" ({one})")),
        (None, None) => {}
    }
    if let Some(stage) = &event.stage {
        text.push_str(&format!(" in stage {stage}"));
    }
    text
}

/// The line of an interrupt at the budget, or of the budget given back after it
/// (`--on-budget interrupt`).
fn interrupt_line(event: &JobEvent, command: &str) -> String {
    match event {
        JobEvent::Interrupted {
            reason,
            leader,
            hard_bytes,
            swap_used_bytes,
        } => format!(
            "interrupted {command} (SIGINT to pid {leader}): {reason}; it is stopped if swap grows {} more from {}, and gets its budget again once swap stops growing",
            format_bytes(*hard_bytes),
            format_bytes(*swap_used_bytes)
        ),
        JobEvent::Rearmed { swap_used_bytes } => format!(
            "swap stopped growing after the interrupt: {command} has its whole budget again, from swap {}",
            format_bytes(*swap_used_bytes)
        ),
        _ => String::new(),
    }
}

/// The notification of an interrupt at the budget (`--on-budget interrupt`).
fn interrupted(short: &str, leader: u32, hard_bytes: u64) -> (String, String) {
    (
        "Interrupted a job".into(),
        format!(
            "{short} passed its budget: SIGINT to pid {leader} (KeyboardInterrupt in Python). Stopped if swap grows {} more.",
            format_bytes(hard_bytes)
        ),
    )
}

/// What the guard does at the budget, as a past participle.
fn done(then: OnBudget) -> &'static str {
    match then {
        OnBudget::Stop => "stopped",
        OnBudget::Pause => "paused",
        OnBudget::Interrupt => "interrupted",
    }
}

/// What the guard does at the budget, as a verb.
fn verb(then: OnBudget) -> &'static str {
    match then {
        OnBudget::Stop => "stop",
        OnBudget::Pause => "pause",
        OnBudget::Interrupt => "interrupt",
    }
}

/// Why a job was paused.
fn why(reason: Option<&StopReason>) -> String {
    reason.map_or_else(|| "on request".to_string(), ToString::to_string)
}

/// Why it was resumed, when free memory brought it back.
fn back(free_percent: Option<f64>) -> String {
    free_percent.map_or_else(String::new, |f| format!(", free memory back at {f:.0}%"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_pid_and_why() {
        let event = JobEvent::Refused {
            action: "stop".into(),
            members: vec![(71, "pid 71 belongs to uid 65534, not to us (uid 0)".into())],
        };
        let line = line(&event, "x");
        assert!(line.starts_with("warning: cannot stop pid 71"), "{line}");
    }

    #[test]
    fn a_warning_says_what_happens_at_the_budget() {
        let event = JobEvent::Warning {
            growth_bytes: 850 << 20,
            budget_bytes: 1000 << 20,
            then: OnBudget::Pause,
        };
        assert!(line(&event, "x").contains("will be paused at the budget"));
        assert_eq!(notification(&event, "x").0, "Guard about to pause a job");
    }
}
