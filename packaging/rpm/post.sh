# abxd: the state directory, and the unit known to systemd.
install -d -o abxd -g abxd -m 0750 /var/lib/abxd
# The library of binaries the crawl users share: set-group-ID, so that what one of them (or
# abxd-hook, who installs) makes there the others may update (abxd, under its unit, cannot set it).
install -d -o abxd-hook -g abxd-crawl -m 2775 /var/lib/abxd/lib
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
    [ "$1" -eq 1 ] && systemctl enable abxd.service >/dev/null 2>&1 || :
fi
exit 0
