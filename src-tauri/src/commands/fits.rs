//! "Will it fit?" in the popover: for the keys of the most recent runs, the prediction from
//! their past runs (`headroom_core::fit`, read from the one run history) and the answer for
//! the free memory of the latest sample, above the free floor of the settings.

use std::time::Duration;

use headroom_core::fit::answer;
use headroom_core::units::{format_bytes, unix_ms};
use serde::Serialize;
use tauri::State;

use crate::error::CommandResult;
use crate::state::{lock, AppState};

/// Keys shown at most (the most recently run).
pub const FIT_KEYS: usize = 3;

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

/// The answers for the keys of the most recent runs; empty without a history or a sample.
#[tauri::command]
pub fn get_fits(state: State<'_, AppState>) -> CommandResult<Vec<UiFit>> {
    let Some(status) = lock(&state.monitor).status(Duration::from_secs(60)) else {
        return Ok(Vec::new());
    };
    let floor_percent = lock(&state.settings).default_kill_free_percent;
    let of_total = |percent: f64| (percent.max(0.0) / 100.0 * status.total_bytes as f64) as u64;
    let (free_bytes, floor_bytes) = (of_total(status.free_percent), of_total(floor_percent));
    let store = lock(&state.store);
    let Some(store) = store.as_ref() else {
        return Ok(Vec::new());
    };
    let now_ms = unix_ms(std::time::SystemTime::now());
    let mut fits = Vec::new();
    for key in store
        .keys()
        .map_err(|e| e.to_string())?
        .into_iter()
        .take(FIT_KEYS)
    {
        let (Some(p), _) = store
            .predict_key(&key.key, now_ms)
            .map_err(|e| e.to_string())?
        else {
            continue;
        };
        let answer = answer(&p, free_bytes, floor_bytes);
        let (fits_now, margin_bytes) = match answer {
            Ok(spare) => (true, spare),
            Err(short) => (false, short),
        };
        let text = if fits_now {
            format!("fits now, {} to spare", format_bytes(margin_bytes))
        } else {
            format!("won't fit, {} short", format_bytes(margin_bytes))
        };
        fits.push(UiFit {
            key: key.key,
            need_bytes: p.need_bytes,
            runs: p.runs,
            fits: fits_now,
            margin_bytes,
            text,
            last_verdict: key.last_verdict,
        });
    }
    Ok(fits)
}
