// "Will it fit?" under free memory: for the keys of the most recent runs, Rust's answer for
// the free memory now (get_fits: the prediction from the run history, the free floor of the
// settings), asked again with every tick while the popover is open. Rebuilt only on change.

import * as api from './api.js';
import { el } from './dom.js';
import { formatBytes } from './format.js';
import { failed, succeeded } from './state.js';

let shown = '';
let inFlight = false;

/** Renders `fits` ([{ key, need_bytes, runs, fits, text, last_verdict }]). */
export function renderFits(fits) {
  const list = document.getElementById('fits');
  list.hidden = fits.length === 0;
  const key = JSON.stringify(fits.map((f) => [f.key, f.fits, f.text]));
  if (key === shown) return;
  shown = key;
  const rows = fits.map((f) => el('li', { class: 'fit', dataset: { fits: String(!!f.fits), key: f.key } },
    el('span', { class: 'fit-key', text: f.key, attrs: { title: `${f.key}: needs about ${formatBytes(f.need_bytes)} (${f.runs} run${f.runs === 1 ? '' : 's'}; last ${f.last_verdict})` } }),
    el('span', { class: `fit-answer ${f.fits ? 'fits' : 'no-fit'}`, text: f.text })));
  list.replaceChildren(...rows);
}

/** Asks Rust for the answers (one request at a time). */
export async function refreshFits() {
  if (inFlight) return;
  inFlight = true;
  try {
    const fits = await api.getFits();
    renderFits(Array.isArray(fits) ? fits : []);
    succeeded('fits');
  } catch (error) {
    failed('fits', error);
  } finally {
    inFlight = false;
  }
}
