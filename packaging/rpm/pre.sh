# abxd: create the system user and group before the files are installed.
getent group abxd >/dev/null || groupadd --system abxd
getent passwd abxd >/dev/null || useradd --system --gid abxd --home-dir /var/lib/abxd \
    --no-create-home --shell /sbin/nologin --comment "abxd web-archiving supervisor" abxd
exit 0
