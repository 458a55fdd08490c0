#!/usr/bin/python3
"""Snapshot hook: the bookmarks of a browser's export (Netscape bookmark file: Firefox, Chrome,
Safari, Pinboard, Pocket…), each with its title, tags and the time it was bookmarked."""
import datetime
import html.parser
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "_imports"))
import imports  # noqa: E402


class Bookmarks(html.parser.HTMLParser):
    """The `<A HREF>` entries of a bookmark file, with the text of each as its title."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.entries = []
        self.open = None

    def handle_starttag(self, tag, attrs):
        if tag != "a":
            return
        attrs = dict(attrs)
        if not attrs.get("href"):
            return
        entry = {"url": attrs["href"], "title": ""}
        if attrs.get("tags"):
            entry["tags"] = attrs["tags"]
        added = attrs.get("add_date") or attrs.get("time_added")
        if added and added.strip().isdigit():
            seconds = int(added.strip())
            # (Some browsers write microseconds or milliseconds.)
            while seconds > 10**11:
                seconds //= 1000
            at = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
            entry["bookmarked_at"] = at.isoformat()
        self.open = entry
        self.entries.append(entry)

    def handle_data(self, data):
        if self.open is not None:
            self.open["title"] += data

    def handle_endtag(self, tag):
        if tag == "a" and self.open is not None:
            self.open["title"] = " ".join(self.open["title"].split())
            self.open = None


def parse(text, _source):
    # (Only a bookmark file: another HTML page's links are not bookmarks.)
    if "NETSCAPE-Bookmark-file" not in text[:4096] and "<DT><A" not in text.upper():
        return []
    parser = Bookmarks()
    parser.feed(text)
    parser.close()
    return parser.entries


imports.run("parse_netscape_urls", parse)
