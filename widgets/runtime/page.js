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

/** mount(root) once for each element matching selector, on every page; a mounted root says so (data-mounted). */
export function mountEach(selector, mount) {
  eachPage(() => {
    for (const root of document.querySelectorAll(selector)) {
      if (mounted.has(root)) continue;
      mounted.add(root);
      mount(root);
      root.dataset.mounted = "true";
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
