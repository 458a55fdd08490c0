# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_abxctl_global_optspecs
    string join \n c/config= h/help V/version
end

function __fish_abxctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_abxctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_abxctl_using_subcommand
    set -l cmd (__fish_abxctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c abxctl -n "__fish_abxctl_needs_command" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_needs_command" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_needs_command" -s V -l version -d 'Print version'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "status" -d 'Whether the daemon is up: its pid, uptime and live processes by kind. Exits 3 when no daemon is listening'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "ps" -d 'The process table as a tree. Reads the database directly (read-only), so it works while the daemon is stopped or crashed'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "add" -d 'Enqueue a crawl of URL… (also while the daemon is down: it runs when the daemon starts)'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "schedule" -d 'Crawls made again on a period or at the minutes of a cron expression'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "follow" -d 'Follow a crawl until it is sealed: a line for each result that starts or ends, then its report. Ctrl-C stops the following, not the crawl'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "crawls" -d 'List crawls with their status and counts'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "hosts" -d 'Sites (host keys: a registrable domain, or an address) with snapshots running or queued, or cooling down after a 429 or 503: when each may start another, and why it waits ([politeness] in supervisor.toml(5))'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "find" -d 'Every snapshot of a URL, in any crawl: its crawl, its status, when it was archived and where its files are'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "plugins" -d 'The plugins of the plugins dirs: whether each runs, what it requires, its hooks by phase in run order, the hooks of other events (listed, not crawled) and files that cannot run'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "binaries" -d 'The plugins\' binaries as this host resolved them: path, version and provider — or why not, and the variable that names another one (`NODE_BINARY`, …). Reads the database'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "show" -d 'A crawl\'s snapshots and the result of every hook: status, time, output size'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "logs" -d 'A process\'s stdout and stderr: a row\'s (see `abxctl ps`), or a result\'s latest run (see `abxctl show`)'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "kill" -d 'Tear down a live process of the table and everything below it: the first signal now, SIGKILL at the deadline. Prints what happened to each process. Refuses anything that is not a live process of abxd\'s table'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "cancel" -d 'Stop a crawl for good: seal it as cancelled, its open results cancelled, and tear its processes down (with abxd not running: in the database)'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "pause" -d 'Start no more hooks of a crawl and claim none of its snapshots until it is resumed; hooks already running go on (with abxd not running: in the database)'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "resume" -d 'Let a paused crawl go on'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "web-url" -d 'Print the link to abxd\'s web view (`[web] listen`), with its token: open it in a browser. The token is read from the data dir, so this needs the right to read it'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "prune" -d 'Delete the process rows of finished work (final rows of sealed crawls, or of none) that ended long enough ago, and give the space back. abxd does it by itself after each crawl it seals, by `[retention] keep_days`; crawls, snapshots and results are never pruned'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "retry" -d 'Run a sealed crawl\'s failed and cancelled results again (their interruption count reset), through abxd or, with it not running, in the database for its next start'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "export" -d 'Export crawls into an ArchiveBox 0.9 collection, as ArchiveBox\'s portable snapshot directories (archive/users/USER/snapshots/DATE/DOMAIN/ID/), then run ArchiveBox\'s own import there (`archivebox update --rescan`, as the collection\'s owner): every crawl, or those named; one not sealed yet is exported once it is. A crawl exported before is copied again only where a snapshot is missing'
complete -c abxctl -n "__fish_abxctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxctl -n "__fish_abxctl_using_subcommand status" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand status" -l json -d 'Print the daemon\'s answer as JSON'
complete -c abxctl -n "__fish_abxctl_using_subcommand status" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -l kind -d 'Only processes of this kind' -r -f -a "orchestrator\t''
crawl_worker\t''
snapshot_worker\t''
hook\t''
child\t''"
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -l crawl -d 'Only processes of this crawl' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -l machine -d 'Only processes of this machine (its hostname or machine id), where several hosts share one database' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -l since -d 'Only processes started (or, never started, created) within this long ago: 10m, 2h' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -s a -l all -d 'Show ended processes too, not only live ones'
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -l json -d 'Machine-readable output: {"version":1,"now_ms":…,"processes":[…]}'
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -s w -l wide -d 'Whole command lines. Without it, lines are cut to the terminal\'s width when the output is a terminal (never when it is piped)'
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -l watch -d 'Redraw every second, as watch(1) does, until interrupted; the database is read again only when it changed'
complete -c abxctl -n "__fish_abxctl_using_subcommand ps" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l from -d 'Import FILE instead of URLs: browser bookmarks (Netscape HTML), an RSS or Atom feed, JSONL or plain text, parsed by the plugins that accept imports (parse_*_urls), each URL found a seed of the crawl (through its rules). Waits for the parse, and fails naming the file when nothing in it parsed' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -s d -l depth -d 'Follow discovered links this many levels deep' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -s p -l plugins -d 'Only these plugins (comma-separated), instead of every enabled one' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l extract -d 'More plugins to run (comma-separated), added to --plugins (ArchiveBox\'s --extract; its output types, such as text/html, are not matched: name the plugins)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -s t -l tag -d 'Tag each of its snapshots (comma-separated; repeat the flag for more): shown, and written to each snapshot\'s index.jsonl, whence ArchiveBox\'s import tags them' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l parser -d 'Read what it imports with this parser only ("netscape": the plugin parse_netscape_urls; "auto", the default: every parser that accepts imports)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l persona -d 'Archive as this ArchiveBox persona: its directory under the personas directory ([archivebox] data_dir\'s personas/, else the data dir\'s) gives the hooks its browser profile, cookies.txt and auth.json' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l url-allowlist -d 'Follow only discovered URLs that match one of these: a domain (that host and those below it; `*.example.com` only below it) or a regular expression (one per line, as ArchiveBox reads them, or repeat the flag)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l url-denylist -d 'Never follow discovered URLs that match one of these (as `--url-allowlist`)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l scope -d 'Follow discovered URLs only on a seed\'s host, or its registrable domain (and below), or anywhere' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l max-urls -d 'Start no more snapshots than this in the crawl (0: no limit)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l crawl-max-size -d 'Stop the crawl once it archived this much ("500M", "2G"; 0: no limit)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l crawl-timeout -d 'Stop the crawl this long after it first started ("90s", "2h", or seconds; 0: no limit)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l snapshot-max-size -d 'Stop a snapshot once it archived this much ("50M"; 0: no limit)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l crawl-max-concurrent-snapshots -d 'Run at most this many of its snapshots at once, in place of the limit [limits] sets for every crawl (within the host\'s [limits] max_snapshots, which `abxd run` raises to it)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l max-per-host -d 'Run at most this many of its snapshots of one site (host key: the registrable domain, or the address) at once, in place of [politeness] max_per_host' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l delay -d 'Start its snapshots of one site at least this far apart ("2s", "500ms", or seconds; 0: no wait), in place of [politeness] delay' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l priority -d 'Start this crawl before queued crawls of lower priority when a crawl slot frees (higher first; default 0, negative allowed), and weigh its share of the host\'s snapshot slots ([limits] max_snapshots) by it: 1 takes twice the slots of 0, -1 half' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l allow-network -d 'Let its hooks reach this network although it is not public: an address or ADDRESS/PREFIX ("10.1.0.0/16"; repeat the flag for more). The metadata address never' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l egress -d 'Hold its hooks to its egress policy (restricted), or let them reach whatever the host reaches (unrestricted)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l only-new -d 'Follow no discovered URL that another crawl archived already (seeds are crawled again: a feed, to find what is new in it)'
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l no-only-new -d 'Follow discovered URLs whether or not another crawl archived them, whatever [crawl] says (--overwrite and --update say the same, as in ArchiveBox)'
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l wait -d 'Follow the crawl until it is sealed and print its results (what `archivebox add` does without --bg)'
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l bg -d 'Queue the crawl and return at once (the default; ArchiveBox\'s --bg)'
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l index-only -d 'Record the crawl without running it: it is added paused, and runs once resumed (`abxctl resume CRAWL`)'
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -l json -d 'Print the documented JSON shape (docs/json.md) instead: the crawl\'s id, and with --wait, no progress but the crawl as `show --json` prints it'
complete -c abxctl -n "__fish_abxctl_using_subcommand add" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove pause resume help" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove pause resume help" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove pause resume help" -f -a "add" -d 'Crawl URL… again every DURATION, or at the minutes of a cron expression (read in the time zone it is added in — $TZ, else the host\'s — whichever host fires it): each occurrence is a crawl of its own, linked to the schedule. An occurrence whose previous crawl still runs is skipped, saying so; one that came while abxd was down fires once when it starts (not once per occurrence missed)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove pause resume help" -f -a "list" -d 'List the schedules: when each fires next, and what its last occurrence did'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove pause resume help" -f -a "remove" -d 'Remove a schedule (its crawls stay)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove pause resume help" -f -a "pause" -d 'Pause a schedule: it makes no crawl until it is resumed (its crawls already made go on)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove pause resume help" -f -a "resume" -d 'Let a paused schedule fire again, from its next occurrence after now'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and not __fish_seen_subcommand_from add list remove pause resume help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l from -d 'Import FILE at each occurrence instead (browser bookmarks, a feed, JSONL, text, as `add --from`): read anew each time by the parser hooks, as the hooks\' user — who must be able to read it' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l every -d 'How often: a period ("1d", "6h", "30m"; at least a second) counted from now — or, as ArchiveBox\'s --every, "daily", "weekly", "monthly" (and "minute", "hour", "year") or a cron expression, as --cron' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l cron -d 'When: a crontab(5) expression ("0 3 * * *": every day at 03:00; "@hourly")' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -s d -l depth -d 'Follow discovered links this many levels deep' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -s p -l plugins -d 'Only these plugins (comma-separated), instead of every enabled one' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l extract -d 'More plugins to run (comma-separated), added to --plugins (ArchiveBox\'s --extract; its output types, such as text/html, are not matched: name the plugins)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -s t -l tag -d 'Tag each of its snapshots (comma-separated; repeat the flag for more): shown, and written to each snapshot\'s index.jsonl, whence ArchiveBox\'s import tags them' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l parser -d 'Read what it imports with this parser only ("netscape": the plugin parse_netscape_urls; "auto", the default: every parser that accepts imports)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l persona -d 'Archive as this ArchiveBox persona: its directory under the personas directory ([archivebox] data_dir\'s personas/, else the data dir\'s) gives the hooks its browser profile, cookies.txt and auth.json' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l url-allowlist -d 'Follow only discovered URLs that match one of these: a domain (that host and those below it; `*.example.com` only below it) or a regular expression (one per line, as ArchiveBox reads them, or repeat the flag)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l url-denylist -d 'Never follow discovered URLs that match one of these (as `--url-allowlist`)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l scope -d 'Follow discovered URLs only on a seed\'s host, or its registrable domain (and below), or anywhere' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l max-urls -d 'Start no more snapshots than this in the crawl (0: no limit)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l crawl-max-size -d 'Stop the crawl once it archived this much ("500M", "2G"; 0: no limit)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l crawl-timeout -d 'Stop the crawl this long after it first started ("90s", "2h", or seconds; 0: no limit)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l snapshot-max-size -d 'Stop a snapshot once it archived this much ("50M"; 0: no limit)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l crawl-max-concurrent-snapshots -d 'Run at most this many of its snapshots at once, in place of the limit [limits] sets for every crawl (within the host\'s [limits] max_snapshots, which `abxd run` raises to it)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l max-per-host -d 'Run at most this many of its snapshots of one site (host key: the registrable domain, or the address) at once, in place of [politeness] max_per_host' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l delay -d 'Start its snapshots of one site at least this far apart ("2s", "500ms", or seconds; 0: no wait), in place of [politeness] delay' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l priority -d 'Start this crawl before queued crawls of lower priority when a crawl slot frees (higher first; default 0, negative allowed), and weigh its share of the host\'s snapshot slots ([limits] max_snapshots) by it: 1 takes twice the slots of 0, -1 half' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l allow-network -d 'Let its hooks reach this network although it is not public: an address or ADDRESS/PREFIX ("10.1.0.0/16"; repeat the flag for more). The metadata address never' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l egress -d 'Hold its hooks to its egress policy (restricted), or let them reach whatever the host reaches (unrestricted)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l only-new -d 'Follow no discovered URL that another crawl archived already (seeds are crawled again: a feed, to find what is new in it)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l no-only-new -d 'Follow discovered URLs whether or not another crawl archived them, whatever [crawl] says (--overwrite and --update say the same, as in ArchiveBox)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from list" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from list" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from remove" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from remove" -l json
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from remove" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from pause" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from pause" -l json
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from pause" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from resume" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from resume" -l json
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from resume" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "add" -d 'Crawl URL… again every DURATION, or at the minutes of a cron expression (read in the time zone it is added in — $TZ, else the host\'s — whichever host fires it): each occurrence is a crawl of its own, linked to the schedule. An occurrence whose previous crawl still runs is skipped, saying so; one that came while abxd was down fires once when it starts (not once per occurrence missed)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the schedules: when each fires next, and what its last occurrence did'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "remove" -d 'Remove a schedule (its crawls stay)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "pause" -d 'Pause a schedule: it makes no crawl until it is resumed (its crawls already made go on)'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "resume" -d 'Let a paused schedule fire again, from its next occurrence after now'
complete -c abxctl -n "__fish_abxctl_using_subcommand schedule; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxctl -n "__fish_abxctl_using_subcommand follow" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand follow" -l json -d 'A JSON document a line instead: each result that starts or ends, then the seal'
complete -c abxctl -n "__fish_abxctl_using_subcommand follow" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand crawls" -l status -d 'Only the crawls that are queued, started, paused or sealed — or, sealed, that finished, were cancelled or failed' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand crawls" -l limit -d 'Only the newest N of them' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand crawls" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand crawls" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand crawls" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand hosts" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand hosts" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand hosts" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand find" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand find" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand find" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand plugins" -l env -d 'Show instead what the hooks of PLUGIN get from its config — each variable, its value and where it came from: abxd\'s environment, supervisor.toml, the collection\'s ArchiveBox.conf, or the plugin\'s default (as the daemon resolves them when it runs)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand plugins" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand plugins" -l json -d 'Machine-readable output'
complete -c abxctl -n "__fish_abxctl_using_subcommand plugins" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand binaries" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand binaries" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand binaries" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand show" -l page -d 'Page N of its snapshots (from 1); a crawl with more than a page is summed up first' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand show" -l limit -d 'Snapshots on a page' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand show" -l status -d 'Only its snapshots that are queued, started or sealed — or that have a failed result' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand show" -l after -d 'The page after snapshot ID (what `--json` gives as `page.next_after`)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand show" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand show" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand show" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand logs" -l result -d 'The latest run of this result instead (the ids `abxctl show` prints)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand logs" -s n -l lines -d 'Only the last N lines of each stream (then, with -f, what follows)' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand logs" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand logs" -l stdout -d 'Only standard output'
complete -c abxctl -n "__fish_abxctl_using_subcommand logs" -l stderr -d 'Only standard error'
complete -c abxctl -n "__fish_abxctl_using_subcommand logs" -s f -l follow -d 'Keep printing what is appended until the process has ended, each line labelled with its stream when both are shown'
complete -c abxctl -n "__fish_abxctl_using_subcommand logs" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand kill" -l pid -d 'Name the process by its pid instead of its row id' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand kill" -s s -l signal -d 'The first signal: a name (TERM, SIGINT, KILL, …) or a number' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand kill" -l grace -d 'Time between the first signal and SIGKILL [default: timeouts.kill_grace]' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand kill" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand kill" -l no-wait -d 'Return once the teardown has begun, without waiting for it to finish'
complete -c abxctl -n "__fish_abxctl_using_subcommand kill" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand kill" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand cancel" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand cancel" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand cancel" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand pause" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand pause" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand pause" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand resume" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand resume" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand resume" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand web-url" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand web-url" -l token -d 'Print only the token (for `Authorization: Bearer`, e.g. Prometheus\' `authorization.credentials_file`)'
complete -c abxctl -n "__fish_abxctl_using_subcommand web-url" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand prune" -l older-than -d 'How long ago a row must have ended (e.g. 7d, 12h) [default: retention.keep_days]' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand prune" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand prune" -l dry-run -d 'Count the rows; delete nothing'
complete -c abxctl -n "__fish_abxctl_using_subcommand prune" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand prune" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand retry" -l hook -d 'Only the results of this hook (its file name) — and a session of the crawl that failed, such as Chrome\'s launch, without which it would fail again' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand retry" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand retry" -l failed -d 'Failed and cancelled results (the default)'
complete -c abxctl -n "__fish_abxctl_using_subcommand retry" -l all -d 'Every result that did not succeed: also noresults and skipped'
complete -c abxctl -n "__fish_abxctl_using_subcommand retry" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand retry" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand export" -l archivebox -d 'The ArchiveBox collection\'s data dir (where `archivebox init` ran)' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand export" -l user -d 'The ArchiveBox user the snapshots are filed under [default: archivebox.user]' -r
complete -c abxctl -n "__fish_abxctl_using_subcommand export" -s c -l config -d 'The config file [default: $ABXD_CONFIG, else ./supervisor.toml, else /etc/abxd/supervisor.toml]' -r -F
complete -c abxctl -n "__fish_abxctl_using_subcommand export" -l wait -d 'Wait until ArchiveBox imported them (or the export failed); exits 1 if one failed'
complete -c abxctl -n "__fish_abxctl_using_subcommand export" -l json -d 'Print the documented JSON shape (docs/json.md) instead'
complete -c abxctl -n "__fish_abxctl_using_subcommand export" -s h -l help -d 'Print help'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "status" -d 'Whether the daemon is up: its pid, uptime and live processes by kind. Exits 3 when no daemon is listening'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "ps" -d 'The process table as a tree. Reads the database directly (read-only), so it works while the daemon is stopped or crashed'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "add" -d 'Enqueue a crawl of URL… (also while the daemon is down: it runs when the daemon starts)'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "schedule" -d 'Crawls made again on a period or at the minutes of a cron expression'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "follow" -d 'Follow a crawl until it is sealed: a line for each result that starts or ends, then its report. Ctrl-C stops the following, not the crawl'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "crawls" -d 'List crawls with their status and counts'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "hosts" -d 'Sites (host keys: a registrable domain, or an address) with snapshots running or queued, or cooling down after a 429 or 503: when each may start another, and why it waits ([politeness] in supervisor.toml(5))'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "find" -d 'Every snapshot of a URL, in any crawl: its crawl, its status, when it was archived and where its files are'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "plugins" -d 'The plugins of the plugins dirs: whether each runs, what it requires, its hooks by phase in run order, the hooks of other events (listed, not crawled) and files that cannot run'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "binaries" -d 'The plugins\' binaries as this host resolved them: path, version and provider — or why not, and the variable that names another one (`NODE_BINARY`, …). Reads the database'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "show" -d 'A crawl\'s snapshots and the result of every hook: status, time, output size'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "logs" -d 'A process\'s stdout and stderr: a row\'s (see `abxctl ps`), or a result\'s latest run (see `abxctl show`)'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "kill" -d 'Tear down a live process of the table and everything below it: the first signal now, SIGKILL at the deadline. Prints what happened to each process. Refuses anything that is not a live process of abxd\'s table'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "cancel" -d 'Stop a crawl for good: seal it as cancelled, its open results cancelled, and tear its processes down (with abxd not running: in the database)'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "pause" -d 'Start no more hooks of a crawl and claim none of its snapshots until it is resumed; hooks already running go on (with abxd not running: in the database)'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "resume" -d 'Let a paused crawl go on'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "web-url" -d 'Print the link to abxd\'s web view (`[web] listen`), with its token: open it in a browser. The token is read from the data dir, so this needs the right to read it'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "prune" -d 'Delete the process rows of finished work (final rows of sealed crawls, or of none) that ended long enough ago, and give the space back. abxd does it by itself after each crawl it seals, by `[retention] keep_days`; crawls, snapshots and results are never pruned'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "retry" -d 'Run a sealed crawl\'s failed and cancelled results again (their interruption count reset), through abxd or, with it not running, in the database for its next start'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "export" -d 'Export crawls into an ArchiveBox 0.9 collection, as ArchiveBox\'s portable snapshot directories (archive/users/USER/snapshots/DATE/DOMAIN/ID/), then run ArchiveBox\'s own import there (`archivebox update --rescan`, as the collection\'s owner): every crawl, or those named; one not sealed yet is exported once it is. A crawl exported before is copied again only where a snapshot is missing'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and not __fish_seen_subcommand_from status ps add schedule follow crawls hosts find plugins binaries show logs kill cancel pause resume web-url prune retry export help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "add" -d 'Crawl URL… again every DURATION, or at the minutes of a cron expression (read in the time zone it is added in — $TZ, else the host\'s — whichever host fires it): each occurrence is a crawl of its own, linked to the schedule. An occurrence whose previous crawl still runs is skipped, saying so; one that came while abxd was down fires once when it starts (not once per occurrence missed)'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "list" -d 'List the schedules: when each fires next, and what its last occurrence did'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "remove" -d 'Remove a schedule (its crawls stay)'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "pause" -d 'Pause a schedule: it makes no crawl until it is resumed (its crawls already made go on)'
complete -c abxctl -n "__fish_abxctl_using_subcommand help; and __fish_seen_subcommand_from schedule" -f -a "resume" -d 'Let a paused schedule fire again, from its next occurrence after now'
