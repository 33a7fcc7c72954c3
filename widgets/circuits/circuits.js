// The circuits widget: a run's circuits at the checkpoint the step control names. The page arrives with the
// recorded run's last step; every step's view of it (mha_core.views.circuits, made at build time) is in the
// widget's asset, fetched once when the widget comes near (or the step is moved first), so moving the step binds
// that view into the slots the template rendered with the shared binding: no Python is needed. A failed fetch is
// said in the error slot, with Retry.
// When the reader's own run ends in the training widget, a button offers it: circuits_run_view computes its views
// in the page's Python (runtime/live.js: the call's life cycle), bound into the same slots; another goes back.
//
// The one coupling with the training widget is the document-level event STEP_EVENT, which
// widgets/training/training.js dispatches: detail {run: which run ("built", the recorded one, or the reader's
// id), step: the checkpoint step its slider shows, finished: only once a run has ended, {config, seed, steps,
// params}}. While both widgets show the same run, the step here follows the training widget's.
import { bind } from "../runtime/bind.js";
import { InputError, live } from "../runtime/live.js";
import { fillIn } from "../runtime/dom.js";
import { mountEach, whenNear } from "../runtime/page.js";

const STEP_EVENT = "mha-training-step";
const RECORDED = "built"; // the training widget's name for the run the site ships

/** The asset root names: {run: the recorded run's own view, views: {step: its view}}. */
async function fetchSteps(root) {
  const response = await fetch(new URL(`./${root.dataset.asset}`, import.meta.url));
  if (!response.ok) throw new Error(`${root.dataset.asset}: HTTP ${response.status}`);
  return response.json();
}

/** The charts' lines of a run (points, and the uniform guess's height): SVG geometry, which bind does not set. */
function drawLines(root, { pairs, loss, uniform }) {
  const lines = [...Object.entries(pairs).map(([pair, points]) => [`polyline[data-pair="${pair}"]`, points]),
    ...Object.entries(loss).map(([key, points]) => [`polyline[data-loss="${key}"]`, points])];
  for (const [selector, points] of lines) root.querySelector(selector)?.setAttribute("points", points);
  for (const line of root.querySelectorAll(".mha-circuits__uniform")) for (const y of ["y1", "y2"]) line.setAttribute(y, uniform);
}

function mount(root) {
  const form = root.querySelector("form");
  const { step, reader, recorded: back, retry } = form.elements;
  const recorded = { id: RECORDED, run: null, views: {} }; // run and views once the asset has arrived
  let shown = recorded;
  let loading = null; // the asset's fetch, until it fails
  let finished = null; // {id, args}: the reader's last finished run, as the training widget sent it
  let followed = null; // {run, step}: what the training widget's slider last showed
  const ids = new WeakMap(); // a finished run's args -> its id, for the answer to a request
  const computed = new Map(); // a reader's run's id -> its views, once Python has made them
  const showStep = () => {
    const view = shown.views[step.value];
    if (view) bind(root, view);
  };
  const showRun = (run) => {
    shown = run;
    bind(root, run.run);
    drawLines(root, run.run.lines);
    const { first, last, every } = run.run.data;
    const at = followed?.run === run.id && run.views[followed.step] ? String(followed.step) :
      run.views[step.value] ? step.value : String(last);
    Object.assign(step, { min: String(first), max: String(last), step: String(every) });
    step.value = at;
    root.dataset.run = run === recorded ? "recorded" : "reader";
    const moved = [reader, back].includes(document.activeElement); // the button pressed is hidden: keep the focus in sight
    back.hidden = run === recorded;
    reader.hidden = !finished || finished.id === run.id;
    if (moved) [back, reader, step].find((el) => !el.hidden).focus();
    showStep();
  };
  const failed = form.querySelector('[data-message="error"]');
  const loadSteps = () => {
    loading ??= fetchSteps(root).then(({ run, views }) => {
      Object.assign(recorded, { run, views });
      failed.hidden = retry.hidden = true;
      if (root.dataset.state !== "busy") root.dataset.state = "live";
      if (shown === recorded) showStep(); // where the step was moved meanwhile
    }, (error) => { // data-state stays "initial": "error" is live.js's, whose recompute would ask for the reader's run
      loading = null;
      failed.textContent = fillIn(root.dataset.failed, { error: error.message });
      failed.hidden = retry.hidden = false;
    });
    return loading;
  };
  const request = live(root, {
    fn: "circuits_run_view",
    args: () => {
      if (!finished) throw new InputError("Train a run in the training widget first.");
      return finished.args;
    },
    show: (answer, args) => {
      if (!answer.views.length) return bind(root, answer.run); // a run of another shape: its note says why
      const run = { id: ids.get(args), run: answer.run, views: Object.fromEntries(answer.views.map((v) => [v.data.step, v])) };
      computed.set(run.id, run);
      showRun(run);
    },
    failure: "Could not compute your run's circuits",
  });
  const onStep = (event) => {
    if (!root.isConnected) return document.removeEventListener(STEP_EVENT, onStep); // the page was swapped
    const { run, step: at, finished: done } = event.detail;
    followed = { run, step: at };
    if (done) {
      finished = { id: run, args: done };
      ids.set(done, run);
      reader.hidden = run === shown.id;
    }
    if (run === shown.id && (shown.views[at] || !recorded.run)) {
      step.value = String(at);
      if (recorded.run) showStep();
      else loadSteps();
    }
  };
  document.addEventListener(STEP_EVENT, onStep);
  form.addEventListener("submit", (event) => event.preventDefault());
  step.addEventListener("input", () => (recorded.run ? showStep() : loadSteps()));
  reader.addEventListener("click", () => (computed.has(finished?.id) ? showRun(computed.get(finished.id)) : request(reader)));
  back.addEventListener("click", () => loadSteps().then(() => recorded.run && showRun(recorded)));
  retry.addEventListener("click", () => {
    step.focus(); // the button hides itself
    loadSteps();
  });
  if (step.value !== root.dataset.step) loadSteps(); // a browser that restored the slider from an earlier visit
  whenNear(root, loadSteps);
}

mountEach('[data-mha-widget="circuits"]', mount);
