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

fn man_page(command: &clap::Command, section: &str) -> Vec<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(command.clone())
        .section(section)
        .manual("abxd")
        .source(format!("abxd {}", env!("CARGO_PKG_VERSION")))
        .render(&mut out)
        .unwrap();
    // EXIT STATUS goes where man-pages(7) puts it: after the options, before VERSION.
    let page = String::from_utf8(out).unwrap();
    let at = page.find(".SH VERSION").unwrap_or(page.len());
    let (head, tail) = page.split_at(at);
    format!("{head}{}{tail}", exit_status_section()).into_bytes()
}

/// The EXIT STATUS section, from the one table both binaries exit by (`abxd::exit`).
fn exit_status_section() -> String {
    let roff = |text: &str| text.replace('\\', "\\e").replace('-', "\\-");
    let mut section = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in abxd::exit::EXIT_STATUS_DOC {
        section.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", roff(meaning)));
    }
    section
}

/// Every generated file: its path and its content.
fn generated() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for (command, section) in [(AbxdCli::command(), "8"), (AbxctlCli::command(), "1")] {
        let name = command.get_name().to_string();
        files.push((
            root().join(format!("man/{name}.{section}")),
            man_page(&command, section),
        ));
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            let page = format!("{name}-{}", sub.get_name());
            let sub = sub
                .clone()
                .name(page.clone())
                .bin_name(format!("{name} {}", sub.get_name()));
            files.push((
                root().join(format!("man/{page}.{section}")),
                man_page(&sub, section),
            ));
        }
        for (shell, file) in [
            (Shell::Bash, format!("{name}.bash")),
            (Shell::Zsh, format!("_{name}")),
            (Shell::Fish, format!("{name}.fish")),
        ] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command.clone(), name.clone(), &mut out);
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
