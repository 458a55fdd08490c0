# Sourced by the packaging checks (bash).
# The Debian mirror of this host's own apt sources for SUITE (one-line or deb822 format): a
# machine behind a mirror has no other, and this check names none of its own.
host_mirror() { # SUITE
    python3 - "$1" <<'SOURCES'
import glob, sys
suite, found = sys.argv[1], []
for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        words = line.split("#")[0].split()
        if words[:1] == ["deb"]:
            words = [w for w in words[1:] if not w.startswith("[")]
            if len(words) >= 2 and words[1] == suite:
                found.append(words[0])
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in open(path).read().split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if ":" in line and not line.startswith(("#", " ")):
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.split()
        if "deb" in fields.get("types", []) and suite in fields.get("suites", []):
            found.extend(fields.get("uris", [])[:1])
print(found[0] if found else "")
SOURCES
}
