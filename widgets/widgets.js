// A page loads the modules of the widgets it holds (overrides/main.html writes their script tags). A page that
// instant navigation brings in, without a new document, may hold others: their modules are loaded here, once
// each. A widget root's module is widgets/NAME/NAME.js, NAME its data-mha-widget with "_" for "-".
import { eachPage } from "./runtime/page.js";

/** The URL of the module that mounts root (a [data-mha-widget] element). */
function widgetModule(root) {
  const name = root.dataset.mhaWidget.replaceAll("-", "_");
  return new URL(`./${name}/${name}.js`, import.meta.url).href;
}

eachPage(() => {
  const modules = new Set([...document.querySelectorAll("[data-mha-widget]")].map(widgetModule));
  for (const url of modules) import(url); // (the module map loads each URL once)
});
