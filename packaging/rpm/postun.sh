# abxd: restart on upgrade; on removal the state stays (remove /var/lib/abxd by hand to purge).
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || :
    [ "$1" -ge 1 ] && systemctl try-restart abxd.service >/dev/null 2>&1 || :
fi
exit 0
