// The popover's shared state: the config from Rust, what is shown and in flight, and the
// one way a failing refresh is reported (once, until it succeeds again).

import { errorText } from './format.js';
import { toast, clearToast } from './toast.js';

// From Rust (get_config): the chart windows, and the one ticks carry the swap change over;
// for the other windows the change comes from get_status({ windowSeconds }), asked with each
// 2 s refresh.
export const config = { windows: [], tickWindow: null, defaults: {} };
export const darkQuery = window.matchMedia('(prefers-color-scheme: dark)');

export const state = {
  windowSeconds: null, // set from the config at start
  dark: darkQuery.matches,
  query: '',
  jobs: [],
  visible: !document.hidden,
  lastTickAt: 0,
  lastPollAt: 0, // last get_status asked by the heartbeat (only when ticks stop)
  lastSlowAt: 0,
  slowInFlight: false,
  heartbeat: 0,
  searchTimer: 0,
  seq: { status: 0, chart: 0, jobs: 0, processes: 0 },
  failing: new Set(), // what is currently failing, so a failure is reported once
  chartLoaded: false,
  chartSvg: '', // the markup shown, to skip identical redraws
  swapChange: null, // swap change over the selected window, bytes
};

export const $ = (id) => document.getElementById(id);

const LABELS = {
  status: 'Couldn\u2019t read memory status',
  chart: 'Couldn\u2019t draw the chart',
  jobs: 'Couldn\u2019t load jobs',
  processes: 'Couldn\u2019t load processes',
  settings: 'Couldn\u2019t load settings',
  events: 'Live updates unavailable',
  fits: 'Couldn\u2019t answer \u201cwill it fit?\u201d',
  config: 'Couldn\u2019t load the popover\u2019s settings from Headroom',
};

/** Reports a failing refresh once (until it succeeds again): a small toast, nothing modal. */
export function failed(what, error) {
  if (state.failing.has(what)) return;
  state.failing.add(what);
  toast(`${LABELS[what] || what}: ${errorText(error)}`, { key: `fail:${what}` });
}

export function succeeded(what) {
  if (state.failing.delete(what)) clearToast(`fail:${what}`);
}
