// widgets/heads/stale.js: the stale line says what is shown instead of what was asked for, and what it waits for.
import assert from "node:assert/strict";
import { test } from "node:test";
import { staleText } from "../../../widgets/heads/stale.js";

const example = "The cat sat.";
const waiting = { example, failed: false, ready: false };

test("nothing is said when the view is of what the controls hold", () => {
  assert.equal(staleText({ sentence: "a b", ablate: true }, { sentence: "a b", ablate: true }, waiting), "");
});

test("another sentence: the example or the sentence before, and what it waits for", () => {
  const shownExample = { sentence: example, ablate: false };
  const wanted = { sentence: "a b", ablate: false };
  assert.equal(staleText(shownExample, wanted, waiting), "Shown: the patterns of the built-in example sentence, not of "
    + "the sentence in the box. Waiting for Python to start in your browser to compute them.");
  assert.match(staleText({ sentence: "x", ablate: false }, wanted, { ...waiting, ready: true }),
    /^Shown: the patterns of the sentence before, .*\. Computing them…$/);
  assert.match(staleText(shownExample, wanted, { ...waiting, failed: true, ready: true }),
    /Python could not compute them: see the message above\.$/);
});

test("a blank box asks for a sentence; the knock-out alone says with or without", () => {
  assert.match(staleText({ sentence: "a", ablate: false }, { sentence: " \n", ablate: false }, waiting),
    /not of the sentence in the box\. Type a sentence to see its own\.$/);
  assert.match(staleText({ sentence: "a", ablate: false }, { sentence: "a", ablate: true }, waiting),
    /^Shown: the patterns without the knock-out, not with it\. Waiting/);
});
