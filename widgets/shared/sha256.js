// The one way files are checked, on the page and in the workers: their SHA-256 as the build writes it
// (lowercase hex, hashlib's hexdigest()).

/** The SHA-256 of bytes (an ArrayBuffer or a typed array) as 64 lowercase hex digits. */
export async function sha256(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}
