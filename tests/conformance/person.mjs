// node person.mjs RUNNER_LOG LOMI_BIN DATA_DIR WORKSPACE_ID: plays the person for the
// authorization-code-grant scenario. Waits for the runner to print its authorization URL, opens
// it as a browser would (Lomi's page: client name, code, pairing), approves the pairing with
// `lomi pairing approve`, then follows the page on to the runner's callback.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const [log, lomi, data, workspace] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let authorize = null;
for (let i = 0; i < 300 && !authorize; i++) {
  const text = readFileSync(log, 'utf8');
  authorize = text.split('\n').find((line) => /^http:\/\/\S+\/authorize\?/.test(line.trim()));
  if (!authorize) await sleep(100);
}
if (!authorize) {
  console.log('the runner printed no authorization URL');
  process.exit(1);
}
authorize = authorize.trim();
console.log(`authorize: ${authorize}`);
const page = await fetch(authorize, { redirect: 'manual' });
const html = await page.text();
const pairing = html.match(/lomi pairing approve (pr_[0-9a-f]+)/)?.[1];
const request = html.match(/data-request="([0-9a-f]+)"/)?.[1];
if (page.status !== 200 || !pairing || !request) {
  console.log(`the authorize page was not the approval page (HTTP ${page.status}):\n${html}`);
  process.exit(1);
}
execFileSync(lomi, ['--data-dir', data, 'pairing', 'approve', pairing, '--workspace', workspace]);
console.log(`approved ${pairing}`);
const base = new URL(authorize).origin;
const back = await fetch(`${base}/authorize/continue?request=${request}`, { redirect: 'manual' });
const location = back.headers.get('location');
if (back.status !== 302 || !location) {
  console.log(`no redirect back to the client (HTTP ${back.status})`);
  process.exit(1);
}
console.log(`back to the client: ${location.replace(/code=[^&]+/, 'code=…')}`);
const callback = await fetch(location);
console.log(`callback answered ${callback.status}`);
