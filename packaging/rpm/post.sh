# abxd: the state directory, and the unit known to systemd.
install -d -o abxd -g abxd -m 0750 /var/lib/abxd
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
    [ "$1" -eq 1 ] && systemctl enable abxd.service >/dev/null 2>&1 || :
fi
exit 0
