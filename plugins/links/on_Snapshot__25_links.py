#!/usr/bin/python3
"""Snapshot hook: the page's links, saved to links.txt; each same-origin link is reported as a
Snapshot record so that crawls with --depth follow it. LINKS_ALL_ORIGINS=1 reports every link."""
import html.parser
import json
import os
import sys
import urllib.parse
import urllib.request

url = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--url=")), "")


class LinkParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            self.links.append(urllib.parse.urldefrag(urllib.parse.urljoin(url, href))[0])


try:
    with urllib.request.urlopen(url, timeout=30) as response:
        page = response.read(10 << 20).decode("utf-8", "replace")
except (OSError, ValueError) as err:
    print(f"cannot fetch {url}: {err}", file=sys.stderr)
    sys.exit(1)
parser = LinkParser()
parser.feed(page)
origin = urllib.parse.urlsplit(url)[:2]
links = list(dict.fromkeys(parser.links))
with open("links.txt", "w") as out:
    out.writelines(link + "\n" for link in links)
follow = [l for l in links if l.startswith(("http://", "https://"))
          and (os.environ.get("LINKS_ALL_ORIGINS") == "1" or urllib.parse.urlsplit(l)[:2] == origin)]
for link in follow:
    print(json.dumps({"type": "Snapshot", "url": link}))
print(json.dumps({"type": "ArchiveResult", "status": "succeeded",
                  "output_str": f"{len(links)} links, {len(follow)} to follow"}))
