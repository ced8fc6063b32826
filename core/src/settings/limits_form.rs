//! The app's guard form: the text a user types for a job's limits (swap budget, free-memory
//! floor, what to do at the budget), checked into [`Limits`] with an error that names the
//! field. Beside the settings form (`form.rs`), its twin: words and forms are read by what
//! shows them, not decided by the rules.

use serde::Deserialize;

use headroom_model::units::{parse_bytes, parse_percent};
use headroom_rules::policy::{Limits, OnBudget};

/// A field of the guard form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitsField {
    /// The swap budget (`8G`).
    SwapBudget,
    /// The free-memory floor, percent (`10`).
    KillFree,
    /// `stop` or `pause`.
    OnBudget,
}

impl LimitsField {
    /// The field's key, as the page names its inputs.
    pub fn key(self) -> &'static str {
        match self {
            LimitsField::SwapBudget => "swap_budget",
            LimitsField::KillFree => "kill_free",
            LimitsField::OnBudget => "on_budget",
        }
    }

    /// The field's name for people.
    pub fn label(self) -> &'static str {
        match self {
            LimitsField::SwapBudget => "swap budget",
            LimitsField::KillFree => "kill free",
            LimitsField::OnBudget => "on budget",
        }
    }
}

/// A value of the guard form that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", field.label())]
pub struct LimitsFieldError {
    /// The field at fault.
    pub field: LimitsField,
    /// What is wrong with it.
    pub message: String,
}

/// What the guard form sends: text as typed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LimitsForm {
    /// The swap budget, e.g. `8G` or `512M`; more than 0.
    pub swap_budget: String,
    /// The free-memory floor, percent, e.g. `10` or `10%`.
    pub kill_free: String,
    /// `stop` (when absent) or `pause`.
    pub on_budget: Option<String>,
}

impl LimitsForm {
    /// `base` (the settings' limits) with the form's budget, floor and choice; the first bad
    /// field is the error.
    pub fn apply(&self, base: Limits) -> Result<Limits, LimitsFieldError> {
        let error = |field, message| LimitsFieldError { field, message };
        let budget = parse_bytes(&self.swap_budget)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                let text = &self.swap_budget;
                let message = format!("invalid size '{text}': expected e.g. 8G or 512M");
                error(LimitsField::SwapBudget, message)
            })?;
        let floor = parse_percent(&self.kill_free)
            .map_err(|e| error(LimitsField::KillFree, e.to_string()))?;
        let on_budget = match self.on_budget.as_deref() {
            None => OnBudget::Stop,
            Some(text) => OnBudget::parse(text).ok_or_else(|| {
                let message = format!("'{text}' is not one of stop, pause");
                error(LimitsField::OnBudget, message)
            })?,
        };
        Ok(Limits {
            swap_budget_bytes: budget,
            kill_free_percent: floor,
            on_budget,
            ..base
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(budget: &str, floor: &str, on_budget: Option<&str>) -> LimitsForm {
        LimitsForm {
            swap_budget: budget.into(),
            kill_free: floor.into(),
            on_budget: on_budget.map(Into::into),
        }
    }

    #[test]
    fn good_values_replace_the_base() {
        let base = Limits::default();
        let limits = form("512M", "15%", Some("pause"))
            .apply(base.clone())
            .unwrap();
        assert_eq!(limits.swap_budget_bytes, 512 << 20);
        assert_eq!(limits.kill_free_percent, 15.0);
        assert_eq!(limits.on_budget, OnBudget::Pause);
        assert_eq!(limits.wait_free_percent, base.wait_free_percent);
        let limits = form("8G", "10", None).apply(base).unwrap();
        assert_eq!(limits.on_budget, OnBudget::Stop);
    }

    #[test]
    fn each_bad_field_is_named() {
        let table = [
            (form("lots", "10", None), LimitsField::SwapBudget),
            (form("0", "10", None), LimitsField::SwapBudget),
            (form("8G", "200", None), LimitsField::KillFree),
            (form("8G", "ten", None), LimitsField::KillFree),
            (form("8G", "10", Some("kill")), LimitsField::OnBudget),
        ];
        for (form, field) in table {
            let error = form.apply(Limits::default()).unwrap_err();
            assert_eq!(error.field, field, "{form:?}");
            assert!(error.to_string().starts_with(field.label()), "{error}");
        }
    }
}
