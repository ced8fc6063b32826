// Small non-blocking messages at the bottom of the popover ("Couldn't load processes: …").
// Never modal; they fade out by themselves and go away on click.

import { el, setText } from './dom.js';

const MAX_TOASTS = 3;
const live = new Map(); // key -> { node, timer }

function container() {
  return document.getElementById('toasts');
}

function dismiss(key) {
  const entry = live.get(key);
  if (!entry) return;
  clearTimeout(entry.timer);
  live.delete(key);
  entry.node.classList.add('leaving');
  setTimeout(() => entry.node.remove(), 180);
}

/**
 * Shows `text`. A toast with the same `key` (default: the text) is updated in place
 * instead of stacking. `kind`: "error" or "info".
 */
export function toast(text, { kind = 'error', key = text, ms } = {}) {
  const box = container();
  if (!box) return;
  const timeout = ms ?? (kind === 'error' ? 6000 : 2500);
  let entry = live.get(key);
  if (entry) {
    clearTimeout(entry.timer);
    setText(entry.node.querySelector('.toast-text'), text);
    entry.node.dataset.kind = kind;
  } else {
    // The same words under another key are not worth a second toast.
    for (const other of live.values()) {
      if (other.node.querySelector('.toast-text').textContent === text) return;
    }
    const node = el('div', { class: 'toast', dataset: { kind }, title: 'Dismiss' },
      el('span', { class: 'toast-icon', attrs: { 'aria-hidden': 'true' } }),
      el('span', { class: 'toast-text', text }));
    node.addEventListener('click', () => dismiss(key));
    box.append(node);
    entry = { node, timer: 0 };
    live.set(key, entry);
    while (live.size > MAX_TOASTS) dismiss(live.keys().next().value);
  }
  entry.timer = setTimeout(() => dismiss(key), timeout);
}

/** Removes the toast shown under `key`, if any. */
export function clearToast(key) {
  dismiss(key);
}
