#!/usr/bin/python3
"""Snapshot hook: the page's <title>, saved to title.txt."""
import html.parser
import json
import sys
import urllib.request

url = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--url=")), "")


class TitleParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.inside, self.title = False, None

    def handle_starttag(self, tag, attrs):
        self.inside = tag == "title" and self.title is None

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.title = (self.title or "") + data


try:
    with urllib.request.urlopen(url, timeout=30) as response:
        page = response.read(10 << 20).decode("utf-8", "replace")
except (OSError, ValueError) as err:
    print(f"cannot fetch {url}: {err}", file=sys.stderr)
    sys.exit(1)
parser = TitleParser()
parser.feed(page)
if not parser.title:
    print(json.dumps({"type": "ArchiveResult", "status": "skipped", "output_str": "the page has no <title>"}))
    sys.exit(0)
# Text, not bytes that drive a terminal: control characters (ESC, BEL, …, as `&#27;` in the page)
# are dropped; whitespace runs become one space.
title = " ".join("".join(c if c.isprintable() else " " for c in parser.title).split())
with open("title.txt", "w") as out:
    out.write(title + "\n")
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": title}))
