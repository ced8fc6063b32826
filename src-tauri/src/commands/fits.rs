//! "Will it fit?" in the popover: for the keys of the most recent runs, and for the process
//! picked in the Guard form, the prediction from their past runs (`headroom_rules::fit`, read
//! from the one run history) and the answer for the free memory of the latest sample, above
//! the free floor of the settings.

use std::time::SystemTime;

use headroom_core::store::Store;
use headroom_model::units::{format_bytes, unix_ms};
use headroom_rules::fit::{answer, key_of_command_line, Prediction, Room};
use serde::Serialize;
use tauri::State;

use crate::error::CommandResult;
use crate::state::{lock, AppState};

/// Keys shown at most (the most recently run).
pub const FIT_KEYS: usize = 3;
/// Past verdicts the Guard form lists at most.
const PAST_VERDICTS: usize = 5;

/// One key's answer, as the popover shows it.
#[derive(Debug, Clone, Serialize)]
pub struct UiFit {
    /// The job's key.
    key: String,
    /// Its predicted need, bytes.
    need_bytes: u64,
    /// The runs it rests on.
    runs: usize,
    /// True when it fits in the room now.
    fits: bool,
    /// What is left over (fits) or missing (won't fit), bytes.
    margin_bytes: u64,
    /// "fits now, 12 GB to spare" or "won't fit, 7.8 GB short".
    text: String,
    /// The last run's verdict word (fits, tight, doesn't fit).
    last_verdict: String,
}

/// What the Guard form shows for the process picked: its key, the answer when it has past
/// runs, and their verdicts, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct UiFitOf {
    /// The key of its command line.
    key: String,
    /// The answer, when the key has past runs.
    fit: Option<UiFit>,
    /// The verdict words of its last runs, newest first.
    past_verdicts: Vec<String>,
}

/// The room now, from the latest sample, above the free floor a guard of the settings keeps.
fn room_now(state: &AppState) -> Option<Room> {
    let limits = lock(&state.settings).limits();
    lock(&state.monitor).room(&limits)
}

fn ui_fit(key: &str, p: &Prediction, last_verdict: &str, room: Room) -> UiFit {
    let (fits, margin_bytes) = match answer(p, room) {
        Ok(spare) => (true, spare),
        Err(short) => (false, short),
    };
    let text = if fits {
        format!("fits now, {} to spare", format_bytes(margin_bytes))
    } else {
        format!("won't fit, {} short", format_bytes(margin_bytes))
    };
    UiFit {
        key: key.to_string(),
        need_bytes: p.need_bytes,
        runs: p.runs,
        fits,
        margin_bytes,
        text,
        last_verdict: last_verdict.to_string(),
    }
}

fn now_ms() -> i64 {
    unix_ms(SystemTime::now())
}

/// The answers for the keys of the most recent runs; empty without a history or a sample.
#[tauri::command]
pub fn get_fits(state: State<'_, AppState>) -> CommandResult<Vec<UiFit>> {
    let Some(room) = room_now(&state) else {
        return Ok(Vec::new());
    };
    let store = lock(&state.store);
    let Some(store) = store.as_ref() else {
        return Ok(Vec::new());
    };
    let mut fits = Vec::new();
    for key in store
        .keys()
        .map_err(|e| e.to_string())?
        .into_iter()
        .take(FIT_KEYS)
    {
        let (prediction, _) = store
            .predict_key(&key.key, now_ms())
            .map_err(|e| e.to_string())?;
        if let Some(p) = prediction {
            fits.push(ui_fit(&key.key, &p, &key.last_verdict, room));
        }
    }
    Ok(fits)
}

/// The prediction for a process picked in the Guard form and its past verdicts: of the key
/// typed in the form, else of its command line's (`headroom_rules::fit::key_of_command_line`).
#[tauri::command]
pub fn get_fit_of(
    state: State<'_, AppState>,
    command: String,
    key: Option<String>,
) -> CommandResult<UiFitOf> {
    let key = super::watch::named_key(key).unwrap_or_else(|| key_of_command_line(&command));
    let room = room_now(&state);
    let store = lock(&state.store);
    let Some(store) = store.as_ref() else {
        return Err("the run history could not be opened".into());
    };
    fit_of(store, key, room)
}

fn fit_of(store: &Store, key: String, room: Option<Room>) -> CommandResult<UiFitOf> {
    let (prediction, rows) = store
        .predict_key(&key, now_ms())
        .map_err(|e| e.to_string())?;
    let past_verdicts: Vec<String> = rows
        .iter()
        .take(PAST_VERDICTS)
        .map(|r| r.verdict.clone())
        .collect();
    let last = past_verdicts.first().cloned().unwrap_or_default();
    let fit = prediction
        .zip(room)
        .map(|(p, room)| ui_fit(&key, &p, &last, room));
    Ok(UiFitOf {
        key,
        fit,
        past_verdicts,
    })
}
