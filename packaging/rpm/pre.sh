# abxd: create the system users and groups before the files are installed: abxd for the
# daemon; abxd-crawl1 … abxd-crawl8 (group abxd-crawl's members) for each crawl's hooks, and
# abxd-hook to install the binaries they read (abxd in their groups, to read and clear what
# hooks write).
getent group abxd >/dev/null || groupadd --system abxd
getent passwd abxd >/dev/null || useradd --system --gid abxd --home-dir /var/lib/abxd \
    --no-create-home --shell /sbin/nologin --comment "abxd web-archiving supervisor" abxd
getent group abxd-hook >/dev/null || groupadd --system abxd-hook
getent passwd abxd-hook >/dev/null || useradd --system --gid abxd-hook \
    --home-dir /var/lib/abxd/home/abxd-hook --no-create-home --shell /sbin/nologin \
    --comment "abxd's hooks" abxd-hook
usermod --append --groups abxd-hook abxd
getent group abxd-crawl >/dev/null || groupadd --system abxd-crawl
for n in 1 2 3 4 5 6 7 8; do
    getent group "abxd-crawl$n" >/dev/null || groupadd --system "abxd-crawl$n"
    getent passwd "abxd-crawl$n" >/dev/null || useradd --system --gid "abxd-crawl$n" \
        --home-dir "/var/lib/abxd/home/abxd-crawl$n" --no-create-home --shell /sbin/nologin \
        --comment "abxd's crawl hooks" "abxd-crawl$n"
    usermod --append --groups abxd-crawl "abxd-crawl$n"
    usermod --append --groups "abxd-crawl$n" abxd
done
exit 0
