"""What the bundled parsers share (not a hook: abxd skips folders named `_…`): reading what an
operator imports, and reporting the URLs found in it by the hook contract (docs/plugins.md) as
abx-plugins' `parse_*_urls` hooks do — a `Snapshot` record per URL (depth + 1, with its title,
tags and bookmark time where the format has them), `urls.jsonl` with the same records, then the
`ArchiveResult`: `succeeded` with "N URLs parsed", or `noresults`.

Where abx-plugins is installed its parsers come first in `plugins_dirs` and replace these (a
plugin's name is taken by the first folder that has it)."""
import json
import os
import sys
import urllib.parse
import urllib.request

# The most a parser reads of what it is given.
MAX_BYTES = 64 << 20


def arg(name, default=""):
    """The value of `--NAME=value` among the hook's arguments."""
    prefix = f"--{name}="
    return next((a[len(prefix):] for a in sys.argv[1:] if a.startswith(prefix)), default)


def read_inputs(url):
    """The texts to parse: the file a `file://` URL names, else the import files of the
    snapshot (`$SNAP_DIR/staticfile/*.txt`), else what an `http(s)://` URL serves (a feed on a
    schedule). `None`: nothing to parse here."""
    if url.startswith("file://"):
        parsed = urllib.parse.urlsplit(url)
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"a file URL of another host: {parsed.netloc}")
        with open(urllib.parse.unquote(parsed.path), encoding="utf-8", errors="replace") as f:
            return [f.read(MAX_BYTES)]
    staticfile = os.path.join(os.environ.get("SNAP_DIR", "."), "staticfile")
    if os.path.isdir(staticfile):
        texts = []
        for name in sorted(os.listdir(staticfile)):
            path = os.path.join(staticfile, name)
            if name.endswith(".txt") and os.path.isfile(path) and os.path.getsize(path) > 0:
                with open(path, encoding="utf-8", errors="replace") as f:
                    texts.append(f.read(MAX_BYTES))
        if texts:
            return texts
    if url.startswith(("http://", "https://")):
        request = urllib.request.Request(url, headers={"User-Agent": "abxd"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return [response.read(MAX_BYTES).decode("utf-8", "replace")]
    return None


def http_url(url):
    """`url` stripped, if it is one a crawl can archive (http or https), else None."""
    url = (url or "").strip()
    return url if url.lower().startswith(("http://", "https://")) else None


def run(plugin, parse):
    """Runs a parser hook: `parse(text, source_url)` yields dicts with a `url` (and maybe
    `title`, `tags`, `bookmarked_at`) for each text given; reports them, each URL once."""
    url = arg("url")
    depth = int(arg("depth", "0") or 0)
    try:
        texts = read_inputs(url)
    except (OSError, ValueError) as err:
        if url.startswith(("http://", "https://")):
            # (A page that is no feed, or out of reach: nothing to parse, not a failure.)
            texts = None
        else:
            report_result("failed", f"cannot read {url}: {err}")
            sys.exit(1)
    found = {}
    for text in texts or []:
        for entry in parse(text, url):
            link = http_url(entry.get("url"))
            if link and link != url and link not in found:
                found[link] = entry
    records = []
    for link, entry in found.items():
        record = {"type": "Snapshot", "url": link, "plugin": plugin, "depth": depth + 1}
        for key in ("title", "tags", "bookmarked_at"):
            if entry.get(key):
                record[key] = entry[key]
        records.append(record)
    for record in records:
        print(json.dumps(record))
    if records:
        with open("urls.jsonl", "w") as out:
            out.writelines(json.dumps(record) + "\n" for record in records)
        report_result("succeeded", f"{len(records)} URLs parsed")
    else:
        if os.path.exists("urls.jsonl"):
            os.unlink("urls.jsonl")
        report_result("noresults", "0 URLs parsed")


def report_result(status, output_str):
    print(json.dumps({"type": "ArchiveResult", "status": status, "output_str": output_str}))
    print(output_str, file=sys.stderr)
