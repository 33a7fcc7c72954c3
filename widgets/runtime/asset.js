// A widget's asset: the file its root names (data-asset), beside the widget's script, fetched when the widget asks
// for it (with runtime/live.js's shared, once). Checked by its sha256 when the root carries one (data-sha256). Its
// failure is said in the widget's words: the sentence of Python's in the root's data-asset-failed, {error} filled in
// here with why (as the runtime says its downloads' progress), shown as it is, with Retry (live.js).
import { fillIn } from "./dom.js";
import { sha256 } from "../shared/sha256.js";

/** A failure already said in the reader's words. */
export class AssetError extends Error {}

async function load({ asset, sha256: digest }, base) {
  const response = await fetch(new URL(`./${asset}`, base));
  if (!response.ok) throw new Error(`${asset}: HTTP ${response.status}`);
  const bytes = await response.arrayBuffer();
  if (digest && crypto.subtle && (await sha256(bytes)) !== digest) {
    throw new Error(`${asset} is not the file this site was built with (its sha256 differs)`);
  }
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** The parsed JSON of root's asset (base: the widget script's URL, import.meta.url), or an AssetError. */
export async function fetchAsset(root, base) {
  try {
    return await load(root.dataset, base);
  } catch (err) {
    throw new AssetError(fillIn(root.dataset.assetFailed, { error: err.message }));
  }
}
