// The Jobs and Processes sections: refreshing them, and what their buttons do (watch, guard,
// unwatch or unguard, pause, resume, stop), each with a toast.

import * as api from './api.js';
import { errorText } from './format.js';
import { toast } from './toast.js';
import { renderJobs, trackedPids } from './jobs.js';
import { renderRecent } from './recent.js';
import { renderProcesses } from './processes.js';
import { currentSettings } from './settings.js';
import { state, failed, succeeded } from './state.js';

export async function refreshJobs() {
  const seq = ++state.seq.jobs;
  try {
    const jobs = await api.getJobs();
    if (seq !== state.seq.jobs) return;
    state.jobs = Array.isArray(jobs) ? jobs : [];
    renderJobs(state.jobs, { onRelease, onControl });
    succeeded('jobs');
    const recent = await api.getRecentJobs();
    if (seq !== state.seq.jobs) return;
    renderRecent(Array.isArray(recent) ? recent : []);
  } catch (error) {
    if (seq !== state.seq.jobs) return;
    failed('jobs', error);
  }
}

export async function refreshProcesses() {
  const seq = ++state.seq.processes;
  const query = state.query;
  try {
    const list = await api.getProcesses(query);
    if (seq !== state.seq.processes) return;
    const rows = Array.isArray(list?.rows) ? list.rows : [];
    renderProcesses(rows, list?.total ?? rows.length, query, trackedPids(state.jobs));
    succeeded('processes');
  } catch (error) {
    if (seq !== state.seq.processes) return;
    failed('processes', error);
  }
}

function short(text, max = 48) {
  const t = String(text ?? '');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

async function onRelease(job, button) {
  if (!job) return;
  button.disabled = true;
  try {
    await api.release(job.id);
    toast(`${job.mode === 'watch' ? 'Stopped watching' : 'Stopped guarding'} ${short(job.command)}`, { kind: 'info' });
    await refreshJobs();
    await refreshProcesses();
  } catch (error) {
    toast(`Couldn\u2019t unguard: ${errorText(error)}`);
  } finally {
    button.disabled = false;
  }
}

const CONTROL_DONE = { pause: 'Paused', resume: 'Resumed', stop: 'Stopping' };

async function onControl(job, action, button) {
  if (!job) return;
  button.disabled = true;
  try {
    await api.controlJob(action, job.id);
    toast(`${CONTROL_DONE[action]} ${short(job.command)}`, { kind: 'info' });
    await refreshJobs();
  } catch (error) {
    toast(`Couldn\u2019t ${action} it: ${errorText(error)}`);
  } finally {
    button.disabled = false;
  }
}

export async function onWatch(proc, button) {
  button.disabled = true;
  try {
    await api.watch(proc.pid);
    toast(`Watching ${short(proc.name)} (pid ${proc.pid})`, { kind: 'info' });
    await refreshJobs();
    await refreshProcesses();
  } catch (error) {
    toast(`Couldn\u2019t watch ${short(proc.name)}: ${errorText(error)}`);
    button.disabled = false;
  }
}

/** Resolves when guarded; rejects with the command's error for the form to place. */
export async function onGuard(proc, budget, killFree, onBudget, key) {
  await api.guard(proc.pid, budget, killFree, onBudget, key);
  toast(`Guarding ${short(proc.name)} (pid ${proc.pid})`, { kind: 'info' });
  refreshJobs().then(refreshProcesses);
}

export function guardDefaults() {
  const s = currentSettings();
  return {
    budget: s && s.default_swap_budget != null ? String(s.default_swap_budget) : '',
    killFree: s && s.default_kill_free != null ? String(s.default_kill_free) : '',
  };
}
