// What every engine checks on a page with widgets, run in the page itself so that any driver can run it
// (its source is evaluated as this one expression). watch() records the page's errors and policy
// violations; visit(timeoutMs) brings Python up as a reader does (a widget near the screen) and makes each
// widget compute once, then reports; go(url, timeoutMs) moves on to the next page by its link.
//
// It relies on the widgets' contract only: a widget is an element [data-mha-widget] whose data-state goes
// "busy" when it asks Python and "live" (or "error") when the answer is shown. Each widget's form controls
// are changed one at a time, the kinds most likely to ask Python first, until one makes it busy: no
// widget is named here, so widgets added later are covered as they come. A widget with a Load button (whose
// Python waits for the reader to ask for a large download) is loaded first. An exercise (a widget with a Run
// button) goes "busy", then "live" once its own Python has checked the code, its result's data-status "pass",
// "fail" or "error". A widget
// marked data-views="precomputed" shows views made at build time (in the page or in a file it fetches): a
// control's change shows another, no Python.
({
  watch() {
    if (window.__mhaProblems) return;
    window.__mhaProblems = [];
    const note = (text) => window.__mhaProblems.push(text);
    // Not the notice that resize observations were put off to the next frame, which the HTML standard reports
    // as an error event though nothing threw (in Firefox, puppeteer's page errors leave it out too).
    window.addEventListener("error", (e) => e.message.startsWith("ResizeObserver loop") ||
      note(`page error: ${e.message} (${e.filename}:${e.lineno})`));
    window.addEventListener("unhandledrejection", (e) => note(`unhandled rejection: ${e.reason}`));
    document.addEventListener("securitypolicyviolation", (e) =>
      note(`Content-Security-Policy violation: ${e.effectiveDirective} blocked ${e.blockedURI || "inline code"}`));
  },

  /** What a start that never came may be owed to: the page (which one, whether loaded), its frames, and
   * where its first widget is (Python starts once a widget is near the screen). */
  async whyIdle(widget) {
    let frames = 0, counting = true;
    const count = () => { frames += 1; if (counting) requestAnimationFrame(count); };
    requestAnimationFrame(count);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    counting = false;
    const box = widget?.getBoundingClientRect();
    return { url: location.href, title: document.title, readyState: document.readyState,
             widgets: document.querySelectorAll("[data-mha-widget]").length, widgetTop: box && Math.round(box.top),
             innerHeight, framesIn1s: frames };
  },

  /** Follow the page's own link to url, as a reader moves on: Material's instant navigation swaps the content in
   * and the page's Python serves the next page's widgets. Resolves to null once the new content is in (its
   * address shown, every widget of the page left gone, every new one mounted), or to {failed: why}. */
  async go(url, timeoutMs) {
    this.watch();
    const target = new URL(url, location.href).href;
    const link = [...document.querySelectorAll("a[href]")].find((a) => a.href === target);
    if (!link) return { failed: `${location.href} has no link to ${target}` };
    document.querySelectorAll("[data-mha-widget]").forEach((w) => { w.dataset.probeLeft = "true"; });
    window.__mhaProblems.length = 0;  // what happens from here on is the next page's
    link.click();
    for (const until = Date.now() + timeoutMs; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
      if (location.href === target && !document.querySelector("[data-probe-left]") &&
          document.querySelectorAll("[data-mha-widget]:not([data-mounted])").length === 0) return null;
    }
    return { failed: `${target} was not shown within ${timeoutMs} ms of following its link (at ${location.href})` };
  },

  async visit(timeoutMs) {
    this.watch();
    const until = Date.now() + timeoutMs;
    const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const poll = async (ok, ms) => {
      for (const end = Math.min(until, Date.now() + ms); Date.now() < end; await wait(50)) if (ok()) return true;
      return ok();
    };
    const html = document.documentElement;
    const report = { runtime: null, widgets: [], problems: window.__mhaProblems, handedOver: document.readyState };
    // A driver may hand the page over before it is parsed (WebKit's did, under load): its widgets come later.
    await poll(() => document.readyState === "complete", timeoutMs);
    const widgets = [...document.querySelectorAll("[data-mha-widget]")];
    // As a reader keeps the widget in view: the page may still grow above it (its math typeset) as it loads.
    const started = () => {
      if (html.dataset.mhaRuntime === "idle") widgets[0]?.scrollIntoView({ block: "center" });
      return ["ready", "error"].includes(html.dataset.mhaRuntime);
    };
    await poll(started, timeoutMs);
    report.runtime = html.dataset.mhaRuntime ?? "absent";
    report.visibility = document.visibilityState;
    if (report.runtime === "idle") report.idle = await this.whyIdle(widgets[0]);
    report.status = document.querySelector("[data-mha-status]")?.textContent ?? "";  // what the reader is told
    // Scripts and sub- and superscripts with the wrong number of parts, once the page is whole
    report.mathml = [...document.querySelectorAll("msub, msup, mfrac, munder, mover, msubsup, munderover")]
      .filter((e) => e.children.length !== (/^m(subsup|underover)$/.test(e.localName) ? 3 : 2))
      .map((e) => e.outerHTML.slice(0, 200));
    if (report.runtime !== "ready") return report;

    // [kind selector, change]: the change gives the control another valid value, or returns false.
    const TEXT = "the cat sat on the mat and the cat sat on the mat";
    const step = (c) => {
      const value = Number(c.value || c.min || 1), by = Number(c.step) || 1;
      const next = c.max !== "" && value + by > Number(c.max) ? value - by : value + by;
      if (c.min !== "" && next < Number(c.min)) return false;
      c.value = String(next);
      return true;
    };
    const KINDS = [
      ['textarea, input[type="text"], input:not([type])', (c) => { c.value = TEXT; return true; }],
      ["select", (c) => c.options.length > 1 && ((c.selectedIndex = (c.selectedIndex + 1) % c.options.length), true)],
      ['input[type="checkbox"]', (c) => ((c.checked = !c.checked), true)],
      ['input[type="number"], input[type="range"]', step],
    ];
    for (const root of widgets) {
      const seen = { name: root.dataset.mhaWidget, id: root.id, states: [], control: null, message: "" };
      report.widgets.push(seen);
      root.scrollIntoView({ block: "center" });
      const observer = new MutationObserver(() => seen.states.push(root.dataset.state));
      observer.observe(root, { attributes: true, attributeFilter: ["data-state"] });
      const run = root.querySelector('button[name="run"]');
      if (run) {  // an exercise: Run checks what the editor holds (its skeleton), in the exercises' own Python
        seen.kind = "exercise";
        seen.control = 'button[name="run"]';
        await poll(() => root.dataset.editorLoaded !== undefined, timeoutMs);  // the code editor, once near
        seen.editor = root.dataset.editorLoaded ?? "still loading";
        run.click();
        await poll(() => seen.states.includes("busy") && ["live", "error"].includes(root.dataset.state), timeoutMs);
        observer.disconnect();
        seen.state = root.querySelector('[data-output="result"]')?.dataset.status;
        seen.message = root.querySelector('[data-output="result"]')?.textContent ?? "";
        continue;
      }
      const controls = KINDS.flatMap(([selector, change]) =>
        [...root.querySelectorAll(selector)].filter((c) => !c.disabled && c.form).map((c) => [c, change]));
      if (root.dataset.views === "precomputed") {
        seen.kind = "precomputed";
        const before = root.textContent;
        const [control, change] = controls.find(([c, change]) => change(c)) ?? [];
        seen.control = control ? `${control.tagName.toLowerCase()}[name="${control.name}"]` : null;
        control?.dispatchEvent(new Event("input", { bubbles: true }));
        seen.changed = await poll(() => root.textContent !== before, 3000);
        observer.disconnect();
        seen.state = root.dataset.state;
        continue;
      }
      seen.kind = "widget";
      const load = root.querySelector('button[name="load"]');
      if (load && !load.hidden && !load.disabled) {  // a widget whose Python waits for the reader's Load (a model)
        seen.control = 'button[name="load"]';
        load.click();
        await poll(() => ["live", "error"].includes(root.dataset.state), timeoutMs);
      }
      for (const [control, change] of controls) {
        if (!change(control)) continue;
        seen.control = `${control.tagName.toLowerCase()}[name="${control.name}"]`;
        for (const type of ["input", "change"]) control.dispatchEvent(new Event(type, { bubbles: true }));
        if (control.matches(KINDS[0][0])) control.form.requestSubmit();  // a text is applied on Enter too
        if (await poll(() => seen.states.includes("busy"), 3000)) break;
      }
      await poll(() => seen.states.includes("busy") && ["live", "error"].includes(root.dataset.state), timeoutMs);
      observer.disconnect();
      seen.state = root.dataset.state;
      seen.message = root.querySelector('[data-output="error"]:not([hidden]), [data-message="error"]:not([hidden])')?.textContent ?? "";
    }
    return report;
  },
})
