#!/usr/bin/python3
"""Snapshot hook: every http(s) URL in a text an operator imports (`abxctl add -`, `--from`)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "_imports"))
import imports  # noqa: E402

URL = re.compile(r"""https?://[^\s<>"'`{}|\\^]+""", re.IGNORECASE)
# Punctuation that ends a sentence, not the URL before it.
TRAILING = ".,;:!?*'\""


def trimmed(url):
    """`url` without what the text around it added: trailing punctuation, and a closing bracket
    the URL did not open (`(see https://a/b)`)."""
    while url:
        if url[-1] in TRAILING:
            url = url[:-1]
        elif url[-1] in ")]" and url.count(url[-1]) > url.count("(" if url[-1] == ")" else "["):
            url = url[:-1]
        else:
            return url
    return url


def parse(text, _source):
    for match in URL.finditer(text):
        yield {"url": trimmed(match.group(0))}


imports.run("parse_txt_urls", parse)
