// The capture-set benchmark's peer: the same pages and viewports captured full page with
// playwright-core driving Debian's Chromium, each PNG written to a folder, the set timed.
// Usage: node capture_set_playwright.mjs CONFIG.json — {urls, viewports, outdir, repeat,
// chromium}; prints one JSON line: {"ms": [...], "bytes": N, "files": N}.
import { createRequire } from "node:module";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const config = JSON.parse(readFileSync(process.argv[2], "utf8"));

const browser = await chromium.launch({
  executablePath: config.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage();
const times = [];
let bytes = 0;
let files = 0;
for (let run = 0; run < config.repeat; run++) {
  const outdir = join(config.outdir, `run-${run}`);
  mkdirSync(outdir, { recursive: true });
  const started = performance.now();
  bytes = 0;
  files = 0;
  for (const [i, url] of config.urls.entries()) {
    for (const viewport of config.viewports) {
      await page.setViewportSize(viewport);
      await page.goto(url, { waitUntil: "load" });
      const png = await page.screenshot({ fullPage: true });
      writeFileSync(join(outdir, `page-${i}-${viewport.width}.png`), png);
      bytes += png.length;
      files += 1;
    }
  }
  times.push(performance.now() - started);
}
await browser.close();
console.log(JSON.stringify({ ms: times, bytes, files }));
