"""The MkDocs hooks that make the site (declared in mkdocs.yml, so `mkdocs build` and `mkdocs serve` run them):

    on_config          the widgets' names and the policy for overrides/main.html (config.extra.mha)
    on_page_markdown   each fact marker replaced by the number it names (facts.py), each widget marker rendered
                       (widgets.py); the page's widgets, for overrides/main.html (page.meta["mha_widgets"])
    on_files           the widgets' scripts and assets, their styles joined in one file, the runtime's config.js,
                       the mha_core and mha_page wheels
                       (compiled to bytecode when the site hosts Python),
                       Temml's css and font and (unless extra.pyodide_cdn) Python for the browser (python_bundle.py)
    on_post_page       each formula typeset into MathML by Temml (typeset.py), once Material's search has indexed
                       the page with the formula's TeX (typeset, its text would be each symbol twice: MathML and
                       TeX); the code blocks lightened and sized (highlight.py)
    on_post_build      the formulas of the search index made readable text (typeset.py); without a site address,
                       a sitemap for http://127.0.0.1:8000/ (serving.py), so instant navigation works there; every
                       page's Content-Security-Policy sealed with the site's inline-script hashes
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
if ROOT not in sys.path:  # MkDocs loads this file alone, not as part of its package
    sys.path.insert(0, ROOT)

from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402

from sitebuild import (BUILD, CACHE, BuildError, assets, csp, facts, highlight, python_bundle, serving,  # noqa: E402
                       typeset, widgets)
from sitebuild.wheel import build_wheels, set_source_date_epoch  # noqa: E402

live_reload = False  # under mkdocs serve


def on_startup(command: str, dirty: bool) -> None:
    global live_reload
    live_reload = command == "serve"
    if live_reload:
        sys.dont_write_bytecode = True  # a .pyc written under a watched folder would start another rebuild


def pyodide_cdn(config) -> bool:
    """mkdocs.yml's extra.pyodide_cdn: the pages load Pyodide from jsDelivr, not from the site."""
    return bool(config.extra.get("pyodide_cdn"))


def model_cdn(config) -> str | None:
    """mkdocs.yml's extra.model_cdn: the URL the pages take the real model's wheel from (None: from the site)."""
    return config.extra.get("model_cdn") or None


def on_config(config):
    set_source_date_epoch()
    if live_reload:
        widgets.forget()  # each rebuild renders with the mha_core and widget.py files as they are now
        facts.forget()
    BUILD["model_cdn"] = model_cdn(config)
    config.extra["mha"] = {"widgets": widgets.names(), "stylesheet": widgets.STYLESHEET,
                           "csp": csp.policy(pyodide_cdn(config), model_cdn(config))}
    return config


def on_page_markdown(markdown: str, page, config, files) -> str:
    try:
        markdown = facts.expand(markdown, page.file.src_uri)
        markdown, page.meta["mha_widgets"] = widgets.expand_markers(markdown, widgets.template_env(), page.file.src_uri)
        return markdown
    except BuildError as e:
        raise PluginError(str(e)) from None


def site_files(pyodide_cdn: bool) -> dict[str, bytes | Path]:
    """{path in the site: bytes, or the file to copy} of everything the site adds to docs/."""
    out: dict[str, bytes | Path] = {}
    for src in sorted(widgets.WIDGETS.rglob("*.js")):
        out[f"assets/widgets/{src.relative_to(widgets.WIDGETS).as_posix()}"] = src
    out[widgets.STYLESHEET] = widgets.stylesheet()
    for name in widgets.names():
        out |= {f"assets/widgets/{name}/{file}": data for file, data in widgets.assets(name).items()}
    wheels = []  # [(file name, the wheel as the worker reads it, as it goes on the wire)]
    for wheel_name, wheel in build_wheels():
        if not pyodide_cdn:  # the Pyodide it is compiled by is fetched only when the site hosts Python
            wheel = python_bundle.compiled_wheel(wheel_name, wheel, assets.pyodide_folder(), CACHE)
        wheels.append((wheel_name, *python_bundle.wheel_for_the_wire(wheel, CACHE)))
        out[f"assets/wheels/{wheel_name}.gz"] = wheels[-1][2]
    hosted, python = assets.browser_python(pyodide_cdn)
    out["assets/widgets/runtime/config.js"] = assets.runtime_config(wheels, python, pyodide_cdn).encode()
    out |= {f"assets/temml/{name}": data for name, data in assets.temml_files().items()}
    out |= {f"assets/pyodide/{name}": path for name, path in hosted.items()}
    return out


def on_post_page(output: str, page, config) -> str:
    try:
        return highlight.code_blocks(typeset.typeset(output, assets.temml_module(), page.file.src_uri))
    except BuildError as e:
        raise PluginError(str(e)) from None


def on_files(files: Files, config) -> Files:
    try:
        added = site_files(pyodide_cdn(config))
    except BuildError as e:
        raise PluginError(str(e)) from None
    for uri, source in added.items():
        content = {"abs_src_path": str(source)} if isinstance(source, Path) else {"content": source}
        files.append(File.generated(config, uri, **content))
    return files


def on_post_build(config) -> None:
    index = Path(config.site_dir) / "search" / "search_index.json"  # written by the search plugin's on_post_build
    try:
        typeset.search_previews(index, assets.temml_module())
    except BuildError as e:
        raise PluginError(str(e)) from None
    if not config.site_url:  # (mkdocs serve sets it to where it serves)
        serving.local_sitemap(Path(config.site_dir))
    csp.seal_site(Path(config.site_dir), live_reload)
