#!/usr/bin/python3
"""Snapshot hook: the page's HTTP response status and headers, saved to headers.json."""
import json
import sys
import urllib.error
import urllib.request

url = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--url=")), "")
if not url.startswith(("http://", "https://")):
    print(f"skipped: no HTTP headers for {url.split(':', 1)[0]}: URLs")
    sys.exit(10)
try:
    with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=30) as response:
        status, headers = response.status, dict(response.headers.items())
except urllib.error.HTTPError as err:
    status, headers = err.code, dict(err.headers.items())
except (urllib.error.URLError, OSError) as err:
    print(f"cannot fetch {url}: {err}", file=sys.stderr)
    sys.exit(1)
with open("headers.json", "w") as out:
    json.dump({"url": url, "status": status, "headers": headers}, out, indent=2)
print(json.dumps({"type": "ArchiveResult", "status": "succeeded", "output_str": f"HTTP {status}, {len(headers)} headers"}))
