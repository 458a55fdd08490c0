#!/usr/bin/python3
"""Snapshot hook: JSON Lines an operator imports — one object per line with its `url` (or
`href`, `link`), and maybe its `title`, `tags` (a string or a list) and `bookmarked_at` (or
`timestamp`, `time`, `created_at`)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "_imports"))
import imports  # noqa: E402


def entry_of(item):
    url = next((item[k] for k in ("url", "href", "link") if isinstance(item.get(k), str)), None)
    if not url:
        return None
    tags = item.get("tags")
    if isinstance(tags, list):
        tags = ",".join(str(t) for t in tags)
    at = next((item[k] for k in ("bookmarked_at", "timestamp", "time", "created_at") if item.get(k)), None)
    return {"url": url, "title": item.get("title") or "", "tags": tags, "bookmarked_at": at and str(at)}


def parse(text, _source):
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except ValueError:
            continue
        entry = isinstance(item, dict) and entry_of(item)
        if entry:
            yield entry


imports.run("parse_jsonl_urls", parse)
