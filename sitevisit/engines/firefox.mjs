// Visits pages in one headless Firefox, driven by puppeteer-core over WebDriver BiDi, and runs probe.js on each.
// stdin: {"executable", "base", "paths", "timeoutMs"}; stdout: one JSON report per page, a line each
// ({path, runtime, widgets, problems}), or {"failed": reason} if Firefox cannot be driven.
import { readFileSync } from "node:fs";
import puppeteer from "puppeteer-core";

const probe = readFileSync(new URL("./probe.js", import.meta.url), "utf8");
const { executable, base, paths, timeoutMs } = JSON.parse(readFileSync(0, "utf8"));

/** Resolves once the page shows url, loaded. goto can resolve early: the page being left may still update its
 * history (a widget writing its state into the URL), and the next page's scripts would then run before its
 * document is parsed. */
async function loaded(page, url, timeoutMs) {
  const isLoaded = (u) => location.href === new URL(u).href && document.readyState === "complete";
  for (const until = Date.now() + timeoutMs; ; await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (await page.evaluate(isLoaded, url).catch(() => false)) return;  // (a document being replaced throws)
    if (Date.now() > until) throw new Error(`${url} did not load within ${timeoutMs} ms`);
  }
}

let browser;
try {
  browser = await puppeteer.launch({ browser: "firefox", executablePath: executable, headless: true,
    protocol: "webDriverBiDi", defaultViewport: { width: 1200, height: 900 } });
} catch (err) {
  console.log(JSON.stringify({ failed: `Firefox (${executable}) did not start: ${err.message}` }));
  process.exit(0);
}
try {
  const page = await browser.newPage();
  let problems = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (message) => message.type() === "error" && problems.push(`console error: ${message.text()}`));
  await page.evaluateOnNewDocument(`(${probe}).watch()`);
  for (const [i, path] of paths.entries()) {
    problems = [];
    if (i === 0) {
      await page.goto(base + path, { waitUntil: "load", timeout: timeoutMs });
      await loaded(page, base + path, timeoutMs);
    } else {
      const moved = await page.evaluate(`(${probe}).go(${JSON.stringify(base + path)}, ${timeoutMs})`);
      if (moved) throw new Error(`Firefox did not move on to ${path}: ${moved.failed}`);
    }
    const report = await page.evaluate(`(${probe}).visit(${timeoutMs})`);
    report.problems.push(...problems);
    console.log(JSON.stringify({ path, ...report }));
  }
} finally {
  await browser.close();
}
