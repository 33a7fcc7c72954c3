// Formulas typeset by KaTeX at build time.
//   node typeset.mjs KATEX_MJS < [{"tex": "...", "display": true|false}, ...]
// Prints the HTML of each, in order, as a JSON list; or, if any does not parse, each error on stderr ("TeX: why")
// and exits 1.
import { pathToFileURL } from "node:url";

const { default: katex } = await import(pathToFileURL(process.argv[2]).href);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const errors = [];
const html = JSON.parse(input).map(({ tex, display }) => {
  try {
    return katex.renderToString(tex, { displayMode: display, throwOnError: true });
  } catch (err) {
    errors.push(`${tex}: ${err.message}`);
    return "";
  }
});
if (errors.length) {
  console.error(errors.join("\n"));
  process.exit(1);
}
console.log(JSON.stringify(html));
