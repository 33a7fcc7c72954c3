// The exercises' code editor: CodeMirror 6 with Python's highlighting and indentation, bundled at build time
// (sitebuild/editor.py) and imported by exercise.js when an exercise comes near the screen.
// Tab indents (Shift+Tab dedents); Escape, then Tab, moves on (CodeMirror's way out for keyboard users).
// Text inserted at once (a paste, a dictation, a text insertion) goes in exactly as it is: no auto-indentation,
// no closing brackets (neither extension is loaded; Enter alone indents the new line).
//
// CodeMirror's packages come by dynamic import, each a chunk of the bundle evaluated in a task of its own (the
// module's import resolves once all are in): evaluated in one task, they held the main thread for 55-150 ms on a
// desktop, a frame a reader sees drop, the more so while the training widget draws its run.
// (The timer calls a function of this file, not resolve: the next chunk's evaluation is then this site's script in
// the browser's Long Animation Frames timing, as runtime/page.js's nextTask.)
const nextTask = () => new Promise((resolve) => setTimeout(() => resolve()));
const { EditorState } = await import("@codemirror/state");
await nextTask();
const { EditorView, keymap, lineNumbers } = await import("@codemirror/view");
await nextTask();
const { indentUnit, syntaxHighlighting } = await import("@codemirror/language");
await nextTask();
const { classHighlighter } = await import("@lezer/highlight");
const { defaultKeymap, history, historyKeymap, indentWithTab } = await import("@codemirror/commands");
await nextTask();
const { python } = await import("@codemirror/lang-python");

/** Replace the selection by text, as it is (CodeMirror reads a multi-line insertion back from the DOM). */
function insertAsIs(view, event) {
  const text = event.data ?? event.dataTransfer?.getData("text/plain");
  if (typeof text !== "string" || !/^insert(Text|ReplacementText|FromPaste|FromDrop)$/.test(event.inputType)) {
    return false;
  }
  event.preventDefault();
  view.dispatch(view.state.replaceSelection(text), { userEvent: "input.paste", scrollIntoView: true });
  return true;
}

/** An editor holding doc, put in parent. attributes go on the editable element (its label, data-editor);
 * onChange(code) follows every change. Made in three tasks, each a fraction of the one long task they made
 * together: its state (the code parsed), its view apart from the page (no style or layout yet), then the view put
 * in parent. Resolves to {view, code(), setCode(text), focus()}. */
export async function createEditor({ parent, doc, attributes, onChange }) {
  const state = EditorState.create({
    doc,
    extensions: [
      lineNumbers(),
      history(),
      python(),
      indentUnit.of("    "),
      EditorState.tabSize.of(4),
      syntaxHighlighting(classHighlighter),
      keymap.of([indentWithTab, ...defaultKeymap, ...historyKeymap]),
      // tabindex: an editable element is focusable already; saying so lets checkers see that its scrolling
      // box (a long line, on a phone) is reached by keyboard
      EditorView.contentAttributes.of({ ...attributes, tabindex: "0", spellcheck: "false", autocapitalize: "off",
                                        autocorrect: "off", translate: "no" }),
      EditorView.domEventHandlers({ beforeinput: (event, v) => insertAsIs(v, event) }),
      EditorView.updateListener.of((update) => update.docChanged && onChange(update.state.doc.toString())),
    ],
  });
  await nextTask();
  const view = new EditorView({ state });
  await nextTask();
  parent.append(view.dom);
  return {
    view,
    code: () => view.state.doc.toString(),
    setCode: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    focus: () => view.focus(),
  };
}
