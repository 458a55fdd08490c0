//! The shape of the source tree, checked: the module graph has no cycle and its layers point one
//! way (see `src/lib.rs`), a row's end is written from one room, no file outgrows a room. These
//! read `src/` as text — the rules are about the code as a newcomer reads it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module, bottom layer first. A module may use modules of its own layer or
/// below, never above; together with "no cycle", that keeps the drawing of the imports a stack.
const LAYERS: &[&[&str]] = &[
    // Foundation: facts about the machine and the config, no abxd state.
    &[
        "domain",
        "config",
        "signal",
        "procstat",
        "identity",
        "proctree",
        "marker",
        "cgroup",
        "logging",
        "logs",
        "lock",
        "notify",
        "serve",
        "printable",
        "trust",
        "egress",
        "url_rule",
        "hook_user",
        "passage",
        "uuid7",
        "portable",
        "own_exe",
        "memory",
        "disk",
        "admission",
    ],
    // The store: the process table and the work queue.
    &["store"],
    // A row's liveness and end; the one waiter.
    &["liveness", "reaper"],
    // Starting and stopping processes; recovering work.
    &["spawn", "teardown", "recovery"],
    // The loop every supervising process runs.
    &["supervisor"],
    // What runs under it: plugins, hooks, worker pools.
    &["plugins", "hooks", "pool"],
    // The processes: workers, the control socket, the daemon.
    &["worker", "control", "export", "verbs"],
    &["daemon"],
    // What users touch: the command lines and what they print.
    &[
        "exit", "render", "cli", "ctl", "run", "install", "web", "commands",
    ],
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`None` for lib.rs and the binaries).
fn module_of(path: &Path) -> Option<String> {
    let relative = path.strip_prefix(src()).unwrap();
    let first = relative
        .components()
        .next()?
        .as_os_str()
        .to_str()?
        .to_string();
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(name) => Some(name.to_string()),
        None if first == "bin" => None,
        None => Some(first),
    }
}

/// The text of a file without what is compiled only for its tests: each item under
/// `#[cfg(test)]` (a `mod … { }` block, a function, a `use`) is cut out, whatever follows it is
/// kept. Lines stay where they were (a cut item leaves its newlines), so line numbers hold.
fn without_tests(text: &str) -> String {
    cut_tests(text, true)
}

/// [`without_tests`], the lines of cut items kept as empty lines (`keep_lines`) or dropped.
fn cut_tests(text: &str, keep_lines: bool) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let item = &rest[at..];
        let end = item_end(item);
        if keep_lines {
            kept.extend(item[..end].chars().filter(|&c| c == '\n'));
        }
        rest = &item[end..];
    }
    kept.push_str(rest);
    kept
}

/// Where the item that `text` starts with ends: after its `;` or its outermost `{ }`, whichever
/// comes first; braces inside strings, chars and comments do not count.
fn item_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i += text[i..].find('\n').unwrap_or(text.len() - i);
                continue;
            }
            b'r' if matches!(bytes.get(i + 1), Some(b'"' | b'#'))
                && !bytes[..i]
                    .last()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') =>
            {
                let hashes = bytes[i + 1..].iter().take_while(|&&b| b == b'#').count();
                let close = format!("\"{}", "#".repeat(hashes));
                let open = i + 1 + hashes + 1;
                i = open
                    + text[open..]
                        .find(&close)
                        .map_or(text.len() - open, |n| n + close.len());
                continue;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i += text[i + 2..].find('\'').map_or(0, |n| n + 2);
            }
            b';' if depth == 0 => return i + 1,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    text.len()
}

/// Top-level module → the top-level modules its code names through `crate::`.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(&file) else {
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        let uses = graph.entry(module.clone()).or_default();
        for (at, _) in text.match_indices("crate::") {
            let name: String = text[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != module {
                uses.insert(name);
            }
        }
    }
    graph
}

/// A cycle of the graph, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = module_graph();
    assert!(
        graph.len() > 10,
        "the scan found too few modules: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle: {}", cycle.join(" -> "));
    }
}

/// Within each module that is a folder: the room (file or folder right below it) a file belongs
/// to → the rooms of that module its code names, through `crate::module::room` or `super::room`.
fn room_graphs() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src()).unwrap();
        let parts: Vec<String> = relative
            .components()
            .map(|c| {
                c.as_os_str()
                    .to_string_lossy()
                    .trim_end_matches(".rs")
                    .to_string()
            })
            .collect();
        if parts.len() < 2 || parts[0] == "bin" || parts[1] == "mod" || parts[1] == "tests" {
            continue;
        }
        let (module, room) = (&parts[0], &parts[1]);
        // `super::` names a room of the module from its room's own file (`m/room.rs` or
        // `m/room/mod.rs`); deeper down it names something inside the room.
        let super_is_module = parts.len() == 2 || (parts.len() == 3 && parts[2] == "mod");
        let text = std::fs::read_to_string(&file).unwrap();
        let text = without_tests(&text);
        let mut prefixes = vec![format!("crate::{module}::")];
        if super_is_module {
            prefixes.push("super::".to_string());
        }
        let graph = graphs.entry(module.clone()).or_default();
        let uses = graph.entry(room.clone()).or_default();
        for prefix in &prefixes {
            for (at, _) in text.match_indices(prefix.as_str()) {
                if text[..at].ends_with("::") || text[..at].ends_with(char::is_alphanumeric) {
                    continue;
                }
                let name: String = text[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let is_room = src().join(module).join(format!("{name}.rs")).exists()
                    || src().join(module).join(&name).is_dir();
                if is_room && !name.is_empty() && &name != room {
                    uses.insert(name);
                }
            }
        }
    }
    graphs
}

#[test]
fn no_module_has_a_cycle_between_its_rooms() {
    let graphs = room_graphs();
    assert!(
        graphs.get("store").is_some_and(|g| g.len() >= 4),
        "the scan found too few rooms of the store: {graphs:?}"
    );
    let cycles: Vec<String> = graphs
        .iter()
        .filter_map(|(module, graph)| {
            find_cycle(graph).map(|cycle| format!("{module}: {}", cycle.join(" -> ")))
        })
        .collect();
    assert!(cycles.is_empty(), "import cycles: {cycles:?}");
}

#[test]
fn the_store_is_grouped_in_folders() {
    let mut loose: Vec<String> = std::fs::read_dir(src().join("store"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    loose.sort();
    assert_eq!(
        loose,
        ["error.rs", "mod.rs"],
        "the store's files belong in its folders (engine, processes, work, fleet)"
    );
    for group in ["engine", "processes", "work", "fleet"] {
        let index = std::fs::read_to_string(src().join("store").join(group).join("mod.rs"))
            .unwrap_or_else(|err| panic!("store/{group}/mod.rs: {err}"));
        assert!(
            index.starts_with("//!"),
            "store/{group}/mod.rs opens without a //! comment"
        );
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a")]
        .into_iter()
        .map(|(from, to)| (from.to_string(), BTreeSet::from([to.to_string()])))
        .collect();
    assert_eq!(
        find_cycle(&graph).map(|c| c.len()),
        Some(4),
        "a -> b -> c -> a"
    );
}

#[test]
fn every_module_uses_only_its_layer_and_those_below() {
    let layer_of: BTreeMap<&str, usize> = LAYERS
        .iter()
        .enumerate()
        .flat_map(|(layer, modules)| modules.iter().map(move |m| (*m, layer)))
        .collect();
    let mut wrong = Vec::new();
    for (module, uses) in module_graph() {
        let Some(&layer) = layer_of.get(module.as_str()) else {
            wrong.push(format!("{module} is in no layer: add it to LAYERS"));
            continue;
        };
        for used in uses {
            match layer_of.get(used.as_str()) {
                Some(&below) if below <= layer => {}
                Some(_) => wrong.push(format!("{module} (layer {layer}) uses {used}, above it")),
                None => wrong.push(format!("{module} uses {used}, which is in no layer")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_rows_end_is_written_from_the_store_and_liveness_only() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut writers = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let relative = file.strip_prefix(src()).unwrap().display().to_string();
        let allowed = relative.starts_with("store/") || relative == "liveness.rs";
        for needle in [".record_end(", ".record_lost("] {
            if !allowed && without_tests(&text).contains(needle) {
                writers.push(format!("{relative} calls {needle}"));
            }
        }
    }
    assert!(writers.is_empty(), "{}", writers.join("\n"));
}

#[test]
fn the_live_statuses_are_spelled_in_sql_once() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let spelled: Vec<String> = files
        .iter()
        // (Migrations are history: they spell the schema as each version had it.)
        .filter(|f| !f.to_string_lossy().contains("/migrations/"))
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            without_tests(&text).contains("'starting', 'running', 'stopping'")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert_eq!(spelled.len(), 1, "{spelled:?}");
}

#[test]
fn no_file_outgrows_a_room() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let big: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let lines = cut_tests(&text, false).lines().count();
            (lines > 420).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(big.is_empty(), "split these: {big:?}");
}

/// What runs no event loop of abxd's, where `thread::sleep` is no loop waiting: abxctl (another
/// binary), and threads of their own. The loops themselves — the daemon's, the workers' — never
/// sleep, nor wait for the database's lock (invariant 4 of `src/lib.rs`, `store::busy`).
/// The modules the daemon's loop (and a worker's) may run: `daemon` and every layer below it.
/// The layers above — the command lines, what they print, the web view — are out of the loop's
/// reach by [`every_module_uses_only_its_layer_and_those_below`]: abxctl's own polling, and the
/// web view's threads, which the daemon starts beside its loop, never under it.
fn modules_the_loop_reaches() -> BTreeSet<&'static str> {
    let daemon = LAYERS
        .iter()
        .position(|layer| layer.contains(&"daemon"))
        .unwrap();
    LAYERS[..=daemon]
        .iter()
        .flat_map(|l| l.iter().copied())
        .collect()
}

#[test]
fn nothing_the_daemons_loop_runs_sleeps() {
    let reached = modules_the_loop_reaches();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut sleepers = Vec::new();
    for file in files {
        if module_of(&file).is_some_and(|module| !reached.contains(module.as_str())) {
            continue;
        }
        let relative = file.strip_prefix(src()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in without_tests(&text).lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if ["thread::sleep", "unistd::sleep", "libc::sleep", "nanosleep"]
                .iter()
                .any(|call| code.contains(call))
            {
                sleepers.push(format!("{relative}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        sleepers.is_empty(),
        "a sleep where the daemon's loop may run it (wait on an event instead):\n{}",
        sleepers.join("\n")
    );
}

#[test]
fn every_signal_goes_through_a_pinned_process_handle() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut senders = Vec::new();
    for file in files {
        let relative = file.strip_prefix(src()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for call in [
            "pidfd_send_signal(",
            "signal::kill(",
            "killpg(",
            "libc::kill(",
        ] {
            if without_tests(&text).contains(call) && relative != "identity/pidref.rs" {
                senders.push(format!("{relative} calls {call}"));
            }
        }
    }
    assert!(
        senders.is_empty(),
        "a signal sent other than by `identity::PidRef::send`:\n{}",
        senders.join("\n")
    );
}

/// The guards read what follows a test module too, and nothing of the module (its braces in
/// strings included).
#[test]
fn the_guards_read_every_line_outside_test_items() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { let _ = \"}\"; let _ = '{'; }\n}\nfn c() { std::thread::sleep(d); }\n#[cfg(test)]\nuse x::y;\nfn e() {}\n";
    let kept = without_tests(text);
    assert!(kept.contains("fn a()") && kept.contains("fn c()") && kept.contains("fn e()"));
    assert!(!kept.contains("fn b()") && !kept.contains("x::y"), "{kept}");
    assert_eq!(kept.lines().count(), text.lines().count());
}

/// What follows the generic parameters an `impl` opens with (`<O: Owner> Supervisor<O>`).
fn after_generics(header: &str) -> &str {
    if !header.starts_with('<') {
        return header;
    }
    let mut depth = 0;
    for (at, c) in header.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return &header[at + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// No type grows into a second store: at most 40 methods each, over all its `impl` blocks
/// (trait impls aside). A type that needs more holds more than one concern.
#[test]
fn no_type_has_more_than_forty_methods() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut methods: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        let text = without_tests(&std::fs::read_to_string(&file).unwrap());
        let mut inherent: Option<String> = None;
        for line in text.lines() {
            if let Some(header) = line.strip_prefix("impl") {
                inherent = (!header.contains(" for ")).then(|| {
                    let name = after_generics(header).trim();
                    let name = name.split(['<', ' ', '{']).next().unwrap_or_default();
                    name.rsplit("::").next().unwrap_or_default().to_string()
                });
            } else if line.starts_with('}') {
                inherent = None;
            } else if let Some(name) = &inherent {
                let item = line.trim_start_matches("    ");
                let item = item.strip_prefix("pub ").unwrap_or(item);
                let item = item.split_once(") ").map_or(item, |(vis, rest)| {
                    if vis.starts_with("pub(") {
                        rest
                    } else {
                        item
                    }
                });
                if line.starts_with("    ") && !line.starts_with("     ") && item.starts_with("fn ")
                {
                    *methods.entry(name.clone()).or_default() += 1;
                }
            }
        }
    }
    let crowded: Vec<String> = methods
        .iter()
        .filter(|(_, &n)| n > 40)
        .map(|(name, n)| format!("{name}: {n} methods"))
        .collect();
    for counted in ["Store", "Supervisor", "ProcessTable"] {
        assert!(
            methods.get(counted).is_some_and(|&n| n > 10),
            "the count found no {counted}: {methods:?}"
        );
    }
    assert!(
        crowded.is_empty(),
        "types holding more than one concern: {crowded:?}"
    );
}
