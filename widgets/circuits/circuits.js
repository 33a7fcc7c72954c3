// The circuits widget: a run's circuits at the checkpoint the step control names. The page arrives with the
// recorded run's last step; every step's view of it (mha_page.views.circuits, made at build time) is in the
// widget's asset, fetched once when the widget comes near (or the step is moved first), so moving the step binds
// that view into the slots the template rendered with the shared binding: no Python is needed.
// When the reader's own run ends in the training widget, a button offers it: circuits_run_view computes its views
// in the page's Python, bound into the same slots; another goes back. Both, the asset's fetch and the call, go
// through the one life cycle (runtime/live.js): the latest wins, a failure is said beside the step with Retry.
//
// The one coupling with the training widget is the document-level event STEP_EVENT, which
// widgets/training/training.js dispatches: detail {run: which run ("built", the recorded one, or the reader's
// id), step: the checkpoint step its slider shows, finished: only once a run has ended, {config, seed, steps,
// params}}. While both widgets show the same run, the step here follows the training widget's.
import { bind } from "../runtime/bind.js";
import { call } from "../runtime/bridge.js";
import { fetchAsset } from "../runtime/asset.js";
import { InputError, live, shared } from "../runtime/live.js";
import { mountEach, whenNear } from "../runtime/page.js";

const STEP_EVENT = "mha-training-step";
const RECORDED = "built"; // the training widget's name for the run the site ships

/** A reader's run (id; args: the training widget's finished run) as a run, or {note} for one of another shape. */
async function computeRun(id, args) {
  const answer = await call("circuits_run_view", args);
  if (!answer.views.length) return { note: answer.run }; // its note says why
  return { id, run: answer.run, views: Object.fromEntries(answer.views.map((v) => [v.data.step, v])) };
}

function mount(root) {
  const form = root.querySelector("form");
  const { step, reader, recorded: back } = form.elements;
  const recorded = shared(async () => ({ id: RECORDED, ...(await fetchAsset(root, import.meta.url)) })); // {run, views}
  const finished = new Map(); // a reader's finished run's id -> its args, as the training widget sent them
  const computed = new Map(); // a reader's run's id -> its views, once Python has made them
  let latest = null; // the id of the reader's last finished run
  let wanted = RECORDED; // the run the reader asks to see
  let shown = { id: RECORDED, views: {} }; // until the asset arrives
  let followed = null; // {run, step}: what the training widget's slider last showed
  const showRun = (run) => {
    shown = run;
    bind(root, run.run); // its charts' lines among its slots
    const { first, last, every } = run.run.data;
    const at = followed?.run === run.id && run.views[followed.step] ? String(followed.step) :
      run.views[step.value] ? step.value : String(last);
    Object.assign(step, { min: String(first), max: String(last), step: String(every) });
    step.value = at;
    root.dataset.run = run.id === RECORDED ? "recorded" : "reader";
    const moved = [reader, back].includes(document.activeElement); // the button pressed is hidden: keep the focus in sight
    back.hidden = run.id === RECORDED;
    reader.hidden = !latest || latest === run.id;
    if (moved) [back, reader, step].find((el) => !el.hidden).focus();
  };
  const request = live(root, {
    args: () => {
      if (wanted !== RECORDED && !finished.has(wanted)) throw new InputError(root.dataset.trainFirst);
      return { id: wanted };
    },
    ask: async function* ({ id }) {
      if (id === RECORDED) return yield* recorded();
      if (!computed.has(id)) computed.set(id, await computeRun(id, finished.get(id)));
      return computed.get(id);
    },
    python: ({ id }) => id !== RECORDED,
    show: (run) => {
      if (run.note) { // a run of another shape: the one shown stays
        wanted = shown.id;
        return bind(root, run.note);
      }
      if (run.id === shown.id) shown = run; // the recorded run's steps arrived: the page shows that run already
      else showRun(run);
      const view = shown.views[step.value];
      if (view) bind(root, view);
    },
  });
  const onStep = (event) => {
    if (!root.isConnected) return document.removeEventListener(STEP_EVENT, onStep); // the page was swapped
    const { run, step: at, finished: done } = event.detail;
    followed = { run, step: at };
    if (done) {
      finished.set(run, done);
      latest = run;
      reader.hidden = run === shown.id;
    }
    if (run === shown.id && (shown.views[at] || !Object.keys(shown.views).length)) {
      step.value = String(at);
      request();
    }
  };
  document.addEventListener(STEP_EVENT, onStep);
  form.addEventListener("submit", (event) => event.preventDefault());
  step.addEventListener("input", () => request(step));
  reader.addEventListener("click", () => {
    wanted = latest;
    request(reader);
  });
  back.addEventListener("click", () => {
    wanted = RECORDED;
    request(back);
  });
  whenNear(root, () => request());
}

mountEach('[data-mha-widget="circuits"]', mount);
