// Harness-only: puts the page in a state worth a screenshot, chosen by ?demo=…
//   guard     open the guard form under "Google Chrome Helper" with an invalid budget and its error
//   settings  open the settings view with an invalid sample interval and its error
//   search    type "py" in the search box
// Loaded after ui/app.js by harness.html; never part of ui/.
const demo = new URLSearchParams(location.search).get('demo');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(selector, ms = 3000) {
  const end = Date.now() + ms;
  for (;;) {
    const node = document.querySelector(selector);
    if (node) return node;
    if (Date.now() > end) throw new Error(`demo: ${selector} never appeared`);
    await sleep(20);
  }
}
function type(input, text) {
  input.focus();
  input.value = text;
  input.dispatchEvent(new Event('input', { bubbles: true }));
}

async function run() {
  if (demo === 'guard') {
    (await waitFor('.proc[data-pid="2210"] button[data-action="guard"]')).click();
    type(await waitFor('#guard-budget'), '8x');
    (await waitFor('#guard-submit')).click();
    await waitFor('#guard-budget-error:not([hidden])');
  } else if (demo === 'settings') {
    (await waitFor('#settings-button')).click();
    await sleep(100);
    type(await waitFor('#set-sample-interval'), 'fast');
    (await waitFor('#settings-save')).click();
    await waitFor('#set-sample-interval-error:not([hidden])');
  } else if (demo === 'search') {
    type(await waitFor('#search'), 'py');
  }
}
if (demo) run().catch((e) => console.error(e));
