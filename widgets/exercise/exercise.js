// An exercise: the reader's code, kept per exercise in localStorage, runs in the exercises' own Python
// (runner.js), which checks it against mha_core and answers pass, fail, error or stopped. The code editor
// (CodeMirror, editor.bundle.js) is imported when the exercise comes near the screen; until then, and if it
// cannot load, a plain textarea is the editor. Every message goes in as text. A run goes through the one life cycle
// (runtime/live.js): Run is off and Stop on while it runs, the focus on whichever acts; Stop ends the exercises'
// Python at once (runner.js), and the run's answer says it stopped.
import { output, setText, showMessage } from "../runtime/dom.js";
import { live, reported } from "../runtime/live.js";
import { mountEach, nextTask, whenNear } from "../runtime/page.js";
import { runExercise, stopPython } from "./runner.js";
import "../runtime/status.js";

const STORE = "mha-exercise:";

function kept(name) {
  try {
    return localStorage.getItem(STORE + name);
  } catch {
    return null; // storage refused by the reader's settings: the code lives as long as the page
  }
}

function keep(name, code, skeleton) {
  try {
    if (code === skeleton) localStorage.removeItem(STORE + name);
    else localStorage.setItem(STORE + name, code);
  } catch {
    // as above
  }
}

/** The textarea as an editor ({code(), setCode(text), focus()}), until the code editor replaces it: a row for each
 * line of its code, as the code editor shows them, so that the swap moves nothing on the page. */
function plainEditor(textarea, onChange) {
  const fit = () => (textarea.rows = textarea.value.split("\n").length);
  fit();
  textarea.addEventListener("input", () => {
    fit();
    onChange(textarea.value);
  });
  const setCode = (text) => {
    textarea.value = text;
    fit();
  };
  return { code: () => textarea.value, setCode, focus: () => textarea.focus() };
}

/** Swap the textarea for the code editor, carrying over its code, selection and focus as they are once the editor is
 * made (the reader may type meanwhile). The bundle's chunks are each evaluated in a task of their own (editor.mjs),
 * and so are the editor's making's steps. */
async function loadEditor(widget) {
  const { createEditor } = await import("./editor.bundle.js");
  await nextTask();
  const { textarea, root } = widget;
  const label = root.querySelector("label");
  const editor = await createEditor({
    parent: output(root, "editor"),
    doc: textarea.value,
    attributes: { "data-editor": "", "aria-labelledby": label.id,
                  "aria-describedby": textarea.getAttribute("aria-describedby") },
    onChange: widget.changed,
  });
  if (editor.code() !== textarea.value) editor.setCode(textarea.value);
  editor.view.dispatch({ selection: { anchor: textarea.selectionStart, head: textarea.selectionEnd } });
  const focused = document.activeElement === textarea;
  textarea.remove();
  label.removeAttribute("for"); // the editor names itself by the label (aria-labelledby)
  widget.editor = editor;
  root.dataset.editorLoaded = "true";
  if (focused) editor.focus();
}

class Exercise {
  constructor(root) {
    this.root = root;
    this.name = root.dataset.exercise;
    this.textarea = root.querySelector("textarea[data-editor]");
    this.skeleton = this.textarea.defaultValue;
    this.result = output(root, "result");
    this.button = (name) => root.querySelector(`button[name="${name}"]`);
    this.words = JSON.parse(root.querySelector("[data-exercise-words]").content.textContent); // page_messages()
    this.limitMs = Number(root.dataset.timeLimitMs);
    this.changed = (code) => keep(this.name, code, this.skeleton);
    this.textarea.value = kept(this.name) ?? this.skeleton;
    this.editor = plainEditor(this.textarea, this.changed);
    this.request = this.live();
    this.button("run").addEventListener("click", () => {
      this.show("running", this.words.running, "");
      this.request(this.button("run"));
    });
    this.button("reset").addEventListener("click", () => this.reset());
    this.button("solution").addEventListener("click", () => this.showSolution());
    whenNear(root, () => loadEditor(this).catch(() => (root.dataset.editorLoaded = "false")));
  }

  /** The life cycle of a run of the reader's code: runExercise's answer {status, message, output[, pointer]}, and
   * what it waits for meanwhile as its progress. */
  live() {
    const { words, limitMs } = this;
    const inputs = this.root.dataset.params ? { params: this.root.dataset.params } : {}; // the trained model's
    return live(this.root, {
      args: () => ({ code: this.editor.code() }),
      ask: ({ code }) => reported((tell) => runExercise(this.name, code, tell, { words, limitMs, inputs })),
      progress: (message) => this.show("running", message),
      show: ({ status, message, output: printed, pointer }) => {
        this.show(status, message, printed, pointer);
        this.button("solution").hidden = false;
      },
      python: () => false, // the exercises' own Python, which says what it waits for
      busy: [this.button("run")], stop: this.button("stop"), stopping: () => stopPython("stopped"),
    });
  }

  /** The run's status and message; printed, what the code printed (null: unchanged); pointer, a syntax error's line
   * and caret (mha_core.exercises.syntax_pointer), in a monospace block so that the caret stands under its column. */
  show(status, message, printed = null, pointer = "") {
    this.result.dataset.status = status;
    setText(this.result, message);
    showMessage(this.root, "pointer", pointer);
    if (printed !== null) {
      const box = output(this.root, "print");
      box.hidden = !printed;
      setText(box.querySelector("pre"), printed);
    }
  }

  reset() {
    this.editor.setCode(this.skeleton);
    keep(this.name, this.skeleton, this.skeleton);
    this.editor.focus();
  }

  showSolution() {
    output(this.root, "solution").hidden = false;
    this.button("solution").hidden = true;
  }
}

mountEach('[data-mha-widget="exercise"]', (root) => new Exercise(root));
