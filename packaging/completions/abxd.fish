# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_abxd_global_optspecs
    string join \n c/config= h/help V/version
end

function __fish_abxd_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_abxd_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_abxd_using_subcommand
    set -l cmd (__fish_abxd_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c abxd -n "__fish_abxd_needs_command" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_needs_command" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_needs_command" -s V -l version -d 'Print version'
complete -c abxd -n "__fish_abxd_needs_command" -f -a "serve" -d 'Run the supervisor in the foreground (the default)'
complete -c abxd -n "__fish_abxd_needs_command" -f -a "check-config" -d 'Run every check the daemon runs on the config (keys, paths, plugins, group, socket) without starting anything, and print the settings it would run with as TOML, every path resolved. With no config file at the default place (./supervisor.toml, else /etc/abxd/supervisor.toml), abxd runs on the built-in defaults and says so'
complete -c abxd -n "__fish_abxd_needs_command" -f -a "run" -d 'Archive URLs in one go: start the supervisor in the foreground, crawl, show progress, print a summary with the output paths and stop. A local file or directory is served on a loopback port for the crawl'
complete -c abxd -n "__fish_abxd_needs_command" -f -a "install" -d 'Provision the binaries the plugins declare (`required_binaries` in their config.json), as abx-dl\'s install step does: one `abxpkg … install NAME` run per binary, each a process of the table. Through the daemon when it runs; else abxd runs just for the install'
complete -c abxd -n "__fish_abxd_needs_command" -f -a "recover" -d 'Show what recovery would do now — rows to mark lost, orphan trees to kill (with their pids), results to run again or fail, snapshots and crawls to seal or requeue — without doing it. (abxd recovers on every start, before it claims any work.)'
complete -c abxd -n "__fish_abxd_needs_command" -f -a "store" -d 'Work on the store itself: check it, back it up, recover a damaged one, move it to PostgreSQL'
complete -c abxd -n "__fish_abxd_needs_command" -f -a "machine" -d 'The machines of a fleet sharing this config\'s PostgreSQL database'
complete -c abxd -n "__fish_abxd_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxd -n "__fish_abxd_using_subcommand serve" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand serve" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand check-config" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand check-config" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxd -n "__fish_abxd_using_subcommand check-config" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand run" -s d -l depth -d 'Follow discovered links this many levels deep' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -s p -l plugins -d 'Only these plugins (comma-separated), instead of every enabled one' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l extract -d 'More plugins to run (comma-separated), added to --plugins (ArchiveBox\'s --extract; its output types, such as text/html, are not matched: name the plugins)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -s t -l tag -d 'Tag each of its snapshots (comma-separated; repeat the flag for more): shown, and written to each snapshot\'s index.jsonl, whence ArchiveBox\'s import tags them' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l parser -d 'Read what it imports with this parser only ("netscape": the plugin parse_netscape_urls; "auto", the default: every parser that accepts imports)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l persona -d 'Archive as this ArchiveBox persona: its directory under the personas directory ([archivebox] data_dir\'s personas/, else the data dir\'s) gives the hooks its browser profile, cookies.txt and auth.json' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l url-allowlist -d 'Follow only discovered URLs that match one of these: a domain (that host and those below it; `*.example.com` only below it) or a regular expression (one per line, as ArchiveBox reads them, or repeat the flag)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l url-denylist -d 'Never follow discovered URLs that match one of these (as `--url-allowlist`)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l scope -d 'Follow discovered URLs only on a seed\'s host, or its registrable domain (and below), or anywhere' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l max-urls -d 'Start no more snapshots than this in the crawl (0: no limit)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l crawl-max-size -d 'Stop the crawl once it archived this much ("500M", "2G"; 0: no limit)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l crawl-timeout -d 'Stop the crawl this long after it first started ("90s", "2h", or seconds; 0: no limit)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l snapshot-max-size -d 'Stop a snapshot once it archived this much ("50M"; 0: no limit)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l crawl-max-concurrent-snapshots -d 'Run at most this many of its snapshots at once, in place of the limit [limits] sets for every crawl (within the host\'s [limits] max_snapshots, which `abxd run` raises to it)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l max-per-host -d 'Run at most this many of its snapshots of one site (host key: the registrable domain, or the address) at once, in place of [politeness] max_per_host' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l delay -d 'Start its snapshots of one site at least this far apart ("2s", "500ms", or seconds; 0: no wait), in place of [politeness] delay' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l priority -d 'Start this crawl before queued crawls of lower priority when a crawl slot frees (higher first; default 0, negative allowed), and weigh its share of the host\'s snapshot slots ([limits] max_snapshots) by it: 1 takes twice the slots of 0, -1 half' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l allow-network -d 'Let its hooks reach this network although it is not public: an address or ADDRESS/PREFIX ("10.1.0.0/16"; repeat the flag for more). The metadata address never' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l egress -d 'Hold its hooks to its egress policy (restricted), or let them reach whatever the host reaches (unrestricted)' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -l hooks-user -d 'Run the hooks as this user, instead of `hooks.user` (abxd as root only). Where it may not enter a directory on the way to what the run needs (a checkout in /root), the run sees that directory as only those entries, in a mount namespace of its own' -r
complete -c abxd -n "__fish_abxd_using_subcommand run" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand run" -l only-new -d 'Follow no discovered URL that another crawl archived already (seeds are crawled again: a feed, to find what is new in it)'
complete -c abxd -n "__fish_abxd_using_subcommand run" -l no-only-new -d 'Follow discovered URLs whether or not another crawl archived them, whatever [crawl] says (--overwrite and --update say the same, as in ArchiveBox)'
complete -c abxd -n "__fish_abxd_using_subcommand run" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand install" -l plugins -d 'Only these plugins (and those they require), instead of every enabled one' -r
complete -c abxd -n "__fish_abxd_using_subcommand install" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand install" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand recover" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand recover" -l dry-run -d 'Print the plan; change nothing. (Required: recovery itself runs when abxd starts.)'
complete -c abxd -n "__fish_abxd_using_subcommand recover" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxd -n "__fish_abxd_using_subcommand recover" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand store; and not __fish_seen_subcommand_from copy check recover backup help" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand store; and not __fish_seen_subcommand_from copy check recover backup help" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand store; and not __fish_seen_subcommand_from copy check recover backup help" -f -a "copy" -d 'Copy this config\'s SQLite database — every process row, crawl, snapshot, result, tag and installed binary, with their ids — into an empty PostgreSQL database, so that a host can move to a shared database without losing its history. abxd must be stopped; a database that holds any row is refused; nothing is written unless everything is. Then set paths.database to the URL and start abxd'
complete -c abxd -n "__fish_abxd_using_subcommand store; and not __fish_seen_subcommand_from copy check recover backup help" -f -a "check" -d 'Check this config\'s SQLite database whole (its header, then SQLite\'s integrity_check of every page, table and index) and list what is wrong; exits 1 if anything is. Reads only: it may run while abxd runs'
complete -c abxd -n "__fish_abxd_using_subcommand store; and not __fish_seen_subcommand_from copy check recover backup help" -f -a "recover" -d 'Copy every row that can still be read from this config\'s damaged SQLite database into a new database at PATH (its indexes and counts made anew), saying per table how many rows were read and how many were lost; the damaged file is left as it is. abxd must be stopped. Then put PATH in the old file\'s place (or set paths.database to it) and start abxd'
complete -c abxd -n "__fish_abxd_using_subcommand store; and not __fish_seen_subcommand_from copy check recover backup help" -f -a "backup" -d 'Write a consistent copy of this config\'s SQLite database to PATH (a new file), while abxd runs: everything committed when the copy began, and nothing after'
complete -c abxd -n "__fish_abxd_using_subcommand store; and not __fish_seen_subcommand_from copy check recover backup help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from copy" -l to -d 'The PostgreSQL database to copy into: a postgres:// URL (what it leaves out comes from PGHOST, PGPORT, PGUSER, PGDATABASE; a password from PGPASSWORD)' -r
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from copy" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from copy" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from check" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from recover" -l to -d 'The new database: a path where no file is' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from recover" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from recover" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from backup" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from backup" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from help" -f -a "copy" -d 'Copy this config\'s SQLite database — every process row, crawl, snapshot, result, tag and installed binary, with their ids — into an empty PostgreSQL database, so that a host can move to a shared database without losing its history. abxd must be stopped; a database that holds any row is refused; nothing is written unless everything is. Then set paths.database to the URL and start abxd'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from help" -f -a "check" -d 'Check this config\'s SQLite database whole (its header, then SQLite\'s integrity_check of every page, table and index) and list what is wrong; exits 1 if anything is. Reads only: it may run while abxd runs'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from help" -f -a "recover" -d 'Copy every row that can still be read from this config\'s damaged SQLite database into a new database at PATH (its indexes and counts made anew), saying per table how many rows were read and how many were lost; the damaged file is left as it is. abxd must be stopped. Then put PATH in the old file\'s place (or set paths.database to it) and start abxd'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from help" -f -a "backup" -d 'Write a consistent copy of this config\'s SQLite database to PATH (a new file), while abxd runs: everything committed when the copy began, and nothing after'
complete -c abxd -n "__fish_abxd_using_subcommand store; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxd -n "__fish_abxd_using_subcommand machine; and not __fish_seen_subcommand_from forget help" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand machine; and not __fish_seen_subcommand_from forget help" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand machine; and not __fish_seen_subcommand_from forget help" -f -a "forget" -d 'Forget a machine that will not come back (powered off, deleted): its work is recovered for the other hosts, as when it went silent; its process rows, shown as "unknown (machine silent since T)", are marked lost; its row leaves abxctl status. Only a machine silent for longer than the lease, never this one; no process is signalled. If it starts again, its daemon registers it again'
complete -c abxd -n "__fish_abxd_using_subcommand machine; and not __fish_seen_subcommand_from forget help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxd -n "__fish_abxd_using_subcommand machine; and __fish_seen_subcommand_from forget" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxd -n "__fish_abxd_using_subcommand machine; and __fish_seen_subcommand_from forget" -s h -l help -d 'Print help'
complete -c abxd -n "__fish_abxd_using_subcommand machine; and __fish_seen_subcommand_from help" -f -a "forget" -d 'Forget a machine that will not come back (powered off, deleted): its work is recovered for the other hosts, as when it went silent; its process rows, shown as "unknown (machine silent since T)", are marked lost; its row leaves abxctl status. Only a machine silent for longer than the lease, never this one; no process is signalled. If it starts again, its daemon registers it again'
complete -c abxd -n "__fish_abxd_using_subcommand machine; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxd -n "__fish_abxd_using_subcommand help; and not __fish_seen_subcommand_from serve check-config run install recover store machine help" -f -a "serve" -d 'Run the supervisor in the foreground (the default)'
complete -c abxd -n "__fish_abxd_using_subcommand help; and not __fish_seen_subcommand_from serve check-config run install recover store machine help" -f -a "check-config" -d 'Run every check the daemon runs on the config (keys, paths, plugins, group, socket) without starting anything, and print the settings it would run with as TOML, every path resolved. With no config file at the default place (./supervisor.toml, else /etc/abxd/supervisor.toml), abxd runs on the built-in defaults and says so'
complete -c abxd -n "__fish_abxd_using_subcommand help; and not __fish_seen_subcommand_from serve check-config run install recover store machine help" -f -a "run" -d 'Archive URLs in one go: start the supervisor in the foreground, crawl, show progress, print a summary with the output paths and stop. A local file or directory is served on a loopback port for the crawl'
complete -c abxd -n "__fish_abxd_using_subcommand help; and not __fish_seen_subcommand_from serve check-config run install recover store machine help" -f -a "install" -d 'Provision the binaries the plugins declare (`required_binaries` in their config.json), as abx-dl\'s install step does: one `abxpkg … install NAME` run per binary, each a process of the table. Through the daemon when it runs; else abxd runs just for the install'
complete -c abxd -n "__fish_abxd_using_subcommand help; and not __fish_seen_subcommand_from serve check-config run install recover store machine help" -f -a "recover" -d 'Show what recovery would do now — rows to mark lost, orphan trees to kill (with their pids), results to run again or fail, snapshots and crawls to seal or requeue — without doing it. (abxd recovers on every start, before it claims any work.)'
complete -c abxd -n "__fish_abxd_using_subcommand help; and not __fish_seen_subcommand_from serve check-config run install recover store machine help" -f -a "store" -d 'Work on the store itself: check it, back it up, recover a damaged one, move it to PostgreSQL'
complete -c abxd -n "__fish_abxd_using_subcommand help; and not __fish_seen_subcommand_from serve check-config run install recover store machine help" -f -a "machine" -d 'The machines of a fleet sharing this config\'s PostgreSQL database'
complete -c abxd -n "__fish_abxd_using_subcommand help; and not __fish_seen_subcommand_from serve check-config run install recover store machine help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxd -n "__fish_abxd_using_subcommand help; and __fish_seen_subcommand_from store" -f -a "copy" -d 'Copy this config\'s SQLite database — every process row, crawl, snapshot, result, tag and installed binary, with their ids — into an empty PostgreSQL database, so that a host can move to a shared database without losing its history. abxd must be stopped; a database that holds any row is refused; nothing is written unless everything is. Then set paths.database to the URL and start abxd'
complete -c abxd -n "__fish_abxd_using_subcommand help; and __fish_seen_subcommand_from store" -f -a "check" -d 'Check this config\'s SQLite database whole (its header, then SQLite\'s integrity_check of every page, table and index) and list what is wrong; exits 1 if anything is. Reads only: it may run while abxd runs'
complete -c abxd -n "__fish_abxd_using_subcommand help; and __fish_seen_subcommand_from store" -f -a "recover" -d 'Copy every row that can still be read from this config\'s damaged SQLite database into a new database at PATH (its indexes and counts made anew), saying per table how many rows were read and how many were lost; the damaged file is left as it is. abxd must be stopped. Then put PATH in the old file\'s place (or set paths.database to it) and start abxd'
complete -c abxd -n "__fish_abxd_using_subcommand help; and __fish_seen_subcommand_from store" -f -a "backup" -d 'Write a consistent copy of this config\'s SQLite database to PATH (a new file), while abxd runs: everything committed when the copy began, and nothing after'
complete -c abxd -n "__fish_abxd_using_subcommand help; and __fish_seen_subcommand_from machine" -f -a "forget" -d 'Forget a machine that will not come back (powered off, deleted): its work is recovered for the other hosts, as when it went silent; its process rows, shown as "unknown (machine silent since T)", are marked lost; its row leaves abxctl status. Only a machine silent for longer than the lease, never this one; no process is signalled. If it starts again, its daemon registers it again'
