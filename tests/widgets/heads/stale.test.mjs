// widgets/heads/stale.js: which stale line (of mha_page.views.heads.stale_lines) says what is shown instead of what
// was asked for, and what it waits for.
import assert from "node:assert/strict";
import { test } from "node:test";
import { staleKey } from "../../../widgets/heads/stale.js";

const example = "The cat sat.";
const waiting = { example, failed: false, ready: false };

test("nothing is said when the view is of what the controls hold", () => {
  assert.equal(staleKey({ sentence: "a b", ablate: true }, { sentence: "a b", ablate: true }, waiting), "");
});

test("another sentence: the example or the sentence before, and what it waits for", () => {
  const shownExample = { sentence: example, ablate: false };
  const wanted = { sentence: "a b", ablate: false };
  assert.equal(staleKey(shownExample, wanted, waiting), "example waiting");
  assert.equal(staleKey({ sentence: "x", ablate: false }, wanted, { ...waiting, ready: true }), "before computing");
  assert.equal(staleKey(shownExample, wanted, { ...waiting, failed: true, ready: true }), "example failed");
});

test("a blank box asks for a sentence; the knock-out alone says with or without", () => {
  assert.equal(staleKey({ sentence: "a", ablate: false }, { sentence: " \n", ablate: false }, waiting), "before blank");
  assert.equal(staleKey({ sentence: "a", ablate: false }, { sentence: "a", ablate: true }, waiting), "clean waiting");
  assert.equal(staleKey({ sentence: "a", ablate: true }, { sentence: "a", ablate: false }, waiting), "ablated waiting");
});
