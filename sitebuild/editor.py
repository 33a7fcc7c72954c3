"""The exercises' code editor: CodeMirror 6, pinned by widgets/exercise/package.json and its package-lock.json,
installed with `npm ci` into .cache/editor-npm/ (again only when the lock changes) and bundled with esbuild,
pinned there too, into minified ES modules: BUNDLE, which exercise.js imports when an exercise comes near the
screen, and the chunks it imports (CHUNKS), CodeMirror's packages split as editor.mjs imports them."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from sitebuild import CACHE, ROOT, BuildError, cache_lock

SOURCE = ROOT / "widgets" / "exercise"
ENTRY = SOURCE / "editor.mjs"  # not .js: the build copies widgets' .js files as they are, and this one is bundled
PINS = ("package.json", "package-lock.json")
BUNDLE = "editor.bundle.js"
CHUNKS = "editor-[hash]"  # esbuild's chunk names: beside BUNDLE, named by their contents


def run(cmd: list[str], **options) -> None:
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True, **options)
    except FileNotFoundError as e:
        raise BuildError(f"`{cmd[0]}` is needed to build the exercises' editor (Node.js with npm): {e}") from None
    except subprocess.CalledProcessError as e:
        raise BuildError(f"`{' '.join(map(str, cmd))}` failed:\n{(e.stderr or e.stdout).strip()}") from None


def installed(folder=CACHE / "editor-npm"):
    """The folder where the pinned packages are installed, installed by `npm ci` if the lock changed."""
    with cache_lock():
        stamp = hashlib.sha256(b"".join((SOURCE / name).read_bytes() for name in PINS)).hexdigest()
        done = folder / "installed.sha256"
        if not done.exists() or done.read_text() != stamp:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            for name in PINS:
                shutil.copy(SOURCE / name, folder / name)
            print("installing the exercises' editor (npm ci)")
            # no install scripts: esbuild's binary comes in its platform's package
            run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--silent"], cwd=folder)
            done.write_text(stamp)
        return folder


def bundle() -> dict[str, bytes]:
    """{file name: bytes}: editor.mjs and the parts of CodeMirror it imports, as minified ES modules (BUNDLE and
    its chunks)."""
    with cache_lock():  # the bundle is written into the shared install folder
        folder = installed()
        out = folder / "bundle"
        shutil.rmtree(out, ignore_errors=True)
        run([str(folder / "node_modules" / ".bin" / "esbuild"), str(ENTRY), "--bundle", "--splitting", "--format=esm",
             "--minify", "--target=es2022", "--legal-comments=eof", f"--entry-names={Path(BUNDLE).stem}",
             f"--chunk-names={CHUNKS}", f"--outdir={out}"],
            cwd=folder, env={**os.environ, "NODE_PATH": str(folder / "node_modules")})
        return {file.name: file.read_bytes() for file in sorted(out.iterdir())}
