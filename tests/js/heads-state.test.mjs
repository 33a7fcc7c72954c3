// heads/state.js: the heads widget's state in the page's URL, read and written back as data.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_URL_CHARS, readURL, writeURL } from "../../widgets/heads/state.js";

const KINDS = ["previous_token", "positional", "induction", "content", "averaged"];
const DEFAULT = "The old lighthouse keeper waved.";

test("a link's sentence, head and knock-out are read; unknown values are listed, not used", () => {
  const { values, ignored } = readURL("?sentence=a%20b%20a&head=induction&ablate=1&other=x", KINDS);
  assert.deepEqual(values, { sentence: "a b a", head: "induction", ablate: true });
  assert.deepEqual(ignored, []);
  const junk = readURL("?head=<b>x</b>&ablate=maybe&sentence=%20%20", KINDS);
  assert.deepEqual(junk, { values: {}, ignored: ["head=<b>x</b>", "ablate=maybe"] });
});

test("a long sentence is cut to what a URL keeps", () => {
  const long = "a ".repeat(MAX_URL_CHARS);
  assert.equal(readURL(`?sentence=${long}`, KINDS).values.sentence.length, MAX_URL_CHARS);
});

test("written back: the default sentence and an unticked knock-out stay out of the URL, other parameters stay", () => {
  assert.equal(writeURL("?x=1", { sentence: DEFAULT, head: "content", ablate: false }, DEFAULT), "?x=1&head=content");
  const query = writeURL("", { sentence: "a b a", head: "induction", ablate: true }, DEFAULT);
  assert.deepEqual(readURL(query, KINDS).values, { sentence: "a b a", head: "induction", ablate: true }); // a round trip
  const long = "b".repeat(MAX_URL_CHARS + 1);
  assert.equal(writeURL("", { sentence: long, head: "induction", ablate: false }, DEFAULT), "?head=induction");
});
