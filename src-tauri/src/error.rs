//! The one error type of the page's commands: serialized to the page as
//! `{"field": "swap_budget" | null, "message": "...", "text": "..."}`. `field` names the form
//! field at fault (a settings key, or `swap_budget`, `kill_free`, `on_budget` of the guard
//! form), `message` says what is wrong without the field's name, `text` is the whole
//! sentence for a toast. The page places errors by `field`; it never parses the text.

use headroom_core::settings::FieldError;
use headroom_core::settings::LimitsFieldError;
use serde::Serialize;

/// A command's error, as the page gets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{text}")]
pub struct CommandError {
    /// The form field at fault, if one is.
    pub field: Option<&'static str>,
    /// What is wrong (without the field's name).
    pub message: String,
    /// The whole sentence: `swap budget: invalid size 'x': …`.
    pub text: String,
}

impl CommandError {
    /// An error of form field `field` (its key), named `label` for people.
    pub fn field(field: &'static str, label: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        CommandError {
            field: Some(field),
            text: format!("{label}: {message}"),
            message,
        }
    }
}

impl From<String> for CommandError {
    fn from(message: String) -> Self {
        CommandError {
            field: None,
            text: message.clone(),
            message,
        }
    }
}

impl From<&str> for CommandError {
    fn from(message: &str) -> Self {
        CommandError::from(message.to_string())
    }
}

impl From<FieldError> for CommandError {
    fn from(e: FieldError) -> Self {
        CommandError::field(e.field.key(), e.field.label(), e.message)
    }
}

impl From<LimitsFieldError> for CommandError {
    fn from(e: LimitsFieldError) -> Self {
        CommandError::field(e.field.key(), e.field.label(), e.message)
    }
}

/// What a command returns.
pub type CommandResult<T> = Result<T, CommandError>;
