//! Generated files — man pages and shell completions from the clap definitions — are committed,
//! and must be what the definitions generate now. Refresh them with
//! `ABXD_UPDATE_GENERATED=1 cargo nextest run --test generated`.

use abxd::cli::{AbxctlCli, AbxdCli};
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn man_page(command: &clap::Command, section: &str, parent: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .section(section)
        .manual("abxd")
        .source(format!("abxd {}", env!("CARGO_PKG_VERSION")))
        .render(&mut out)
        .unwrap();
    // The examples of `--help` are the page's EXAMPLES; EXIT STATUS, SIGNALS, FILES and SEE ALSO
    // go where man-pages(7) puts them: after the options, before VERSION.
    let page = String::from_utf8(out).unwrap();
    let examples = page.contains(".SH EXTRA\n");
    let page = page.replace(".SH EXTRA\n", ".SH EXAMPLES\n.nf\n");
    let page = without_missing_pages(&page);
    let name = command.get_name();
    let mut extra = if examples {
        ".fi\n".to_string()
    } else {
        String::new()
    };
    extra.push_str(&exit_status_section());
    extra.push_str(&sections(&PAGE_SECTIONS, parent.unwrap_or(name)));
    extra.push_str(&see_also(name, section, parent));
    let at = page.find(".SH VERSION").unwrap_or(page.len());
    let (head, tail) = page.split_at(at);
    format!("{head}{extra}{tail}").into_bytes()
}

/// The pages generated: each binary's, and one per visible subcommand of each.
fn page_names() -> Vec<String> {
    let mut names = Vec::new();
    for command in [AbxdCli::command(), AbxctlCli::command()] {
        let name = command.get_name().to_string();
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            names.push(format!("{name}-{}", sub.get_name()));
        }
        names.push(name);
    }
    names
}

/// `page` with each subcommand that has no page of its own (`abxctl help`, `abxctl schedule
/// add`) listed as the command it is, not as a page (`abxctl-help(1)`) that does not exist.
fn without_missing_pages(page: &str) -> String {
    let names = page_names();
    let mut out = String::new();
    let mut after_tp = false;
    for line in page.lines() {
        let named = line
            .strip_suffix(')')
            .and_then(|l| l.rsplit_once('('))
            .filter(|(_, section)| section.len() == 1)
            .map(|(name, _)| name.replace("\\-", "-"));
        match named {
            Some(name) if after_tp && !names.contains(&name) => {
                out.push_str(&format!("\\fB{}\\fR\n", roff(&name.replace('-', " "))));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
        after_tp = line == ".TP";
    }
    out
}

/// Text as roff: backslashes and hyphens escaped.
fn roff(text: &str) -> String {
    text.replace('\\', "\\e").replace('-', "\\-")
}

/// A section of a binary's page: (binary, heading, [(term, meaning)]).
type PageSection = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// SIGNALS and FILES of each binary's page.
const PAGE_SECTIONS: [PageSection; 4] = [
    (
        "abxd",
        "SIGNALS",
        &[
            ("SIGTERM, SIGINT", "Tear every child down (SIGTERM, then SIGKILL at each one's deadline), record every end, then exit 0. A second one sends SIGKILL at once. abxd run: SIGINT cancels its crawl (exit 130), SIGTERM leaves it for the daemon (exit 143)."),
            ("SIGHUP", "Read the config file again and apply what can change while running (limits, timeouts, plugins, log level); a file with an error is refused and the running config kept."),
        ],
    ),
    (
        "abxd",
        "FILES",
        &[
            ("./supervisor.toml, /etc/abxd/supervisor.toml", "The config (supervisor.toml(5)), the first that exists, unless --config or $ABXD_CONFIG names one; with neither, the built-in defaults."),
            ("DATA_DIR/abxd.sqlite3", "The process table and the work queue (paths.database)."),
            ("DATA_DIR/abxd.sock", "The control socket abxctl talks to (control.socket)."),
            ("DATA_DIR/abxd.lock", "Held while a daemon runs: one daemon per data dir."),
            ("DATA_DIR/crawls/", "Each crawl's snapshots, hook outputs and hook logs."),
            ("DATA_DIR/logs/", "The workers' logs; the daemon logs to its standard error (journalctl -u abxd under systemd, each line with its priority)."),
            ("/usr/share/doc/abxd/docs/", "The documentation these pages name as docs/…, installed by the package: json.md holds every --json shape."),
        ],
    ),
    (
        "abxctl",
        "SIGNALS",
        &[(
            "SIGINT",
            "add --wait, logs -f and ps --watch stop following and exit 130; what they follow goes on.",
        )],
    ),
    (
        "abxctl",
        "FILES",
        &[
            (
                "./supervisor.toml, /etc/abxd/supervisor.toml",
                "The config abxd runs with: abxctl reads its [paths] and [control] to find the database and the socket.",
            ),
            (
                "/usr/share/doc/abxd/docs/",
                "The documentation these pages name as docs/…, installed by the package: json.md holds every --json shape.",
            ),
        ],
    ),
];

/// The sections of `PAGE_SECTIONS` for binary `name`.
fn sections(table: &[PageSection], name: &str) -> String {
    let mut out = String::new();
    for (_, heading, entries) in table.iter().filter(|(binary, _, _)| *binary == name) {
        out.push_str(&format!(".SH {heading}\n"));
        for (term, meaning) in entries.iter() {
            out.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff(term), roff(meaning)));
        }
    }
    out
}

/// SEE ALSO: a subcommand's page points to its binary's; every page to the others.
fn see_also(name: &str, section: &str, parent: Option<&str>) -> String {
    let mut pages: Vec<String> = Vec::new();
    if let Some(parent) = parent {
        pages.push(format!("{parent}({section})"));
    }
    for page in [
        "abxd(8)",
        "abxctl(1)",
        "supervisor.toml(5)",
        "abxd-hooks(7)",
    ] {
        if !page.starts_with(&format!("{name}(")) && !pages.iter().any(|p| p == page) {
            pages.push(page.to_string());
        }
    }
    pages.push("systemctl(1)".into());
    pages.push("journalctl(1)".into());
    let list: Vec<String> = pages
        .iter()
        .map(|p| {
            let (page, rest) = p.split_once('(').unwrap();
            format!("\\fB{}\\fR({rest}", roff(page))
        })
        .collect();
    format!(".SH \"SEE ALSO\"\n{}\n", list.join(", "))
}

/// The EXIT STATUS section, from the one table both binaries exit by (`abxd::exit`).
fn exit_status_section() -> String {
    let mut section = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in abxd::exit::EXIT_STATUS_DOC {
        section.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", roff(meaning)));
    }
    section
}

/// The command as shell completion offers it: internal (hidden) commands left out.
fn without_hidden(command: &clap::Command) -> clap::Command {
    let mut visible = clap::Command::new(command.get_name().to_string())
        .version(env!("CARGO_PKG_VERSION"))
        .args(command.get_arguments().cloned());
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        visible = visible.subcommand(sub.clone());
    }
    visible
}

/// Every generated file: its path and its content.
fn generated() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for (command, section) in [(AbxdCli::command(), "8"), (AbxctlCli::command(), "1")] {
        let name = command.get_name().to_string();
        files.push((
            root().join(format!("man/{name}.{section}")),
            man_page(&command, section, None),
        ));
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            let page = format!("{name}-{}", sub.get_name());
            let sub = sub
                .clone()
                .name(page.clone())
                .bin_name(format!("{name} {}", sub.get_name()));
            files.push((
                root().join(format!("man/{page}.{section}")),
                man_page(&sub, section, Some(&name)),
            ));
        }
        for (shell, file) in [
            (Shell::Bash, format!("{name}.bash")),
            (Shell::Zsh, format!("_{name}")),
            (Shell::Fish, format!("{name}.fish")),
        ] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut without_hidden(&command), name.clone(), &mut out);
            files.push((root().join(format!("packaging/completions/{file}")), out));
        }
    }
    files
}

#[test]
fn man_pages_and_completions_are_fresh() {
    let update = std::env::var_os("ABXD_UPDATE_GENERATED").is_some();
    let mut stale = Vec::new();
    for (path, content) in generated() {
        if std::fs::read(&path).ok().as_deref() == Some(content.as_slice()) {
            continue;
        }
        if update {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, content).unwrap();
        } else {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files (run ABXD_UPDATE_GENERATED=1 cargo nextest run --test generated): {stale:#?}"
    );
}

/// No page names a page of abxd's that does not exist (`abxctl-help(1)` did), nor a file of the
/// documentation that the package does not install.
#[test]
fn every_page_a_page_names_exists_and_every_doc_it_names_is_installed() {
    let pages: Vec<PathBuf> = std::fs::read_dir(root().join("man"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|e| "1578".contains(e.to_str().unwrap()))
        })
        .collect();
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let mut missing = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap().replace("\\-", "-");
        let words = text.split(|c: char| c.is_whitespace() || c == ',');
        for word in words {
            let word = word
                .replace("\\fB", "")
                .replace("\\fI", "")
                .replace("\\fR", "");
            let Some((name, rest)) = word.split_once('(') else {
                continue;
            };
            let Some(section) = rest.chars().next().filter(char::is_ascii_digit) else {
                continue;
            };
            let ours =
                name.starts_with("abxd") || name.starts_with("abxctl") || name == "supervisor.toml";
            if ours && !root().join(format!("man/{name}.{section}")).exists() {
                missing.push(format!("{}: {name}({section})", page.display()));
            }
        }
        for named in text.match_indices("docs/").map(|(at, _)| &text[at..]) {
            let file: String = named
                .chars()
                .take_while(|c| c.is_alphanumeric() || "/._-".contains(*c))
                .collect();
            let file = file.trim_end_matches('.');
            if file.ends_with(".md") && !root().join(file).exists() {
                missing.push(format!("{}: {file}", page.display()));
            }
        }
    }
    assert!(missing.is_empty(), "named but missing: {missing:#?}");
    for packaging in [
        "\"docs/*.md\", \"usr/share/doc/abxd/docs/\"",
        "source = \"docs/*.md\", dest = \"/usr/share/doc/abxd/docs/\"",
    ] {
        assert!(
            cargo.contains(packaging),
            "the packages install the docs the pages name: {packaging}"
        );
    }
}

#[test]
fn the_config_page_documents_every_key_of_the_default_config() {
    let page = std::fs::read_to_string(root().join("man/supervisor.toml.5")).unwrap();
    let config = std::fs::read_to_string(root().join("supervisor.toml")).unwrap();
    for line in config.lines() {
        let line = line.trim_start_matches("# ").trim();
        if let Some((key, _)) = line.split_once(" = ") {
            if key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                assert!(page.contains(key), "supervisor.toml(5) lacks {key}");
            }
        }
    }
}

#[test]
fn completions_leave_internal_commands_out_and_offer_the_kinds() {
    let completions = root().join("packaging/completions");
    for file in ["abxd.bash", "_abxd", "abxd.fish"] {
        let text = std::fs::read_to_string(completions.join(file)).unwrap();
        assert!(
            !text.contains("worker"),
            "{file} offers the internal `worker`"
        );
    }
    for file in ["abxctl.bash", "_abxctl", "abxctl.fish"] {
        let text = std::fs::read_to_string(completions.join(file)).unwrap();
        assert!(
            !text.contains("spawn"),
            "{file} offers the debug-only `spawn`"
        );
        assert!(
            text.contains("snapshot_worker"),
            "{file} does not offer --kind's values"
        );
    }
}

#[test]
fn abxctl_help_and_every_page_tells_its_exit_statuses_and_where_to_look_next() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_abxctl"))
        .args(["help", "ps"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(
        help.contains("Examples:") && help.contains("--watch"),
        "{help}"
    );
    for entry in std::fs::read_dir(root().join("man")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("abxctl") || name.starts_with("abxd.") || name.starts_with("abxd-"))
            || name == "abxd-hooks.7"
        {
            continue;
        }
        let page = std::fs::read_to_string(&path).unwrap();
        for section in [".SH \"EXIT STATUS\"", ".SH \"SEE ALSO\""] {
            assert!(page.contains(section), "{name} lacks {section}");
        }
        for section in [".SH SIGNALS", ".SH FILES", ".SH EXAMPLES"] {
            assert!(page.contains(section), "{name} lacks {section}");
        }
    }
}
