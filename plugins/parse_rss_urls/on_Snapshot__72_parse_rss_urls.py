#!/usr/bin/python3
"""Snapshot hook: the entries of an RSS (0.9x, 1.0, 2.0) or Atom feed, each with its title and
when it was published."""
import email.utils
import os
import sys
import xml.etree.ElementTree as ElementTree

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "_imports"))
import imports  # noqa: E402


def local(tag):
    """A tag without its namespace (`{http://www.w3.org/2005/Atom}entry` → `entry`)."""
    return tag.rsplit("}", 1)[-1].lower()


def child_text(element, name):
    for child in element:
        if local(child.tag) == name:
            return (child.text or "").strip()
    return ""


def published(element):
    """When an entry was published, as ISO 8601, if it says (RSS's RFC 822 date, Atom's own)."""
    for name in ("pubdate", "published", "updated", "date"):
        text = child_text(element, name)
        if not text:
            continue
        try:
            return email.utils.parsedate_to_datetime(text).isoformat()
        except (TypeError, ValueError):
            return text
    return None


def entry_link(element):
    """An RSS item's `<link>` text, or an Atom entry's alternate `<link href>`."""
    links = [child for child in element if local(child.tag) == "link"]
    for link in links:
        if link.get("href") and link.get("rel", "alternate") == "alternate":
            return link.get("href")
    for link in links:
        if (link.text or "").strip():
            return link.text.strip()
    return links[0].get("href") if links else child_text(element, "guid")


def parse(text, _source):
    try:
        root = ElementTree.fromstring(text.lstrip().encode("utf-8"))
    except ElementTree.ParseError:
        return  # (Not a feed.)
    if local(root.tag) not in ("rss", "rdf", "feed"):
        return
    for element in root.iter():
        if local(element.tag) not in ("item", "entry"):
            continue
        url = entry_link(element)
        if url:
            yield {
                "url": url,
                "title": child_text(element, "title"),
                "bookmarked_at": published(element),
            }


imports.run("parse_rss_urls", parse)
