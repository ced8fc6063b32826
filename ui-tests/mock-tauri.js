// A fake window.__TAURI__ for the popover, loaded (as a classic script) before ui/app.js by
// harness.html. Data: a 48 GB Mac at 38 % free, swap 3.1 GiB and growing, a guarded
// "python generate.py" near its 8 GB budget, a finished job that didn't fit.
//
// URL parameters (all optional):
//   fail=processes,chart,…  these commands reject with an error string
//   pressure=warn|critical|none
//   jobs=none               no jobs (empty state)
//   ticks=0                 no tick events
// Calls are recorded in window.__mock.calls (name, args, time) for tests.
(function () {
  'use strict';

  const GB = 2 ** 30;
  const MB = 2 ** 20;
  const params = new URLSearchParams(location.search);
  const failing = new Set((params.get('fail') || '').split(',').filter(Boolean));
  const pressureParam = params.get('pressure');
  const fixtures = new URL('fixtures/', document.currentScript.src);

  const mock = {
    calls: [],
    ticks: 0,
    tickListeners: [],
    status: {
      free_percent: 38.2,
      total_bytes: 48 * GB,
      swap_used_bytes: 3.1 * GB,
      swap_total_bytes: 4 * GB,
      swap_change_bytes: 1.2 * GB,
      swap_growing: true,
      pressure: pressureParam === 'none' ? null : (pressureParam || 'normal'),
      compressed_bytes: 6.4 * GB,
      sampled_at_ms: Date.now(),
    },
    processes: [
      { pid: 4242, ppid: 812, uid: 501, name: 'python3.11', command: 'python generate.py --model stabilityai/stable-diffusion-xl-base-1.0 --offload cpu --steps 50 --out /Users/ana/renders/batch-07', footprint_bytes: 18.5 * GB, resident_bytes: 9.2 * GB, swap_bytes: 6.2 * GB },
      { pid: 731, ppid: 1, uid: 501, name: 'WindowServer', command: '/System/Library/PrivateFrameworks/SkyLight.framework/Resources/WindowServer -daemon', footprint_bytes: 1.9 * GB, resident_bytes: 1.1 * GB, swap_bytes: null },
      { pid: 2210, ppid: 1, uid: 501, name: 'Google Chrome Helper (Renderer)', command: '/Applications/Google Chrome.app/Contents/Frameworks/Google Chrome Framework.framework/Versions/131.0.6778.86/Helpers/Google Chrome Helper (Renderer).app/Contents/MacOS/Google Chrome Helper (Renderer) --type=renderer', footprint_bytes: 1.42 * GB, resident_bytes: 0.9 * GB, swap_bytes: null },
      { pid: 5120, ppid: 4980, uid: 501, name: 'node', command: 'node /Users/ana/dev/site/node_modules/.bin/next dev', footprint_bytes: 812 * MB, resident_bytes: 640 * MB, swap_bytes: 120 * MB },
      { pid: 9031, ppid: 1, uid: 501, name: 'Code Helper (Plugin)', command: '/Applications/Visual Studio Code.app/Contents/Frameworks/Code Helper (Plugin).app/Contents/MacOS/Code Helper (Plugin)', footprint_bytes: 655 * MB, resident_bytes: 510 * MB, swap_bytes: null },
      { pid: 4980, ppid: 812, uid: 501, name: 'zsh', command: '-zsh', footprint_bytes: 4.2 * MB, resident_bytes: 3.9 * MB, swap_bytes: 0 },
      { pid: 6400, ppid: 1, uid: 501, name: '<img src=x onerror=alert(1)>', command: '<b>not bold</b> --title "<script>alert(2)</script>"', footprint_bytes: 310 * MB, resident_bytes: 300 * MB, swap_bytes: null },
      { pid: 388, ppid: 1, uid: 0, name: 'kernel_task', command: 'kernel_task', footprint_bytes: 288 * MB, resident_bytes: 288 * MB, swap_bytes: null },
      { pid: 1533, ppid: 1, uid: 501, name: 'Finder', command: '/System/Library/CoreServices/Finder.app/Contents/MacOS/Finder', footprint_bytes: 201 * MB, resident_bytes: 150 * MB, swap_bytes: null },
      { pid: 7702, ppid: 4980, uid: 501, name: 'ollama', command: 'ollama serve', footprint_bytes: 96 * MB, resident_bytes: 90 * MB, swap_bytes: 0 },
      { pid: 1601, ppid: 1, uid: 501, name: 'Dock', command: '/System/Library/CoreServices/Dock.app/Contents/MacOS/Dock', footprint_bytes: 61 * MB, resident_bytes: 58 * MB, swap_bytes: null },
      { pid: 1702, ppid: 1, uid: 501, name: 'headroom', command: '/Applications/Headroom.app/Contents/MacOS/headroom', footprint_bytes: 38 * MB, resident_bytes: 36 * MB, swap_bytes: null },
    ],
    // What Rust's get_config says (`?windows=300,3600&max=2` to change it).
    config: {
      windows_seconds: (params.get('windows') || '600,3600,86400').split(',').map(Number),
      tick_window_seconds: 600,
      max_processes: Number(params.get('max') || 150),
      // Odd values on purpose: the page must show these, never defaults of its own.
      defaults: {
        sample_interval: '0.7s', notify_step: '256M', default_swap_budget: '6G',
        default_kill_free: '12', tight_compressed: '3G', tight_free: '21',
        metrics_address: '127.0.0.1:9999',
      },
    },
    recent: params.get('jobs') === 'none' ? [] : [
      { command: 'python gen.py --steps 50', mode: 'guard', started_at_ms: Date.now() - 7_200_000, ended_at_ms: Date.now() - 3_600_000,
        verdict: { fits: false, text: "doesn't fit: swap +9.6 GiB (denoise +3.5 GiB, decode +6.3 GiB), 1h 0m, stopped by the guard" } },
      { command: 'make -j8', mode: 'watch', started_at_ms: Date.now() - 90_000_000, ended_at_ms: Date.now() - 86_400_000,
        verdict: { fits: true, text: 'fits: swap +0 B, peak footprint 2.1 GiB, 12m 3s, exited with code 0' } },
    ],
    fits: params.get('jobs') === 'none' ? [] : [
      { key: 'python gen.py --steps 50', need_bytes: 29.1 * GB, runs: 4, fits: false, margin_bytes: 7.8 * GB, text: "won't fit, 7.8 GiB short", last_verdict: "doesn't fit" },
      { key: 'make -j8', need_bytes: 2.4 * GB, runs: 2, fits: true, margin_bytes: 18.9 * GB, text: 'fits now, 18.9 GiB to spare', last_verdict: 'fits' },
    ],
    jobs: params.get('jobs') === 'none' ? [] : [
      { id: 'job-7', pid: 4242, command: 'python generate.py --model stabilityai/stable-diffusion-xl-base-1.0 --offload cpu --steps 50', mode: 'guard', state: 'running', swap_growth_bytes: 7.1 * GB, swap_budget_bytes: 8 * GB, peak_footprint_bytes: 18.5 * GB, verdict: null, read_only: false },
      { id: 'job-6', pid: 5120, command: 'node /Users/ana/dev/site/node_modules/.bin/next dev', mode: 'watch', state: 'running', swap_growth_bytes: 120 * MB, swap_budget_bytes: null, peak_footprint_bytes: 812 * MB, verdict: null, read_only: false },
      { id: 'job-5', pid: 3990, command: 'python finetune.py --lora --batch 8 --grad-accum 4 --data ./corpus', mode: 'external', state: 'running', swap_growth_bytes: 2.3 * GB, swap_budget_bytes: 6 * GB, peak_footprint_bytes: 11.2 * GB, verdict: null, read_only: true },
      { id: 'job-4', pid: 3817, command: 'python pipeline.py --enable-model-cpu-offload', mode: 'guard', state: 'stopped', swap_growth_bytes: 9.6 * GB, swap_budget_bytes: 8 * GB, peak_footprint_bytes: 18.5 * GB, verdict: { fits: false, text: "doesn't fit: swap +9.6 GiB" }, read_only: false },
      { id: 'job-3', pid: 3650, command: 'python train.py --epochs 3', mode: 'watch', state: 'finished', swap_growth_bytes: 0, swap_budget_bytes: null, peak_footprint_bytes: 6.1 * GB, verdict: { fits: true, text: 'fits' }, read_only: false },
    ],
    settings: {
      sample_interval: '0.5s', notify_step: '512M', default_swap_budget: '8G', default_kill_free: '10', tight_compressed: '2G', tight_free: '20', launch_at_login: false,
      serve_metrics: false, metrics_address: '127.0.0.1:9101',
    },
    nextJobId: 8,
  };
  window.__mock = mock;

  const delay = (ms) => new Promise((r) => setTimeout(r, ms));
  const clone = (v) => JSON.parse(JSON.stringify(v));

  function parseSize(text) {
    const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*$/i.exec(String(text));
    if (!m) return null;
    const mult = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 }[m[2].toUpperCase()];
    return Number(m[1]) * mult;
  }

  function parsePercent(text) {
    const t = String(text).trim();
    if (!/^\d+(\.\d+)?$/.test(t)) return null;
    const n = Number(t);
    return n >= 0 && n <= 100 ? n : null;
  }

  function statusFor(windowSeconds) {
    const s = clone(mock.status);
    const scale = { 600: 1, 3600: 2.2, 86400: 2.6 }[windowSeconds] || 1;
    s.swap_change_bytes = Math.round(mock.status.swap_change_bytes * scale);
    s.sampled_at_ms = Date.now();
    return s;
  }

  const chartCache = {};
  async function chart(dark) {
    const name = dark ? 'chart-dark.svg' : 'chart-light.svg';
    if (!chartCache[name]) {
      const res = await fetch(new URL(name, fixtures));
      if (!res.ok) throw new Error(`mock: ${name}: HTTP ${res.status}`);
      chartCache[name] = await res.text();
    }
    return chartCache[name];
  }

  // Command errors as Rust types them (src-tauri/src/error.rs): the field at fault or null,
  // the message without the field's name, and the whole text. Tauri's own argument errors
  // stay plain strings.
  const fail = (field, label, message) => ({ field, message, text: `${label}: ${message}` });
  const err = (message) => ({ field: null, message, text: message });

  function addJob(pid, mode, budget) {
    const proc = mock.processes.find((p) => p.pid === pid);
    if (!proc) throw err(`no process with pid ${pid}`);
    const job = {
      id: `job-${mock.nextJobId++}`, pid, command: proc.command, mode, state: 'running',
      swap_growth_bytes: 0, swap_budget_bytes: budget ?? null,
      peak_footprint_bytes: proc.footprint_bytes, verdict: null, read_only: false,
    };
    mock.jobs.unshift(job);
    return clone(job);
  }

  function controlJob(id, from, to) {
    const job = mock.jobs.find((j) => j.id === id);
    if (!job) throw err(`job '${id}' is not one of the app's jobs`);
    if (from && job.state !== from) throw err(`the job cannot be ${to} now`);
    job.state = to;
    if (to === 'paused') job.pauses = (job.pauses ?? 0) + 1;
    return null;
  }

  const commands = {
    get_status: ({ windowSeconds }) => statusFor(windowSeconds),
    get_chart: ({ dark }) => chart(!!dark),
    get_config: () => clone(mock.config),
    get_processes: ({ query }) => {
      const q = String(query || '').trim().toLowerCase();
      const all = mock.processes.filter((p) => !q
        || p.name.toLowerCase().includes(q) || p.command.toLowerCase().includes(q)
        || String(p.pid) === q);
      return clone({ rows: all.slice(0, mock.config.max_processes), total: all.length });
    },
    get_jobs: () => clone(mock.jobs),
    get_recent_jobs: () => clone(mock.recent),
    get_fits: () => clone(mock.fits),
    // A key typed in the Guard form is the one asked about; `qwen` has past runs.
    get_fit_of: ({ command, key }) => (String(key ?? '').trim()
      ? (String(key).trim() === 'qwen'
        ? { key: 'qwen', fit: { ...clone(mock.fits[1]), key: 'qwen' }, past_verdicts: ['fits'] }
        : { key: String(key).trim(), fit: null, past_verdicts: [] })
      : String(command).startsWith('ollama')
        ? { key: 'ollama serve', fit: { ...clone(mock.fits[0]), key: 'ollama serve' }, past_verdicts: ["doesn't fit", 'fits'] }
        : { key: String(command), fit: null, past_verdicts: [] }),
    watch: ({ pid }) => addJob(pid, 'watch', null),
    guard: ({ pid, swapBudget, killFree, onBudget }) => {
      if (onBudget !== 'stop' && onBudget !== 'pause') throw fail('on_budget', 'on budget', `'${onBudget}' is not one of stop, pause`);
      const budget = parseSize(swapBudget);
      if (budget === null || budget <= 0) {
        throw fail('swap_budget', 'swap budget', `invalid size '${swapBudget}': expected a number with an optional unit K, M, G or T (e.g. 8G)`);
      }
      if (parsePercent(killFree) === null) {
        throw fail('kill_free', 'kill free', `invalid percentage '${killFree}': expected a number from 0 to 100`);
      }
      const job = addJob(pid, 'guard', budget);
      mock.jobs[0].on_budget = onBudget;
      return { ...job, on_budget: onBudget };
    },
    pause_job: ({ id }) => controlJob(id, 'running', 'paused'),
    resume_job: ({ id }) => controlJob(id, 'paused', 'running'),
    stop_job: ({ id }) => controlJob(id, null, 'stopping'),
    release: ({ id }) => {
      if (typeof id !== 'string') throw `invalid args \`id\` for command \`release\`: expected a string`;
      const i = mock.jobs.findIndex((j) => j.id === id);
      if (i < 0) throw err(`no job ${id}`);
      mock.jobs.splice(i, 1);
      return null;
    },
    get_settings: () => clone(mock.settings),
    set_settings: ({ settings }) => {
      if (!/^\d+(\.\d+)?(ms|s)$/.test(settings.sample_interval)) {
        throw fail('sample_interval', 'sample interval', `invalid duration '${settings.sample_interval}': expected e.g. 0.5s or 500ms`);
      }
      if (parseSize(settings.notify_step) === null) {
        throw fail('notify_step', 'notification step', `invalid size '${settings.notify_step}': expected e.g. 512M`);
      }
      if (parseSize(settings.default_swap_budget) === null) {
        throw fail('default_swap_budget', 'default swap budget', `invalid size '${settings.default_swap_budget}': expected e.g. 8G`);
      }
      if (typeof settings.default_kill_free !== 'string') {
        throw `invalid args \`settings\` for command \`set_settings\`: invalid type: ${typeof settings.default_kill_free}, expected a string`;
      }
      if (parsePercent(settings.default_kill_free.replace(/%$/, '')) === null) {
        throw fail('default_kill_free', 'default free-memory floor', `must be a percent from 0 to 100, not ${settings.default_kill_free}`);
      }
      if (!/^[\d.]+:\d+$/.test(settings.metrics_address)) {
        throw fail('metrics_address', 'metrics address', `invalid address '${settings.metrics_address}': expected IP:PORT, e.g. 127.0.0.1:9101`);
      }
      mock.settings = clone(settings);
      return clone(mock.settings);
    },
  };

  async function invoke(name, args = {}) {
    mock.calls.push({ name, args: clone(args ?? {}), at: Date.now() });
    await delay(10 + Math.random() * 30);
    if (failing.has(name) || failing.has(name.replace(/^get_/, ''))) {
      throw err(`${name} failed: the mock was told to fail (fail=${[...failing].join(',')})`);
    }
    const fn = commands[name];
    if (!fn) throw `unknown command ${name}`;
    return fn(args);
  }

  function emitTick() {
    // Drift a little, like a live machine.
    const s = mock.status;
    s.free_percent = Math.max(5, Math.min(95, s.free_percent + (Math.random() - 0.55) * 0.3));
    s.swap_used_bytes += 4 * MB;
    s.swap_change_bytes += 4 * MB;
    const j = mock.jobs.find((x) => x.id === 'job-7');
    if (j && j.swap_growth_bytes < j.swap_budget_bytes * 0.97) j.swap_growth_bytes += 2 * MB;
    mock.ticks += 1;
    const payload = statusFor(600); // like src-tauri's ticker: always the 10 min change
    for (const cb of mock.tickListeners) cb({ event: 'tick', id: 1, payload });
  }
  // Emits all the time (even when hidden) so tests can check the page ignores hidden ticks.
  if (params.get('ticks') !== '0') setInterval(emitTick, 500);

  window.__TAURI__ = {
    core: { invoke },
    event: {
      listen: async (name, cb) => {
        mock.calls.push({ name: `listen:${name}`, args: {}, at: Date.now() });
        if (name !== 'tick') return () => {};
        mock.tickListeners.push(cb);
        return () => { mock.tickListeners = mock.tickListeners.filter((x) => x !== cb); };
      },
    },
  };
})();
