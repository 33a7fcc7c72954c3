// Formulas typeset into MathML by Temml at build time.
//   node typeset.mjs TEMML_MJS < [{"tex": "...", "display": true|false}, ...]
// Prints the MathML of each, in order, as a JSON list (without Temml's TeX annotation: two more elements a formula,
// which no browser shows); or, if any does not parse, each error on stderr ("TeX: why") and exits 1.
import { pathToFileURL } from "node:url";

const { default: temml } = await import(pathToFileURL(process.argv[2]).href);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const errors = [];
const mathml = JSON.parse(input).map(({ tex, display }) => {
  try {
    return temml.renderToString(tex, { displayMode: display, throwOnError: true });
  } catch (err) {
    errors.push(`${tex}: ${err.message}`);
    return "";
  }
});
if (errors.length) {
  console.error(errors.join("\n"));
  process.exit(1);
}
console.log(JSON.stringify(mathml));
