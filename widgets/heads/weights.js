// The constructed weights of one head (a head_weights result), as tables a reader can inspect:
// W_Q, W_K, W_V [d_model, d_head] and W_O [d_head, d_model]. Rows and columns that are all zero
// are left out. Feature names hold the reader's tokens: textContent only.

const MATRICES = ["W_Q", "W_K", "W_V", "W_O"];
const INPUTS = { x: "the embeddings", residual: "the residual stream: x plus layer 0's output" };

function element(tag, text, className) {
  const el = document.createElement(tag);
  if (text !== undefined) el.textContent = text;
  if (className) el.className = className;
  return el;
}

const fmt = (v) => (v === 0 ? "·" : String(Number(v.toFixed(2))));
const nonZero = (flags) => flags.flatMap((flag, i) => (flag ? [i] : []));

/** One matrix as a table of its non-zero rows and columns. */
function matrixTable(name, M, rowLabels, colLabels) {
  const rows = nonZero(M.map((row) => row.some((v) => v !== 0)));
  const cols = nonZero(M[0].map((_, j) => M.some((row) => row[j] !== 0)));
  const size = ` [${M.length} × ${M[0].length}]`;
  if (!rows.length) {
    const p = element("p");
    p.append(element("var", name), `${size}: all zero, so this head writes nothing into the residual stream.`);
    return p;
  }
  const table = element("table", undefined, "mha-heads__matrix");
  const shown = `${size}: the ${rows.length} rows and ${cols.length} columns that are not all zero`;
  table.createCaption().append(element("var", name), shown);
  const head = table.createTHead().insertRow();
  head.append(element("td"), ...cols.map((j) => element("th", colLabels[j])));
  const body = table.createTBody();
  for (const i of rows) {
    const tr = body.insertRow();
    tr.append(element("th", rowLabels[i]), ...cols.map((j) => element("td", fmt(M[i][j]))));
  }
  const scroll = element("div", undefined, "mha-heads__scroll");
  Object.assign(scroll, { tabIndex: 0, role: "region", ariaLabel: `${name}, scrollable` }); // reachable by keyboard
  scroll.append(table);
  return scroll;
}

/** Fill el with the weights of head kind from reply (head_weights' result). */
export function renderWeights(el, reply, kind) {
  const head = reply.heads[kind];
  if (!head.W_Q) {
    el.replaceChildren(element("p", "This pattern has no weights of its own: it is computed from the four heads' patterns."));
    return;
  }
  const dims = Array.from({ length: head.d_head }, (_, i) => `dim ${i}`);
  const labels = (name) => (name === "W_O" ? [dims, reply.features] : [reply.features, dims]);
  const intro = element("p", `pattern = softmax(causal(${head.input} W_Q (${head.input} W_K)ᵀ / √d_head)), where ` +
    `${head.input} is ${INPUTS[head.input]}; d_model = ${reply.features.length}, d_head = ${head.d_head}. ` +
    "W_Q carries the factor √d_head, so the scores are the logits the head was built with." +
    (head.ablated ? " This head is ablated: its W_O is zero." : ""));
  el.replaceChildren(intro, ...MATRICES.map((name) => matrixTable(name, head[name], ...labels(name))));
}
