// widgets/heads/state.js: the heads widget's state in the page's URL, read and written.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_URL_CHARS, readURL, writeURL } from "../../../widgets/heads/state.js";

const KINDS = ["previous", "induction", "positional"];
const DEFAULT = "the cat sat on the mat";

test("a sentence, a known head and ablate are read", () => {
  assert.deepEqual(readURL("?sentence=a+b%26c&head=induction&ablate=1", KINDS),
    { values: { sentence: "a b&c", head: "induction", ablate: true }, ignored: [] });
  assert.deepEqual(readURL("?ablate=0", KINDS), { values: { ablate: false }, ignored: [] });
});

test("an unknown head or ablate value is ignored and listed; a blank sentence is no sentence", () => {
  assert.deepEqual(readURL("?head=<b>&ablate=yes&sentence=%20%20", KINDS),
    { values: {}, ignored: ["head=<b>", "ablate=yes"] });
});

test("other parameters are neither read nor listed", () => {
  assert.deepEqual(readURL("?preset=gpt2&d_model=768", KINDS), { values: {}, ignored: [] });
});

test("a sentence longer than the URL keeps is cut on reading and left out on writing", () => {
  const long = "x".repeat(MAX_URL_CHARS + 10);
  assert.equal(readURL(`?sentence=${long}`, KINDS).values.sentence.length, MAX_URL_CHARS);
  assert.equal(new URLSearchParams(writeURL("", { sentence: long, head: "previous", ablate: false }, DEFAULT))
    .has("sentence"), false);
});

test("what is written reads back the same, the URL's other parameters kept", () => {
  const state = { sentence: "Ünïcödé & <markup> = 1+1", head: "positional", ablate: true };
  const search = writeURL("?preset=gpt2&head=previous", state, DEFAULT);
  const params = new URLSearchParams(search);
  assert.equal(params.get("preset"), "gpt2");
  assert.deepEqual(readURL(search, KINDS), { values: state, ignored: [] });
});

test("the default sentence and ablate off are left out of the URL", () => {
  assert.equal(writeURL("?sentence=old&ablate=1", { sentence: DEFAULT, head: "previous", ablate: false }, DEFAULT),
    "?head=previous");
});
