// The widget's state in the page's URL (?sentence=…&head=…&ablate=1), for the page's first heads
// widget. A sentence is the reader's text: it is only ever shown as text. A head or ablate value
// that is not one of the known ones is ignored, with a note.

export const MAX_URL_CHARS = 2000; // a longer sentence is not put in the URL

/** {values: {sentence?, head?, ablate?}, ignored: ["key=value", ...]} from a query string. */
export function readURL(search, kinds) {
  const values = {};
  const ignored = [];
  const params = new URLSearchParams(search);
  const sentence = params.get("sentence");
  if (sentence !== null && sentence.trim()) values.sentence = sentence.slice(0, MAX_URL_CHARS);
  const head = params.get("head");
  if (head !== null && kinds.includes(head)) values.head = head;
  else if (head !== null) ignored.push(`head=${head}`);
  const ablate = params.get("ablate");
  if (ablate === "1" || ablate === "0") values.ablate = ablate === "1";
  else if (ablate !== null) ignored.push(`ablate=${ablate}`);
  return { values, ignored };
}

/** The query string for the widget's state, keeping the URL's other parameters. */
export function writeURL(search, { sentence, head, ablate }, defaultSentence) {
  const params = new URLSearchParams(search);
  if (sentence === defaultSentence || sentence.length > MAX_URL_CHARS) params.delete("sentence");
  else params.set("sentence", sentence);
  params.set("head", head);
  if (ablate) params.set("ablate", "1");
  else params.delete("ablate");
  return `?${params}`;
}
