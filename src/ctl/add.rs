//! `abxctl add`: queue a crawl — through the daemon when it runs, in the database when it does
//! not — and with `--wait` follow it until it is sealed.

use super::{client, unexpected, CtlError, Out, Result, FOLLOW_INTERVAL};
use crate::cli::CrawlArgs;
use crate::config::Config;
use crate::control::client::ClientError;
use crate::control::protocol::{Request, Response};
use crate::domain::{CrawlSpec, PageStart, WorkStatus};
use crate::exit;
use crate::store::Store;
use crate::verbs;
use serde_json::json;

/// How `add` waits, and whether it runs the crawl at all.
pub(super) struct How {
    /// Follow the crawl until it is sealed.
    pub wait: bool,
    /// Record it paused (`--index-only`).
    pub index_only: bool,
    pub out: Out,
}

impl How {
    /// The crawl `crawl`'s flags ask for, of `urls`, recorded paused if asked.
    fn spec(&self, crawl: &CrawlArgs, urls: Vec<String>) -> CrawlSpec {
        CrawlSpec {
            index_only: self.index_only,
            ..crawl.spec(urls)
        }
    }
}

/// What `add` says of a crawl it recorded paused (`--index-only`).
fn recorded_paused(id: i64, running: bool, out: Out) -> Result<i32> {
    out.answer(
        || println!("crawl {id} recorded, paused: `abxctl resume {id}` runs it"),
        || json!({"crawl_id": id, "paused": true, "daemon_running": running}),
    );
    Ok(exit::OK)
}

pub(super) fn run(config: &Config, urls: &[String], crawl: &CrawlArgs, how: How) -> Result<i32> {
    let (wait, out) = (how.wait, how.out);
    for url in urls {
        validate_url(url)?;
    }
    // Through the daemon when it runs (it owns the database: members of control.group may add
    // without write access to it); written here when it does not, to run when it starts.
    let spec = how.spec(crawl, urls.to_vec());
    let (id, running) = match client(config).request(&Request::Add(spec.clone())) {
        Ok(Response::Added { crawl_id }) => (crawl_id, true),
        Ok(Response::Error { code, message }) => {
            return Err(CtlError::Refused { code, message });
        }
        Ok(other) => return Err(unexpected(other)),
        Err(ClientError::NotRunning { .. }) => (add_while_down(config, spec)?, false),
        Err(err) => return Err(err.into()),
    };
    if how.index_only {
        return recorded_paused(id, running, out);
    }
    let human = || {
        println!("crawl {id} queued");
        if !running {
            println!("abxd is not running: the crawl runs when it starts");
        }
    };
    if !wait {
        out.answer(human, || json!({"crawl_id": id, "daemon_running": running}));
        return Ok(exit::OK);
    }
    if !out.json {
        human();
    }
    super::follow::follow_crawl(config, id, super::follow::Shown::of_add(out))
}

/// What `add` imports, read whole: from a file, or standard input (`-`).
pub(super) struct Import {
    /// What to call it in messages: the file's path, or "standard input".
    pub name: String,
    pub text: String,
}

/// The import `add` was given — `--from FILE`, or `-` as its one URL — if it was.
pub(super) fn source(urls: &[String], from: Option<&std::path::Path>) -> Result<Option<Import>> {
    use std::io::Read;
    if let Some(path) = from {
        let text = std::fs::read(path)
            .map_err(|err| CtlError::BadInput(format!("cannot read {}: {err}", path.display())))?;
        return Ok(Some(Import {
            name: path.display().to_string(),
            text: String::from_utf8_lossy(&text).into_owned(),
        }));
    }
    if !urls.iter().any(|url| url == "-") {
        return Ok(None);
    }
    if urls.len() > 1 {
        return Err(CtlError::BadInput(
            "`-` imports standard input: give it alone, without URLs".into(),
        ));
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|err| CtlError::BadInput(format!("cannot read standard input: {err}")))?;
    Ok(Some(Import {
        name: "standard input".into(),
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }))
}

/// `add --from FILE` (or `-`): queues a crawl of what `import` holds, waits until its input
/// snapshot has parsed it, and says how many URLs it found — or fails naming the import and the
/// parsers that found nothing; with `--wait`, then follows the crawl.
pub(super) fn import(config: &Config, import: &Import, crawl: &CrawlArgs, how: How) -> Result<i32> {
    let (wait, out) = (how.wait, how.out);
    if import.text.trim().is_empty() {
        return Err(CtlError::BadInput(format!(
            "{} is empty: nothing to import",
            import.name
        )));
    }
    let spec = CrawlSpec {
        input: Some(import.text.clone()),
        ..how.spec(crawl, Vec::new())
    };
    let request = Request::Add(spec.clone());
    // (The input travels on the control socket, whose frames are bounded: say so naming the
    // file and the key, not the frame. With abxd down it is written to the database instead.)
    let frame = crate::control::protocol::encode_request(&request).len();
    let answer = if frame > config.control.max_frame_bytes {
        match client(config).request(&Request::Status) {
            Err(err @ ClientError::NotRunning { .. }) => Err(err),
            _ => {
                return Err(CtlError::BadInput(format!(
                    "{} is {} bytes, more than control.max_frame_bytes ({}) lets through abxd's \
                     socket: raise it in {} and reload abxd",
                    import.name,
                    import.text.len(),
                    config.control.max_frame_bytes,
                    config.source.display()
                )))
            }
        }
    } else {
        client(config).request(&request)
    };
    let id = match answer {
        Ok(Response::Added { crawl_id }) => crawl_id,
        Ok(Response::Error { code, message }) => return Err(CtlError::Refused { code, message }),
        Ok(other) => return Err(unexpected(other)),
        Err(ClientError::NotRunning { .. }) => {
            let id = add_while_down(config, spec)?;
            out.answer(
                || {
                    println!("crawl {id} queued");
                    println!(
                        "abxd is not running: {} is parsed when it starts",
                        import.name
                    );
                },
                || json!({"crawl_id": id, "daemon_running": false}),
            );
            return Ok(exit::OK);
        }
        Err(err) => return Err(err.into()),
    };
    // (Paused, it parses nothing until resumed: nothing to wait for.)
    if how.index_only {
        return recorded_paused(id, true, out);
    }
    let seeds = parsed_seeds(config, id)?;
    if seeds.urls == 0 {
        return Err(CtlError::BadInput(format!(
            "{}: no URL found in it (crawl {id}); tried {}",
            import.name,
            if seeds.parsers.is_empty() {
                "no parser: no plugin that accepts imports runs here (see abxctl plugins)".into()
            } else {
                seeds.parsers.join(", ")
            }
        )));
    }
    let human = || {
        println!(
            "crawl {id} queued: {} URLs from {}",
            seeds.urls, import.name
        )
    };
    if !wait {
        out.answer(
            human,
            || json!({"crawl_id": id, "urls": seeds.urls, "daemon_running": true}),
        );
        return Ok(exit::OK);
    }
    if !out.json {
        human();
    }
    super::follow::follow_crawl(config, id, super::follow::Shown::of_add(out))
}

/// What a crawl's input snapshot parsed: how many seeds, and which parsers ran (each with what
/// it said).
struct Parsed {
    urls: usize,
    parsers: Vec<String>,
}

/// Waits until crawl `id`'s input snapshot is sealed (or the crawl is), then reads what it
/// parsed.
fn parsed_seeds(config: &Config, id: i64) -> Result<Parsed> {
    loop {
        let store = Store::open_read_only_at(&config.database)?;
        let crawl = store.crawls().get(id)?;
        // (Its first snapshot only: a crawl of 100,000 seeds is not read at each look.)
        let first = (store.crawls()).snapshot_page(id, None, PageStart::Skip(0), 1)?;
        let input = (first.snapshots.first()).filter(|s| s.status == WorkStatus::Sealed);
        let crawl_sealed = crawl
            .as_ref()
            .is_some_and(|c| c.status == WorkStatus::Sealed);
        if let Some(input) = input {
            let parsers = store
                .results()
                .snapshot_results(input.id)?
                .iter()
                .map(|r| {
                    format!(
                        "{} ({})",
                        r.plugin,
                        r.output.as_deref().unwrap_or(r.status.as_str())
                    )
                })
                .collect();
            let urls = crawl.map_or(0, |c| c.imported_seeds as usize);
            return Ok(Parsed { urls, parsers });
        }
        if crawl_sealed {
            return Ok(Parsed {
                urls: 0,
                parsers: Vec::new(),
            });
        }
        drop(store);
        std::thread::sleep(FOLLOW_INTERVAL);
    }
}

/// Enqueues a crawl by writing the database itself (the daemon is down), as the daemon would
/// (`verbs::crawl`). Only the daemon's first start creates a database: with none, this says so.
fn add_while_down(config: &Config, spec: CrawlSpec) -> Result<i64> {
    let crawl = verbs::crawl::admit(config, spec).map_err(super::refused_here)?;
    let store = Store::open_existing_at(&config.database)?;
    store.set_synchronous_commit(config.synchronous_commit);
    Ok(verbs::crawl::enqueue(&store, config, &crawl)?)
}

/// Refuses what cannot be a URL to crawl, before anything is written.
pub fn validate_url(url: &str) -> Result<()> {
    match crate::url_rule::seed_problem(url) {
        None => Ok(()),
        Some(why) => Err(CtlError::BadInput(why)),
    }
}
