// Behaviour checks of the popover against the mock __TAURI__, in headless chromium.
//   node --experimental-websocket ui-tests/check.mjs      (or ui-tests/check.sh)
// Serves the repository on 127.0.0.1 itself. Exit code 0 when every check passes.

import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { launch } from './cdp.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(here);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

execFileSync('python3', [join(here, 'make-harness.py')]);
const port = await freePort();
const server = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', root], { stdio: 'ignore' });
const base = `http://127.0.0.1:${port}/ui-tests/harness.html`;
for (let i = 0; i < 50; i++) {
  try { await fetch(base); break; } catch { await sleep(100); }
}

const calls = (page, name, since = 0) => page.eval(
  (n, t) => window.__mock.calls.filter((c) => c.name === n && c.at >= t).length, name, since);
const now = (page) => page.eval('Date.now()');
const ready = (page) => page.waitFor(() => document.querySelectorAll('.proc').length > 0
  && document.querySelectorAll('.job').length > 0 && !!document.querySelector('#chart svg'));

const checks = [];
const check = (name, fn, opts = {}) => checks.push({ name, fn, opts });

check('header shows free %, pressure, swap and total', async (page) => {
  await page.goto(base);
  await ready(page);
  const h = await page.eval(() => ({
    free: document.querySelector('#free-percent').textContent,
    pressure: document.querySelector('#pressure').textContent,
    level: document.querySelector('#pressure').dataset.level,
    swap: document.querySelector('#swap-used').textContent,
    change: document.querySelector('#swap-change').textContent,
    total: document.querySelector('#total-memory').textContent,
  }));
  assert.match(h.free, /^3[89]%$/);
  assert.equal(h.pressure, 'Normal');
  assert.equal(h.level, 'normal');
  assert.match(h.swap, /^3\.\d GiB$/);
  assert.match(h.change, /^↑ \+1\.\d GiB$/);
  assert.equal(h.total, 'of 48 GiB total');
});

check('jobs: rows, badges, bar, verdicts, Unwatch or Unguard only where allowed', async (page) => {
  await page.goto(base);
  await ready(page);
  const jobs = await page.eval(() => [...document.querySelectorAll('#jobs .job')].map((j) => ({
    id: j.dataset.id,
    mode: j.querySelector('.badge').textContent,
    bar: !!j.querySelector('.bar'),
    verdict: j.querySelector('.verdict')?.textContent ?? null,
    noFit: !!j.querySelector('.verdict.no-fit'),
    release: !j.querySelector('.release').hidden,
  })));
  assert.equal(jobs.length, 5);
  const byId = Object.fromEntries(jobs.map((j) => [j.id, j]));
  assert.equal(byId['job-7'].mode, 'guard');
  assert.ok(byId['job-7'].bar && byId['job-7'].release && byId['job-7'].verdict === null);
  assert.ok(!byId['job-6'].bar, 'watch jobs have no bar');
  assert.ok(!byId['job-5'].release, 'external jobs are read-only');
  assert.equal(byId['job-4'].verdict, "doesn't fit: swap +9.6 GiB");
  assert.ok(byId['job-4'].noFit);
  assert.ok(!byId['job-4'].release, 'finished jobs have nothing to release');
  assert.equal(byId['job-3'].verdict, 'fits');
});

check('jobs: empty state text', async (page) => {
  await page.goto(`${base}?jobs=none`);
  await page.waitFor(() => document.querySelectorAll('.proc').length > 0);
  const text = await page.eval(() => {
    const e = document.querySelector('#jobs-empty');
    return e.hidden ? null : e.textContent;
  });
  assert.equal(text, 'Watch or guard a process below to get its verdict.');
});

check('process names and commands are text, never HTML', async (page) => {
  await page.goto(base);
  await ready(page);
  const r = await page.eval(() => {
    const row = document.querySelector('.proc[data-pid="6400"]');
    return {
      name: row.querySelector('.proc-name').textContent,
      elements: row.querySelectorAll('img, b, script').length,
      anywhere: document.querySelectorAll('#processes img, #processes b, #jobs img').length,
    };
  });
  assert.equal(r.name, '<img src=x onerror=alert(1)>');
  assert.equal(r.elements, 0);
  assert.equal(r.anywhere, 0);
});

check('no horizontal overflow at 380 px; long commands ellipsized', async (page) => {
  await page.goto(base);
  await ready(page);
  const r = await page.eval(() => {
    const overflowing = [...document.querySelectorAll('body *')]
      .filter((n) => n.getBoundingClientRect().right > window.innerWidth + 0.5
        && getComputedStyle(n).position !== 'fixed')
      .map((n) => n.id || n.className);
    const cmd = document.querySelector('.job[data-id="job-7"] .job-command');
    return {
      pageWidth: document.documentElement.scrollWidth,
      inner: window.innerWidth,
      overflowing,
      ellipsized: cmd.scrollWidth > cmd.clientWidth && getComputedStyle(cmd).textOverflow === 'ellipsis',
    };
  });
  assert.equal(r.pageWidth, r.inner);
  assert.deepEqual(r.overflowing, []);
  assert.ok(r.ellipsized);
});

check('ticks update the header; chart/jobs/processes refresh at most every 2 s', async (page) => {
  await page.goto(base);
  await ready(page);
  await sleep(300);
  const t0 = await now(page);
  const ticks0 = await page.eval('window.__mock.ticks');
  await sleep(6100);
  const ticks = (await page.eval('window.__mock.ticks')) - ticks0;
  const n = {
    chart: await calls(page, 'get_chart', t0),
    jobs: await calls(page, 'get_jobs', t0),
    procs: await calls(page, 'get_processes', t0),
    status: await calls(page, 'get_status', t0),
  };
  assert.ok(ticks >= 11, `ticks: ${ticks}`);
  for (const k of ['chart', 'jobs', 'procs']) {
    assert.ok(n[k] >= 2 && n[k] <= 4, `${k}: ${n[k]} calls in 6.1 s`);
  }
  assert.equal(n.status, 0, 'ticks arrive, so no status polling');
});

check('hidden: no calls, ticks ignored; visible again: everything at once', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.eval(() => {
    window.__hidden = false;
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => window.__hidden });
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (window.__hidden ? 'hidden' : 'visible') });
    window.__hidden = true;
    document.dispatchEvent(new Event('visibilitychange'));
  });
  const before = await page.eval(() => document.querySelector('#free-percent').textContent);
  await page.eval(() => { window.__mock.status.free_percent = 71; });
  await sleep(200);
  const t0 = await now(page);
  await sleep(3000);
  const during = await page.eval((t) => window.__mock.calls.filter((c) => c.at >= t).map((c) => c.name), t0);
  assert.deepEqual(during, []);
  assert.equal(await page.eval(() => document.querySelector('#free-percent').textContent), before,
    'ticks while hidden do not touch the header');
  const t1 = await now(page);
  await page.eval(() => { window.__hidden = false; document.dispatchEvent(new Event('visibilitychange')); });
  await sleep(150);
  const after = await page.eval((t) => window.__mock.calls.filter((c) => c.at >= t).map((c) => c.name), t1);
  for (const name of ['get_status', 'get_chart', 'get_jobs', 'get_processes']) {
    assert.ok(after.includes(name), `${name} on visible: ${after}`);
  }
  await page.waitFor(() => /^7\d%$/.test(document.querySelector('#free-percent').textContent));
});

check('tabs switch the chart window', async (page) => {
  await page.goto(base);
  await ready(page);
  const t0 = await now(page);
  await page.click('.tab[data-window="3600"]');
  await page.waitFor((t) => window.__mock.calls.some((c) => c.name === 'get_chart' && c.at >= t && c.args.windowSeconds === 3600), { args: [t0] });
  const r = await page.eval(() => ({
    selected: document.querySelector('.tab[aria-selected="true"]').dataset.window,
    label: document.querySelector('#swap-change-window').textContent,
    status: window.__mock.calls.filter((c) => c.name === 'get_status').pop().args.windowSeconds,
  }));
  assert.deepEqual(r, { selected: '3600', label: '1 h', status: 3600 });
  // The chart asks for the dark palette only in dark mode.
  const dark = await page.eval(() => window.__mock.calls.filter((c) => c.name === 'get_chart').pop().args.dark);
  assert.equal(dark, false);
  await page.eval(() => localStorage.clear());
});

check('1 h tab: the header change is over 1 h even though ticks carry 10 min', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.waitFor(() => /^↑ \+1\.\d GiB$/.test(document.querySelector('#swap-change').textContent));
  await page.click('.tab[data-window="3600"]');
  await page.waitFor(() => /^↑ \+2\.\d GiB$/.test(document.querySelector('#swap-change').textContent));
  const seen = new Set();
  for (let i = 0; i < 12; i++) {
    seen.add(await page.eval(() => document.querySelector('#swap-change').textContent.slice(0, 4)));
    await sleep(250);
  }
  assert.deepEqual([...seen], ['↑ +2'], 'ticks (10 min) must not overwrite the 1 h change');
  await page.eval(() => localStorage.clear());
});

check('dark mode asks Rust for the dark chart', async (page) => {
  await page.goto(base);
  await ready(page);
  const dark = await page.eval(() => window.__mock.calls.filter((c) => c.name === 'get_chart').pop().args.dark);
  assert.equal(dark, true);
}, { dark: true });

check('search is debounced and sends the box text', async (page) => {
  await page.goto(base);
  await ready(page);
  await sleep(2100); // let a periodic refresh pass
  const t0 = await now(page);
  await page.type('#search', 'g');
  await page.send('Input.insertText', { text: 'e' });
  await page.send('Input.insertText', { text: 'n' });
  await sleep(400);
  const queries = await page.eval((t) => window.__mock.calls
    .filter((c) => c.name === 'get_processes' && c.at >= t).map((c) => c.args.query), t0);
  assert.ok(queries.includes('gen'), `queries: ${queries}`);
  assert.ok(queries.filter((q) => q !== 'gen').every((q) => q === ''), `queries: ${queries}`);
  const pids = await page.eval(() => [...document.querySelectorAll('.proc')].map((r) => r.dataset.pid));
  assert.deepEqual(pids, ['4242']);
  await page.key('Escape');
  await page.waitFor(() => document.querySelectorAll('.proc').length > 5);
  await page.type('#search', 'zzzz-nothing');
  await page.waitFor(() => !document.querySelector('#processes-empty').hidden);
  assert.equal(await page.eval(() => document.querySelector('#processes-empty').textContent), 'No processes match “zzzz-nothing”.');
});

check('watch adds a job and marks the row', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.click('.proc[data-pid="731"] button[data-action="watch"]');
  await page.waitFor(() => [...document.querySelectorAll('.job')].some((j) => j.querySelector('.job-pid').textContent === 'pid 731'));
  await page.waitFor(() => document.querySelector('.proc[data-pid="731"] button[data-action="watch"]').disabled);
});

check('guard form: defaults, field errors by prefix, submit, cancel', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.click('.proc[data-pid="9031"] button[data-action="guard"]');
  await page.waitFor(() => document.querySelector('#guard-form'));
  const r = await page.eval(() => ({
    budget: document.querySelector('#guard-budget').value,
    kill: document.querySelector('#guard-kill-free').value,
    after: document.querySelector('#guard-form').closest('li').previousElementSibling.dataset.pid,
    focused: document.activeElement.id,
  }));
  assert.deepEqual(r, { budget: '8G', kill: '10', after: '9031', focused: 'guard-budget' });
  await page.waitFor(() => !document.querySelector('#guard-fit').textContent.endsWith('…'));
  assert.match(await page.eval(() => document.querySelector('#guard-fit').textContent), /^No past run of \/Applications/);

  await page.type('#guard-budget', 'x');
  await page.click('#guard-submit');
  await page.waitFor(() => !document.querySelector('#guard-budget-error').hidden);
  assert.match(await page.eval(() => document.querySelector('#guard-budget-error').textContent), /^invalid size 'x'/);

  // The form survives periodic refreshes, with what was typed and the focus.
  await page.type('#guard-budget', '6G');
  await page.type('#guard-kill-free', '150');
  await sleep(2600);
  assert.equal(await page.eval(() => document.activeElement.id), 'guard-kill-free');
  assert.equal(await page.eval(() => document.querySelector('#guard-budget').value), '6G');
  await page.key('Enter');
  await page.waitFor(() => !document.querySelector('#guard-kill-free-error').hidden);
  assert.ok(await page.eval(() => document.querySelector('#guard-budget-error').hidden));
  assert.match(await page.eval(() => document.querySelector('#guard-kill-free-error').textContent), /invalid percentage '150'/);

  await page.type('#guard-kill-free', '12');
  await page.click('#guard-submit');
  await page.waitFor(() => !document.querySelector('#guard-form'));
  const call = await page.eval(() => window.__mock.calls.filter((c) => c.name === 'guard').pop().args);
  assert.deepEqual(call, { pid: 9031, swapBudget: '6G', killFree: '12', onBudget: 'stop', key: '' });
  await page.waitFor(() => [...document.querySelectorAll('.job')].some((j) =>
    j.querySelector('.job-pid').textContent === 'pid 9031' && j.dataset.mode === 'guard'));

  await page.click('.proc[data-pid="1533"] button[data-action="guard"]');
  await page.waitFor(() => document.querySelector('#guard-form'));
  await page.key('Escape');
  await page.waitFor(() => !document.querySelector('#guard-form'));
});

check('pause at the budget: chosen in the form; pause, resume and stop in the row', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.click('.proc[data-pid="9031"] button[data-action="guard"]');
  await page.waitFor(() => document.querySelector('#guard-on-budget'));
  await page.eval(() => { document.querySelector('#guard-on-budget').value = 'pause'; });
  await page.click('#guard-submit');
  await page.waitFor(() => !document.querySelector('#guard-form'));
  const call = await page.eval(() => window.__mock.calls.filter((c) => c.name === 'guard').pop().args);
  assert.equal(call.onBudget, 'pause');
  await page.waitFor(() => [...document.querySelectorAll('.job')].some((j) =>
    j.querySelector('.job-pid').textContent === 'pid 9031'));
  const shown = () => page.eval(() => {
    const row = [...document.querySelectorAll('.job')].find((j) => j.querySelector('.job-pid').textContent === 'pid 9031');
    const visible = (a) => !row.querySelector(`button[data-action="${a}"]`).hidden;
    return { id: row.dataset.id, state: row.dataset.state, pause: visible('pause'), resume: visible('resume'),
      stop: visible('stop'), release: visible('release'), text: row.querySelector('.job-state').textContent };
  });
  let r = await shown();
  assert.deepEqual([r.state, r.pause, r.resume, r.stop, r.release], ['running', true, false, false, true]);
  await page.click(`.job[data-id="${r.id}"] button[data-action="pause"]`);
  await page.waitFor(() => [...document.querySelectorAll('.job')].some((j) => j.dataset.state === 'paused'));
  r = await shown();
  // Paused: resume or stop it; it cannot be let go while stopped.
  assert.deepEqual([r.state, r.pause, r.resume, r.stop, r.release, r.text], ['paused', false, true, true, false, 'paused']);
  await page.click(`.job[data-id="${r.id}"] button[data-action="resume"]`);
  await page.waitFor(() => !document.querySelector('.job[data-state="paused"]'));
  r = await shown();
  assert.match(r.text, /running · paused once/);
  await page.click(`.job[data-id="${r.id}"] button[data-action="pause"]`);
  await page.waitFor(() => document.querySelector('.job[data-state="paused"]'));
  await page.click(`.job[data-id="${r.id}"] button[data-action="stop"]`);
  await page.waitFor(() => [...document.querySelectorAll('.job')].some((j) =>
    j.querySelector('.job-pid').textContent === 'pid 9031' && j.dataset.state === 'stopping'));
  const names = await page.eval(() => window.__mock.calls.map((c) => c.name).filter((n) => n.endsWith('_job')));
  assert.deepEqual(names, ['pause_job', 'resume_job', 'pause_job', 'stop_job']);
});

check('windows and the row cap come from Rust (get_config), not the page', async (page) => {
  await page.goto(`${base}?windows=300,3600&max=2`);
  await ready(page);
  const r = await page.eval(() => ({
    tabs: [...document.querySelectorAll('.tab[data-window]')].map((t) => [t.dataset.window, t.textContent]),
    selected: document.querySelector('.tab[aria-selected="true"]')?.dataset.window,
    rows: document.querySelectorAll('.proc').length,
    more: document.querySelector('#processes-more').textContent,
    moreShown: !document.querySelector('#processes-more').hidden,
    total: window.__mock.processes.length,
  }));
  assert.deepEqual(r.tabs, [['300', '5 min'], ['3600', '1 h']]);
  assert.equal(r.selected, '300');
  assert.equal(r.rows, 2);
  assert.ok(r.moreShown);
  assert.equal(r.more, `Showing 2 of ${r.total}. Search to find the others.`);
  const asked = await page.eval(() => window.__mock.calls.filter((c) => c.name === 'get_chart').map((c) => c.args.windowSeconds));
  assert.ok(asked.length > 0 && asked.every((w) => w === 300), `${asked}`);
});

check('the forms show the defaults Rust sends (get_config), none of their own', async (page) => {
  await page.goto(base);
  await ready(page);
  const r = await page.eval(() => Object.fromEntries(
    [...document.querySelectorAll('input[name]')].filter((i) => i.placeholder).map((i) => [i.name, i.placeholder])));
  assert.equal(r.default_swap_budget, '6G');
  assert.equal(r.sample_interval, '0.7s');
  assert.equal(r.metrics_address, '127.0.0.1:9999');
  assert.equal(r.default_kill_free, '12');
});

check('recent verdicts from the history database', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.waitFor(() => !document.querySelector('#recent').hidden);
  const r = await page.eval(() => ({
    title: document.querySelector('#recent-title').textContent,
    rows: [...document.querySelectorAll('.recent-job')].map((j) => [
      j.querySelector('.recent-command').textContent,
      j.querySelector('.recent-verdict').className,
      j.querySelector('.recent-when').textContent]),
  }));
  assert.equal(r.title, 'Recent verdicts (2)');
  assert.deepEqual(r.rows, [
    ['python gen.py --steps 50', 'recent-verdict no-fit', 'guard · 1 h ago'],
    ['make -j8', 'recent-verdict fits', 'watch · 24 h ago'],
  ]);
});

check('will it fit: the answer for the keys of recent runs, under free memory', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.waitFor(() => !document.querySelector('#fits').hidden);
  const rows = await page.eval(() => [...document.querySelectorAll('#fits .fit')].map((f) => [
    f.querySelector('.fit-key').textContent,
    f.querySelector('.fit-answer').className,
    f.querySelector('.fit-answer').textContent]));
  assert.deepEqual(rows, [
    ['python gen.py --steps 50', 'fit-answer no-fit', "won't fit, 7.8 GiB short"],
    ['make -j8', 'fit-answer fits', 'fits now, 18.9 GiB to spare'],
  ]);
  const inHeader = await page.eval(() => !!document.querySelector('#status #fits'));
  assert.ok(inHeader, 'next to free memory');
});

check('guard form: the prediction and past verdicts of the process picked', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.click('.proc[data-pid="7702"] button[data-action="guard"]');
  await page.waitFor(() => document.querySelector('#guard-fit')?.dataset.fits);
  const r = await page.eval(() => ({
    text: document.querySelector('#guard-fit').textContent,
    fits: document.querySelector('#guard-fit').dataset.fits,
    title: document.querySelector('#guard-fit').title,
    asked: window.__mock.calls.filter((c) => c.name === 'get_fit_of').map((c) => c.args.command),
  }));
  assert.equal(r.text, "Needs about 29.1 GiB (4 past runs): won't fit, 7.8 GiB short. Last: doesn't fit, fits");
  assert.equal(r.fits, 'false');
  assert.equal(r.title, 'Key: ollama serve');
  assert.deepEqual(r.asked, ['ollama serve']);
});

check('guard form: a key typed is asked about once typing pauses, and guards under it', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.click('.proc[data-pid="7702"] button[data-action="guard"]');
  await page.waitFor(() => document.querySelector('#guard-fit')?.dataset.fits);
  assert.equal(await page.eval(() => document.querySelector('#guard-key').placeholder), 'ollama serve');
  await page.eval(() => { window.__mock.calls.length = 0; });
  await page.type('#guard-key', 'q');
  await page.type('#guard-key', 'qwen');
  await page.waitFor(() => document.querySelector('#guard-fit').dataset.key === 'qwen');
  const r = await page.eval(() => ({
    text: document.querySelector('#guard-fit').textContent,
    fits: document.querySelector('#guard-fit').dataset.fits,
    asked: window.__mock.calls.filter((c) => c.name === 'get_fit_of').map((c) => c.args.key),
  }));
  assert.equal(r.fits, 'true');
  assert.match(r.text, /^Needs about .*Last: fits$/);
  assert.deepEqual(r.asked, ['qwen'], 'one request once typing paused');
  // A key with no runs: said so, no stale answer left.
  await page.type('#guard-key', 'qwen-new');
  await page.waitFor(() => document.querySelector('#guard-fit').dataset.key === 'qwen-new');
  assert.equal(await page.eval(() => document.querySelector('#guard-fit').dataset.fits), undefined);
  assert.match(await page.eval(() => document.querySelector('#guard-fit').textContent), /^No past run of qwen-new yet/);
  await page.click('#guard-submit');
  await page.waitFor(() => !document.querySelector('#guard-form'));
  const call = await page.eval(() => window.__mock.calls.filter((c) => c.name === 'guard').pop().args);
  assert.equal(call.key, 'qwen-new');
});

check('a running job that ends gets its verdict in place', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.eval(() => {
    const j = window.__mock.jobs.find((x) => x.id === 'job-7');
    Object.assign(j, { state: 'stopped', verdict: { fits: false, text: "doesn't fit: swap +8.1 GiB" } });
  });
  await page.waitFor(() => document.querySelector('.job[data-id="job-7"] .verdict.no-fit')?.textContent === "doesn't fit: swap +8.1 GiB", { timeout: 4000 });
  const r = await page.eval(() => ({
    release: !document.querySelector('.job[data-id="job-7"] .release').hidden,
    state: document.querySelector('.job[data-id="job-7"]').dataset.state,
  }));
  assert.deepEqual(r, { release: false, state: 'stopped' });
  // Its process can be guarded again.
  await page.waitFor(() => !document.querySelector('.proc[data-pid="4242"] button[data-action="guard"]').disabled);
});

check('Unwatch and Unguard call release with the job id', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.click('.job[data-id="job-7"] .release');
  await page.waitFor(() => !document.querySelector('.job[data-id="job-7"]'));
  const call = await page.eval(() => window.__mock.calls.filter((c) => c.name === 'release').pop().args);
  assert.deepEqual(call, { id: 'job-7' });
});

check('settings: load, field error by prefix, save', async (page) => {
  await page.goto(base);
  await ready(page);
  await page.click('#settings-button');
  await page.waitFor(() => !document.querySelector('#settings').hidden && document.querySelector('#set-sample-interval').value === '0.5s');
  await page.type('#set-default-budget', 'lots');
  await page.click('#settings-save');
  await page.waitFor(() => !document.querySelector('#set-default-budget-error').hidden);
  assert.match(await page.eval(() => document.querySelector('#set-default-budget-error').textContent), /invalid size 'lots'/);
  // Rust names the floor "default free-memory floor".
  await page.type('#set-default-kill-free', '120');
  await page.type('#set-default-budget', '12G');
  await page.click('#settings-save');
  await page.waitFor(() => !document.querySelector('#set-default-kill-free-error').hidden);
  assert.equal(await page.eval(() => document.querySelector('#set-default-kill-free-error').textContent), 'must be a percent from 0 to 100, not 120');
  assert.ok(await page.eval(() => document.querySelector('#set-default-budget-error').hidden));
  await page.type('#set-default-kill-free', '10');
  await page.click('#set-launch-at-login');
  // Metrics: the address is checked, its error lands under its field.
  await page.click('#set-serve-metrics');
  await page.type('#set-metrics-address', 'anywhere');
  await page.click('#settings-save');
  await page.waitFor(() => !document.querySelector('#set-metrics-address-error').hidden);
  assert.match(await page.eval(() => document.querySelector('#set-metrics-address-error').textContent), /^invalid address 'anywhere'/);
  await page.type('#set-metrics-address', '127.0.0.1:9200');
  await page.click('#settings-save');
  await page.waitFor(() => document.querySelector('#settings-status').textContent === 'Saved');
  const saved = await page.eval(() => window.__mock.settings);
  assert.deepEqual(saved, {
    sample_interval: '0.5s', notify_step: '512M', default_swap_budget: '12G', default_kill_free: '10',
    tight_compressed: '2G', tight_free: '20', launch_at_login: true,
    serve_metrics: true, metrics_address: '127.0.0.1:9200',
  });
  await page.click('#settings-back');
  await page.waitFor(() => !document.querySelector('#main-view').hidden);
  // The guard form now defaults to the saved budget.
  await page.click('.proc[data-pid="1533"] button[data-action="guard"]');
  await page.waitFor(() => document.querySelector('#guard-budget')?.value === '12G');
});

check('failures: one small toast per failing command, page keeps working', async (page) => {
  await page.goto(`${base}?fail=processes`);
  await page.waitFor(() => document.querySelectorAll('.job').length > 0);
  await page.waitFor(() => document.querySelectorAll('.toast').length > 0);
  await sleep(4500); // two more failed refreshes
  const toasts = await page.eval(() => [...document.querySelectorAll('.toast')].map((t) => t.textContent));
  assert.equal(toasts.length, 1, `toasts: ${toasts}`);
  assert.match(toasts[0], /^Couldn’t load processes: get_processes failed/);
  assert.ok(await page.eval(() => document.querySelector('#free-percent').textContent.endsWith('%')));
});

check('chart and status failures: placeholder, dimmed header, status polled without ticks', async (page) => {
  await page.goto(`${base}?fail=chart,status&ticks=0&pressure=none`);
  await page.waitFor(() => document.querySelector('#chart').dataset.state === 'error');
  assert.equal(await page.eval(() => document.querySelector('#chart').textContent), 'Chart unavailable');
  await page.waitFor(() => document.querySelector('#status').classList.contains('stale'));
  const t0 = await now(page);
  await sleep(4200);
  const polls = await calls(page, 'get_status', t0);
  assert.ok(polls >= 1 && polls <= 3, `get_status polls without ticks: ${polls}`);
  const toasts = await page.eval(() => [...document.querySelectorAll('.toast')].map((t) => t.textContent));
  assert.equal(toasts.length, 2, `toasts: ${toasts}`);
});

check('pressure unknown shows a neutral pill', async (page) => {
  await page.goto(`${base}?pressure=none`);
  await ready(page);
  const r = await page.eval(() => [document.querySelector('#pressure').dataset.level, document.querySelector('#pressure').textContent]);
  assert.deepEqual(r, ['unknown', 'Pressure n/a']);
});

check('no console errors or CSP violations', async (page) => {
  await page.goto(base);
  await ready(page);
  await sleep(500);
  const bad = page.logs.filter((l) => /^(error|exception)/.test(l) || /Content Security Policy/i.test(l));
  assert.deepEqual(bad, []);
  // The CSP is live: an inline script and a remote image are refused.
  await page.eval(() => {
    const s = document.createElement('script');
    s.textContent = 'window.__inlineRan = true';
    document.body.append(s);
    const img = document.createElement('img');
    img.src = 'https://example.invalid/x.png';
    document.body.append(img);
  });
  await sleep(200);
  assert.equal(await page.eval('window.__inlineRan === true'), false);
  assert.ok(page.logs.filter((l) => /Content Security Policy/.test(l)).length >= 2, page.logs.join('\n'));
});

let failed = 0;
const only = process.argv[2];
for (const { name, fn, opts } of checks) {
  if (only && !name.includes(only)) continue;
  const page = await launch({ dark: !!opts.dark });
  const t = Date.now();
  try {
    await fn(page);
    console.log(`ok    ${name} (${Date.now() - t} ms)`);
  } catch (error) {
    failed += 1;
    console.log(`FAIL  ${name}\n      ${error.message.split('\n').join('\n      ')}`);
    if (page.logs.length) console.log(`      console:\n        ${page.logs.slice(-10).join('\n        ')}`);
  } finally {
    await page.close();
  }
}
server.kill();
console.log(failed ? `${failed} failed` : 'all passed');
process.exit(failed ? 1 : 0);
