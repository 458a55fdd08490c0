# abxd: stop and disable the service when the package is removed (not on upgrade).
if [ "$1" -eq 0 ] && [ -d /run/systemd/system ]; then
    systemctl --no-reload disable --now abxd.service >/dev/null 2>&1 || :
fi
exit 0
