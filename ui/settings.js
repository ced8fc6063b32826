// The Settings view (flipped to with the gear): load, edit, save with per-field errors.

import * as api from './api.js';
import { setText, setAttr } from './dom.js';
import { fieldError as typedError, errorText } from './format.js';

// Setting key (as Rust names it, also in errors) -> input id.
const FIELDS = {
  sample_interval: { id: 'set-sample-interval' },
  notify_step: { id: 'set-notify-step' },
  default_swap_budget: { id: 'set-default-budget' },
  default_kill_free: { id: 'set-default-kill-free' },
  tight_compressed: { id: 'set-tight-compressed' },
  tight_free: { id: 'set-tight-free' },
  launch_at_login: { id: 'set-launch-at-login' },
  serve_metrics: { id: 'set-serve-metrics' },
  metrics_address: { id: 'set-metrics-address' },
};
const TEXT_KEYS = ['sample_interval', 'notify_step', 'default_swap_budget', 'tight_compressed', 'tight_free',
  'metrics_address'];

let current = null; // the settings last loaded or saved
let dirty = false; // edited since the form was last filled: a late load must not overwrite
let onChange = () => {};
let onError = () => {};

const $ = (id) => document.getElementById(id);

function fieldError(key, message) {
  const { id } = FIELDS[key];
  const error = $(`${id}-error`);
  error.hidden = !message;
  setText(error, message || '');
  setAttr($(id), 'aria-invalid', message ? 'true' : null);
}

function clearErrors() {
  for (const key of Object.keys(FIELDS)) fieldError(key, '');
}

function status(text, kind) {
  const node = $('settings-status');
  setText(node, text);
  node.dataset.kind = kind || '';
}

function fill(settings) {
  dirty = false;
  for (const key of TEXT_KEYS) $(FIELDS[key].id).value = settings[key] ?? '';
  const kill = settings.default_kill_free;
  $(FIELDS.default_kill_free.id).value = kill == null ? '' : String(kill);
  $(FIELDS.launch_at_login.id).checked = !!settings.launch_at_login;
  $(FIELDS.serve_metrics.id).checked = !!settings.serve_metrics;
}

/** The settings last loaded (null before the first load). */
export function currentSettings() {
  return current;
}

/** Loads settings from Rust; resolves to them (or null on failure, already reported). */
export async function loadSettings({ fillForm = true } = {}) {
  try {
    const settings = await api.getSettings();
    current = settings;
    onChange(settings);
    if (fillForm && !dirty) fill(settings);
    return settings;
  } catch (error) {
    onError(error);
    return null;
  }
}

function open() {
  $('main-view').hidden = true;
  $('settings').hidden = false;
  $('settings-button').setAttribute('aria-expanded', 'true');
  clearErrors();
  status('', '');
  if (current) fill(current);
  else dirty = false;
  $(FIELDS.sample_interval.id).focus();
  loadSettings(); // fills the form unless the user already started typing
}

function close() {
  $('settings').hidden = true;
  $('main-view').hidden = false;
  $('settings-button').setAttribute('aria-expanded', 'false');
  $('settings-button').focus();
}

/** True while the settings view is shown. */
function settingsOpen() {
  return !$('settings').hidden;
}

async function save(event) {
  event.preventDefault();
  const button = $('settings-save');
  if (button.disabled) return;
  clearErrors();
  status('', '');
  const next = { ...(current || {}) };
  for (const key of TEXT_KEYS) next[key] = $(FIELDS[key].id).value.trim();
  // Sent back in the type it came in: Rust's form type takes the text as typed ("10",
  // "10%") and validates it; a numeric field gets a number.
  const killText = $(FIELDS.default_kill_free.id).value.trim();
  if (current && typeof current.default_kill_free === 'number') {
    const kill = Number(killText.replace(/%$/, ''));
    if (killText === '' || !Number.isFinite(kill)) {
      fieldError('default_kill_free', `invalid percentage '${killText}': expected a number from 0 to 100`);
      $(FIELDS.default_kill_free.id).focus();
      return;
    }
    next.default_kill_free = kill;
  } else {
    next.default_kill_free = killText;
  }
  next.launch_at_login = $(FIELDS.launch_at_login.id).checked;
  next.serve_metrics = $(FIELDS.serve_metrics.id).checked;

  button.disabled = true;
  status('Saving…', 'info');
  try {
    const saved = await api.setSettings(next);
    current = saved && typeof saved === 'object' ? saved : next;
    fill(current);
    onChange(current);
    status('Saved', 'ok');
  } catch (error) {
    const { field, message } = typedError(error);
    if (field && FIELDS[field]) {
      fieldError(field, message);
      $(FIELDS[field].id).focus();
      status('Not saved', 'error');
    } else {
      status(`Not saved: ${errorText(error)}`, 'error');
    }
  } finally {
    button.disabled = false;
  }
}

/** Wires the view. `hooks`: { onChange(settings), onError(error) }. */
export function initSettings(hooks) {
  onChange = hooks.onChange || onChange;
  onError = hooks.onError || onError;
  $('settings-button').addEventListener('click', () => (settingsOpen() ? close() : open()));
  $('settings-back').addEventListener('click', close);
  $('settings-form').addEventListener('submit', save);
  $('settings').addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      close();
    }
  });
  for (const [key, { id }] of Object.entries(FIELDS)) {
    const input = $(id);
    const clear = () => {
      dirty = true;
      fieldError(key, '');
      if ($('settings-status').dataset.kind === 'ok') status('', '');
    };
    input.addEventListener('input', clear);
    input.addEventListener('change', clear);
  }
}
