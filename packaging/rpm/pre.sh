# abxd: create the system users and groups before the files are installed: abxd for the
# daemon, abxd-hook for its hooks (abxd in its group, to read and clear what hooks write).
getent group abxd >/dev/null || groupadd --system abxd
getent passwd abxd >/dev/null || useradd --system --gid abxd --home-dir /var/lib/abxd \
    --no-create-home --shell /sbin/nologin --comment "abxd web-archiving supervisor" abxd
getent group abxd-hook >/dev/null || groupadd --system abxd-hook
getent passwd abxd-hook >/dev/null || useradd --system --gid abxd-hook \
    --home-dir /var/lib/abxd/home/abxd-hook --no-create-home --shell /sbin/nologin \
    --comment "abxd's hooks" abxd-hook
usermod --append --groups abxd-hook abxd
exit 0
