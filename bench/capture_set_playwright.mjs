// The capture-set benchmark's peer: the same pages and viewports captured full page with
// playwright-core driving Debian's Chromium, each PNG written to a folder, the set timed.
// Usage: node capture_set_playwright.mjs CONFIG.json — {urls, viewports, chromium}. It launches
// the browser once, then for each line read on stdin (a folder to write into) runs the set
// and prints one JSON line: {"ms": N, "bytes": N, "files": N}. Runs alternate with Lomi's
// (bench/capture_set.py), so both meet the same machine.
import { createRequire } from "node:module";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const config = JSON.parse(readFileSync(process.argv[2], "utf8"));

const browser = await chromium.launch({
  executablePath: config.chromium,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage();
console.log(JSON.stringify({ ready: true }));
for await (const outdir of createInterface({ input: process.stdin })) {
  if (!outdir.trim()) break;
  mkdirSync(outdir, { recursive: true });
  const started = performance.now();
  let bytes = 0;
  let files = 0;
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
  console.log(JSON.stringify({ ms: performance.now() - started, bytes, files }));
}
await browser.close();
