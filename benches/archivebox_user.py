"""What the benchmarks that run ArchiveBox 0.9.73 share (benches/library_archivebox.py,
benches/export_batch.py): they run as root, ArchiveBox where .ci/run installs it (or at
$ABXD_ARCHIVEBOX), as the unprivileged user `abxbench` (made when missing) — ArchiveBox must not
run as root — in a new collection of that user's.
"""

import os
import pwd
import shutil
import subprocess
import sys

USER = "abxbench"
ARCHIVEBOX = os.environ.get(
    "ABXD_ARCHIVEBOX", "/var/cache/abxd-ci/archivebox-0.9.73/bin/archivebox")


def prepare(script):
    """Exits, naming `script`, unless this is root and ArchiveBox is there; makes the user."""
    if os.geteuid() != 0:
        sys.exit(f"{script}: run as root (ArchiveBox runs as the user {USER})")
    if not os.access(ARCHIVEBOX, os.X_OK):
        sys.exit(f"{script}: no ArchiveBox at {ARCHIVEBOX} (.ci/run installs it)")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--create-home", "--home-dir", f"/var/lib/{USER}",
                        "--shell", "/usr/sbin/nologin", USER], check=True)


def as_user(argv, home):
    """`argv` run as the user, its HOME `home` (a collection's directory)."""
    path = f"{os.path.dirname(ARCHIVEBOX)}:/usr/local/bin:/usr/bin:/bin"
    return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", "env",
            f"HOME={home}", f"PATH={path}", "LANG=C.UTF-8", *argv]


def new_collection(home, settings=(), log=subprocess.DEVNULL):
    """`archivebox init` in the new directory `home`, its search backend ripgrep (sonic cannot
    be installed here), then `archivebox config --set` of each of `settings`."""
    os.makedirs(home)
    shutil.chown(home, USER, USER)
    for argv in (["init"], *(["config", "--set", s] for s in
                             ("SEARCH_BACKEND_ENGINE=ripgrep",
                              "SEARCH_BACKEND_SONIC_ENABLED=False", *settings))):
        subprocess.run(as_user([ARCHIVEBOX, *argv], home), cwd=home, stdout=log,
                       stderr=subprocess.STDOUT, check=True)
