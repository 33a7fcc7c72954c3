// Pages as Material shows them: with instant navigation a new page replaces the content without a new
// document, so modules (loaded once) act on every page through eachPage, which Material's document$ drives.

const domReady = new Promise((resolve) => {
  if (document.readyState !== "loading") resolve();
  else document.addEventListener("DOMContentLoaded", resolve, { once: true });
});

/** fn() for the page shown now and for every page shown after it. */
export function eachPage(fn) {
  domReady.then(() => (window.document$ ? window.document$.subscribe(() => fn()) : fn()));
}

const mounted = new WeakSet();

/** Whether a form control no longer holds the value the page was built with (a control built without one, as a
 * slider placed at mount, never has). */
function changed(c) {
  if (c.type === "checkbox" || c.type === "radio") return c.checked !== c.defaultChecked;
  if (c.tagName === "SELECT") return c.selectedIndex !== Math.max(0, [...c.options].findIndex((o) => o.defaultSelected));
  return (c.tagName === "TEXTAREA" || c.hasAttribute("value")) && c.value !== c.defaultValue;
}

// The main thread given back to the browser, which may draw or answer the reader before what follows runs.
const yieldToMain = () => (window.scheduler?.yield ? scheduler.yield() : nextTask());

/** A Promise settled in a task of its own. The timer calls a function of this file, not resolve itself: what the
 * awaiting code then does is a script of this site's in the browser's Long Animation Frames timing (a native
 * callback has no source, like a test harness's own scripts). */
export const nextTask = () => new Promise((resolve) => setTimeout(() => resolve()));

/** mount(root) once for each element matching selector, on every page; a mounted root says so (data-mounted).
 * The page is shown before its modules run (on a slow link, for seconds): a control the reader changed meanwhile,
 * and that the mount left as the reader left it, is changed again for the widget (its input and change events),
 * so that what it shows is what its controls hold. Each mount is a task of its own: a page's mounts, run with
 * Material's own start in one task, blocked the reader's input for as long as they all took together. A root
 * that a newer page replaced meanwhile is not mounted. */
export function mountEach(selector, mount) {
  eachPage(async () => {
    for (const root of document.querySelectorAll(selector)) {
      await yieldToMain();
      if (mounted.has(root) || !root.isConnected) continue;
      mounted.add(root);
      const early = [...root.querySelectorAll("input, textarea, select")].filter(changed);
      mount(root);
      root.dataset.mounted = "true";
      for (const control of early.filter(changed)) {
        for (const type of ["input", "change"]) control.dispatchEvent(new Event(type, { bubbles: true }));
      }
    }
  });
}

// A widget this close to the screen is about to be seen: Python starts, a widget's large asset is fetched.
const NEAR_VIEW = "600px";

/** fn() once root comes within NEAR_VIEW of the screen. */
export function whenNear(root, fn) {
  const observer = new IntersectionObserver((entries) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    observer.disconnect();
    fn();
  }, { rootMargin: NEAR_VIEW });
  observer.observe(root);
}
