"""Every page of the built site is valid HTML by the Nu Html Checker (vnu, the W3C's), errors only. vnu comes from
npm (`npm pack`), pinned by its sha256 and kept in .cache/; it runs on Java (17 or later).

What it still reports and the site keeps for now is listed in KNOWN, each with where it comes from and why, so
that each exclusion is dropped, and then fails here if it comes back, once its cause is gone."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from sitebuild import CACHE
from sitebuild.assets import npm_tarball

VNU_VERSION = "26.9.27"
VNU_SHA256 = "5970d3ffca91a627cf0965e5d91bb2e4242307c29292998de0b419d6a901b2b7"  # npm pack tarball

# (message, extract): the errors left, each matched by its message and the markup vnu quotes.
KNOWN = {
    # Kept on purpose: bench/browser_shapes.py times the shapes widget's first paint by Element Timing, which
    # reports only elements that carry the attribute when they are painted.
    "elementtiming, the Element Timing API's, not HTML's (shapes.html.j2)":
        (r"Attribute “elementtiming” not allowed on element “p”", r'elementtiming="mha-shapes"'),
    # Material's base.html: its drawer and search toggles, so that Firefox does not restore them open on a reload.
    "autocomplete on Material's two toggles":
        (r"Attribute “autocomplete” is only allowed when the input type is", r'<input class="md-toggle" [^>]*'
                                                                             r'autocomplete="off">'),
    # The checker's own gaps: valid markup it does not know.
    "scriptlevel on a MathML <mo> (Temml's primes; global in MathML Core, not in vnu's MathML 3)":
        (r"Attribute “scriptlevel” not allowed on element “mo”", r'<mo [^>]*scriptlevel="\d"'),
}


@pytest.fixture(scope="module")
def vnu_jar() -> Path:
    """vnu.jar of vnu-jar VNU_VERSION, fetched once with npm and checked by sha256."""
    tarball = npm_tarball("vnu-jar", VNU_VERSION, VNU_SHA256)
    jar = CACHE / f"vnu-{VNU_VERSION}.jar"
    if not jar.exists():
        with tarfile.open(tarball) as tar:
            part = jar.with_name(jar.name + ".part")
            part.write_bytes(tar.extractfile("package/build/dist/vnu.jar").read())
            part.replace(jar)
    return jar


def known(message: dict) -> str | None:
    """The name of the KNOWN entry message (one of vnu's) matches, or None."""
    return next((name for name, (text, extract) in KNOWN.items()
                 if re.search(text, message["message"]) and re.search(extract, message.get("extract", ""))), None)


def test_every_page_is_valid_html_but_for_what_is_known(plain_site, vnu_jar):
    java = shutil.which("java")
    assert java, "the Nu Html Checker needs Java 17 or later (Debian: openjdk-17-jre-headless)"
    ran = subprocess.run([java, "-jar", str(vnu_jar), "--errors-only", "--format", "json", "--skip-non-html",
                          str(plain_site)], capture_output=True, text=True, timeout=300)
    messages = json.loads(ran.stderr)["messages"]  # vnu writes its report on stderr
    errors = [m for m in messages if m["type"] != "info"]
    assert len({m["url"] for m in errors}) > 1 or not errors  # it read the pages (and names them)
    unknown = [f"{m['url'].split(plain_site.name, 1)[-1]}:{m.get('lastLine')}: {m['message']}\n    "
               f"{m.get('extract', '').strip()[:200]}" for m in errors if not known(m)]
    assert not unknown, f"{len(unknown)} markup errors:\n" + "\n".join(unknown)
    seen = {known(m) for m in errors}
    assert seen == set(KNOWN), f"no longer reported, drop from KNOWN: {sorted(set(KNOWN) - seen)}"


def test_the_known_errors_are_told_apart_from_others():
    pre = {"message": "The “aria-labelledby” attribute must not be specified on any “pre” element unless …",
           "extract": '<pre class="mha-exercise__print" tabindex="0" aria-labelledby="x-print"></pre>'}
    assert known(pre) is None  # the exercise's output is a named region now: an error again if it comes back
    toggle = {"message": "Attribute “autocomplete” is only allowed when the input type is …",
              "extract": '<input class="md-toggle" data-md-toggle="search" type="checkbox" id="__search" autocomplete="off">'}
    assert known(toggle) == "autocomplete on Material's two toggles"
    assert known({**toggle, "extract": '<input type="checkbox" name="wide" autocomplete="off">'}) is None
    timing = {"message": "Attribute “elementtiming” not allowed on element “p” at this point.",
              "extract": '<p class="mha-shapes__check" elementtiming="mha-shapes">'}
    assert known(timing) and known({**timing, "extract": '<p elementtiming="other">'}) is None
    css = {"message": "CSS: “--w”: Unknown dimension.", "extract": 'style="--w: 9.3e-14"'}
    assert known(css) is None  # the views write their CSS numbers without an exponent (views.css_number)
