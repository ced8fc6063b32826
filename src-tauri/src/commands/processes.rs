//! The process list (`headroom_os::process_list`): every process this user may see, by
//! footprint, filtered by the search box, capped at [`MAX_PROCESSES`] rows with the number
//! that matched.

use headroom_os::process_list::{process_list, ProcessList};
use tauri::State;

use crate::error::CommandResult;
use crate::state::AppState;

/// Most rows the process list sends.
pub const MAX_PROCESSES: usize = 150;

/// Processes sorted by footprint, filtered by `query` (name, command or pid); at most
/// `MAX_PROCESSES` rows, with the number that matched.
#[tauri::command]
pub fn get_processes(state: State<'_, AppState>, query: String) -> CommandResult<ProcessList> {
    process_list(&state.counters, &query, MAX_PROCESSES).map_err(|e| e.to_string().into())
}
