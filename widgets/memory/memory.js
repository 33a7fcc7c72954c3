// The memory widget: q's numbers from the projection to the merge, drawn as NumPy stores them, with the
// strides at each step. Changing n, h or the split asks mha_core.memory in the page's Python worker and
// redraws the steps and the patterns in the structure memory.html.j2 renders at build time.
import { call } from "../runtime/bridge.js";
import { mountEach } from "../runtime/page.js";
import { output, showMessage } from "../runtime/dom.js";
import "../runtime/status.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** How many cells of a row wrap as one unit: a memory row's d_model (a token of q's buffer); a read row's
 * 3-D block when it holds at most d_model numbers (a token of [n, h, d_k]), else a row of its last axis. */
function wrapUnit(shape, dModel) {
  if (!shape) return dModel;
  const block = shape.length === 3 ? shape.at(-1) * shape.at(-2) : shape.at(-1);
  return block <= dModel ? block : shape.at(-1);
}

/** A row's cells in units that wrap whole, as memory.html.j2's cells macro draws them: with a shape, a gap
 * between the array's rows and a wider one between its 3-D blocks; with from (a copy's sources), each moved
 * cell knows how far it moved (--from, in cells). */
function cells(list, unit, shape, from) {
  const units = [];
  list.forEach((c, i) => {
    if (i % unit === 0) {
      let cls = "mha-memory__unit";
      if (shape && i) cls += " mha-memory__gap";
      if (shape?.length === 3 && i && i % (shape.at(-1) * shape.at(-2)) === 0) cls += " mha-memory__gap2";
      units.push(el("span", cls));
    }
    const moved = from && from[i] !== i;
    let cls = `mha-memory__cell mha-h${c.head}`;
    if (shape && i % unit && i % shape.at(-1) === 0) cls += " mha-memory__gap";
    if (moved) cls += " mha-memory__moved";
    const cell = el("span", cls, String(c.token + 1));
    if (moved) cell.style.setProperty("--from", String(from[i] - i));
    cell.title = `token ${c.token + 1}, head ${c.head + 1}, feature ${c.feature + 1}`;
    units.at(-1).append(cell);
  });
  return units;
}

function row(name, label, list, unit, shape, from) {
  const div = el("div", "mha-memory__row");
  div.dataset.row = name;
  Object.assign(div, { role: "group", ariaLabel: label });
  const wrap = el("span", "mha-memory__cells");
  wrap.append(...cells(list, unit, shape, from));
  div.append(el("span", "mha-memory__label", label), wrap);
  return div;
}

/** Slide the copied numbers from where they were in z's buffer to where the merge puts them: each moved
 * cell starts at the place of the cell --from cells away, measured, since the row may wrap. */
function play(li) {
  li.classList.remove("mha-memory--play");
  const row = [...li.querySelectorAll('[data-row="memory"] .mha-memory__cell')];
  const at = row.map((cell) => cell.getBoundingClientRect());
  row.forEach((cell, i) => {
    const source = at[i + Number(cell.style.getPropertyValue("--from") || 0)];
    cell.style.setProperty("--dx", `${source.left - at[i].left}px`);
    cell.style.setProperty("--dy", `${source.top - at[i].top}px`);
  });
  void li.offsetWidth; // restart the animation
  li.classList.add("mha-memory--play");
}

function step(s, r) {
  const li = el("li");
  Object.assign(li.dataset, { step: s.name, shape: s.shape.join(","), strides: s.strides_bytes.join(","),
    stridesElements: s.strides_elements.join(","), buffer: s.buffer, view: String(s.view), moved: String(s.moved) });
  const what = el("p", "mha-memory__what");
  what.append(el("code", "", s.code), " ", el("span", "mha-memory__shape", `[${s.shape.join(", ")}]`), " ",
    el("span", "", s.strides_text), " ", el("strong", "", s.note));
  if (s.moved) {
    const button = el("button", "", "Play the copy");
    button.type = "button";
    button.dataset.action = "play";
    what.append(" ", button);
  }
  li.append(what, row("memory", `memory (${s.buffer})`, s.memory, r.d_model, null, s.from),
    row("read", "read", s.read, wrapUnit(s.shape, r.d_model), s.shape));
  return li;
}

function pattern(split, head, h, r) {
  const table = el("table", "mha-memory__pattern");
  table.dataset.head = String(h);
  table.setAttribute("aria-label", `head ${h + 1}, ${split} split`);
  table.append(el("caption", "", `head ${h + 1}`));
  head.forEach((texts, q) => {
    const tr = el("tr");
    texts.forEach((w, k) => {
      const td = el("td", "", w);
      td.style.setProperty("--w", String(r.patterns[split][h][q][k]));
      td.title = `query ${q + 1}, key ${k + 1}: ${w}`;
      tr.append(td);
    });
    table.append(tr);
  });
  return table;
}

function render(root, r) {
  output(root, "steps").replaceChildren(...r.steps.map((s) => step(s, r)));
  output(root, "patterns").replaceChildren(...["right", "wrong"].map((split) => {
    const figure = el("figure");
    figure.dataset.split = split;
    figure.append(el("figcaption", "", `${split === "right" ? "Right" : "Wrong"} split: each head's pattern`),
      ...r.patterns_text[split].map((head, h) => pattern(split, head, h, r)));
    return figure;
  }));
  Object.assign(root.dataset, { n: String(r.n), h: String(r.h), wrong: String(r.wrong) });
}

async function update(root, form) {
  const args = { n_tokens: Number(form.n_tokens.value), n_heads: Number(form.n_heads.value), wrong: form.wrong.checked };
  root.dataset.state = "busy";
  const asked = (root.asked = (root.asked || 0) + 1);
  try {
    const r = await call("memory_steps", args);
    if (asked !== root.asked) return; // a later change is on its way
    render(root, r);
    showMessage(root, "error", "");
    root.dataset.state = "live";
  } catch (err) {
    if (asked !== root.asked) return;
    root.dataset.state = "error";
    showMessage(root, "error", `Could not draw this: ${err.message}`);
  }
}

function mount(root) {
  const form = root.querySelector("form");
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", () => update(root, form));
  root.addEventListener("click", (event) => {
    const button = event.target.closest('button[data-action="play"]');
    if (button) play(button.closest("li"));
  });
}

mountEach('[data-mha-widget="memory"]', mount);
