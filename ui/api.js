// The only module that talks to Rust. Every call goes through window.__TAURI__ (the app sets
// `withGlobalTauri`), so a test can define a fake window.__TAURI__ before the page loads.
// All functions return Promises; a failed command rejects with the command's error (a string).

function tauri() {
  const t = window.__TAURI__;
  if (!t || !t.core || typeof t.core.invoke !== 'function') {
    throw new Error('Tauri API unavailable');
  }
  return t;
}

async function call(name, args) {
  return tauri().core.invoke(name, args);
}

/** What the page takes from Rust: chart windows, the tick's window, the process-list cap. */
export function getConfig() {
  return call('get_config');
}

/** System status: free %, swap, pressure. `windowSeconds` sets the swap-change window. */
export function getStatus(windowSeconds) {
  return call('get_status', { windowSeconds });
}

/** SVG markup of the history chart (rendered by Rust). */
export function getChart(windowSeconds, dark) {
  return call('get_chart', { windowSeconds, dark });
}

/** Processes sorted by footprint, filtered by `query`: { rows, total } (rows are capped). */
export function getProcesses(query) {
  return call('get_processes', { query });
}

/** Start watching a process; resolves to the Job. */
export function watch(pid) {
  return call('watch', { pid });
}

/** Start guarding a process; `swapBudget` and `killFree` are strings as typed; `onBudget`
 *  is 'stop' or 'pause'; `key` names its run history (blank: its command line's key). */
export function guard(pid, swapBudget, killFree, onBudget = 'stop', key = '') {
  return call('guard', { pid, swapBudget, killFree, onBudget, key });
}

/** Pause, resume or stop one of the app's jobs: `action` is 'pause', 'resume' or 'stop'. */
export function controlJob(action, id) {
  return call(`${action}_job`, { id });
}

/** Stop watching/guarding a job (never kills it). */
export function release(id) {
  return call('release', { id });
}

/** Jobs that ended, newest first, from the history database: their verdicts. */
export function getRecentJobs() {
  return call('get_recent_jobs');
}

/** For the keys of recent runs: the prediction and whether it fits in free memory now. */
export function getFits() {
  return call('get_fits');
}

/** For a process picked in the Guard form (by the key typed, else its command line's): the
 *  key, the answer from its past runs ({ key, fit: null | { text, fits, need_bytes, runs },
 *  past_verdicts }). */
export function getFitOf(command, key = '') {
  return call('get_fit_of', { command, key });
}

/** All jobs: watched, guarded and external (`headroom guard` in a terminal). */
export function getJobs() {
  return call('get_jobs');
}

export function getSettings() {
  return call('get_settings');
}

export function setSettings(settings) {
  return call('set_settings', { settings });
}

/**
 * Calls `handler(payload)` on every `tick` event. Resolves to an unlisten function
 * (a no-op when events are unavailable).
 */
export async function onTick(handler) {
  const t = tauri();
  if (!t.event || typeof t.event.listen !== 'function') return () => {};
  return t.event.listen('tick', (event) => handler(event ? event.payload : undefined));
}
