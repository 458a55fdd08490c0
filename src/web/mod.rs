//! The web view: a read-only page of the live process tree, the crawls, a snapshot's results,
//! files and logs, updating itself while a crawl runs (Server-Sent Events); and `/metrics` for
//! Prometheus — served by the daemon only where `[web] listen` says (`docs/web.md`).
//!
//! Invariants:
//! - It never touches the daemon's state: it runs on threads of its own (one accepting, one per
//!   connection, at most [`MAX_CONNECTIONS`]), each reading the store through a read-only
//!   connection of its own, and procfs. Nothing it does can block or slow the supervisor loop.
//! - It costs nothing while nobody looks: the accepting thread sleeps in `accept`; only an open
//!   event stream wakes, once a second, to read what changed.
//! - It answers GET and HEAD only (`http`); over TCP every request carries the token (`token`);
//!   a file is served only from below its snapshot's directory (`serve::resolve`: no `..`, no
//!   symbolic link out), and with a policy that lets no archived page run a script here.

mod crawl_page;
mod events;
mod exposition;
mod histogram;
mod http;
mod listener;
mod metrics;
mod page;
mod politeness;
mod route;
mod scrape;
mod seen;
pub mod token;
mod view;

use crate::config::{Config, Listen};
use crate::store::{Store, StoreError};
use http::{Method, Response};
use route::{Route, Stream, View};
use std::io::{BufReader, Read, Write};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

/// The most connections served at once (each event stream holds one).
pub const MAX_CONNECTIONS: usize = 32;

/// How much of a log `/log/…` shows: its end.
const LOG_TAIL_BYTES: u64 = 64 * 1024;

/// How many lines of a hook's stderr a snapshot's page shows under its result.
const RESULT_TAIL_LINES: usize = 5;

/// Why the web view could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("web.listen: cannot listen on {listen}: {cause}")]
    Listen {
        listen: String,
        cause: std::io::Error,
    },
    #[error("web.listen: cannot write the token file {path}: {cause}")]
    Token { path: String, cause: std::io::Error },
}

/// What every connection's thread shares.
pub(super) struct Shared {
    config: Config,
    host: view::Host,
    /// The token requests over TCP must carry, and the cookie that carries it (`None`: a Unix
    /// socket, whose mode decides who connects).
    token: Option<(String, String)>,
    tally: Mutex<metrics::Tally>,
    connections: AtomicUsize,
}

/// Starts serving the web view where `config` says, if it says anywhere; returns where.
pub fn start(config: &Config) -> Result<Option<Listen>, WebError> {
    let Some(listen) = config.web.clone() else {
        return Ok(None);
    };
    let failed = |cause| WebError::Listen {
        listen: listen.to_string(),
        cause,
    };
    let (listener, token) = match &listen {
        Listen::Tcp(addr) => {
            let listener = std::net::TcpListener::bind(addr).map_err(failed)?;
            let token =
                token::load_or_create(&config.data_dir).map_err(|cause| WebError::Token {
                    path: token::path(&config.data_dir).display().to_string(),
                    cause,
                })?;
            (
                listener::Listener::Tcp(listener),
                Some((token, token::cookie_name(addr.port()))),
            )
        }
        Listen::Unix(path) => {
            listener::remove_stale_socket(path).map_err(failed)?;
            let listener = std::os::unix::net::UnixListener::bind(path).map_err(failed)?;
            listener::restrict_socket(path, config.control.group.as_deref()).map_err(failed)?;
            (listener::Listener::Unix(listener), None)
        }
    };
    let shared = Arc::new(Shared {
        config: config.clone(),
        host: view::Host::this(),
        token,
        tally: Mutex::new(metrics::Tally::default()),
        connections: AtomicUsize::new(0),
    });
    std::thread::Builder::new()
        .name("web".into())
        .spawn(move || listener::accept_forever(listener, shared))
        .map_err(failed)?;
    log::info!("web view on {listen}");
    Ok(Some(listen))
}

fn serve_connection(mut connection: listener::Connection, shared: &Shared) {
    let _ = connection.set_read_timeout(Some(http::READ_TIMEOUT));
    let request = {
        let mut reader = BufReader::new(&mut connection);
        http::read_request(&mut reader)
    };
    let request = match request {
        Ok(request) => request,
        Err(http::BadRequest::Incomplete) => return,
        Err(http::BadRequest::Malformed(why)) => {
            let _ = Response::text(400, why).write_to(&mut connection, true);
            return;
        }
    };
    let with_body = request.method == Method::Get;
    if request.method == Method::Other {
        let refused = Response::text(405, "the web view is read-only: GET and HEAD only")
            .with("Allow", "GET, HEAD");
        let _ = refused.write_to(&mut connection, true);
        return;
    }
    let mut set_cookie = None;
    if let Some((token, cookie)) = &shared.token {
        if !token::carries(&request, token, cookie) {
            let refused = Response::text(
                401,
                "this needs the web view's token: `abxctl web-url` prints the link",
            )
            .with("WWW-Authenticate", "Bearer");
            let _ = refused.write_to(&mut connection, with_body);
            return;
        }
        if request.param("token").is_some() {
            set_cookie = Some(format!(
                "{cookie}={token}; Path=/; HttpOnly; SameSite=Strict"
            ));
        }
    }
    let route = route::route(&request.path);
    if let Route::Events(view) = route {
        if with_body {
            events::stream_events(connection, shared, view);
        } else {
            let _ = connection.write_all(http::event_stream_head().as_bytes());
        }
        return;
    }
    let mut response = answer(&route, shared).unwrap_or_else(|err| {
        log::warn!("web: {}: {err}", request.path);
        Response::text(500, format!("cannot read the database: {err}"))
    });
    if let Some(cookie) = set_cookie {
        response = response.with("Set-Cookie", cookie);
    }
    let _ = response.write_to(&mut connection, with_body);
}

fn not_found() -> Response {
    Response::text(404, "not found")
}

fn html(body: String) -> Response {
    Response::new(200, "text/html; charset=utf-8", body)
}

pub(super) fn open_store(shared: &Shared) -> Result<Store, StoreError> {
    Store::open_read_only_at(&shared.config.database)
}

/// The answer to a request for anything but an event stream.
fn answer(route: &Route, shared: &Shared) -> Result<Response, StoreError> {
    Ok(match route {
        Route::Script => Response::new(
            200,
            "text/javascript; charset=utf-8",
            include_str!("assets/app.js"),
        ),
        Route::Style => Response::new(
            200,
            "text/css; charset=utf-8",
            include_str!("assets/app.css"),
        ),
        Route::Page(view) => {
            let store = open_store(shared)?;
            match live(&store, shared, *view)? {
                Some(live) => html(page::document(
                    &shared.host,
                    &title(*view),
                    Some(*view),
                    &live,
                )),
                None => not_found(),
            }
        }
        Route::Log(id, stream) => {
            let store = open_store(shared)?;
            let Some(row) = store.processes().get(*id)? else {
                return Ok(not_found());
            };
            let path = match stream {
                Stream::Stdout => &row.stdout_path,
                Stream::Stderr => &row.stderr_path,
            };
            let text = path
                .as_deref()
                .map(|p| log_end(std::path::Path::new(p)))
                .unwrap_or_default();
            html(page::document(
                &shared.host,
                &format!("process {id}"),
                None,
                &page::log_live(&row, *stream, &text),
            ))
        }
        Route::File(snapshot, path) => {
            let store = open_store(shared)?;
            let Some(snapshot) = store.crawls().snapshot(*snapshot)? else {
                return Ok(not_found());
            };
            let dir =
                crate::hooks::snapshot_dir(&shared.config.data_dir, snapshot.crawl_id, snapshot.id);
            file(&dir, path)
        }
        Route::Metrics => {
            let store = open_store(shared)?;
            Response::new(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                scrape::scrape(&store, shared)?,
            )
        }
        Route::Events(_) | Route::NotFound => not_found(),
    })
}

fn title(view: View) -> String {
    match view {
        View::Index => "processes".into(),
        View::Crawl(id, 1) => format!("crawl {id}"),
        View::Crawl(id, page) => format!("crawl {id}, page {page}"),
        View::Snapshot(id) => format!("snapshot {id}"),
    }
}

/// The live part of `view` as of now (`None`: what it shows does not exist).
pub(super) fn live(
    store: &Store,
    shared: &Shared,
    view: View,
) -> Result<Option<String>, StoreError> {
    let now = crate::store::now_ms();
    Ok(match view {
        View::Index => Some(page::index_live(&view::index(store)?, now)),
        View::Crawl(id, number) => {
            view::crawl(store, id, number)?.map(|data| crawl_page::crawl_live(&data, now))
        }
        View::Snapshot(id) => view::snapshot(store, &shared.config.data_dir, id)?.map(|data| {
            page::snapshot_live(&data, &|row| {
                row.stderr_path
                    .as_deref()
                    .map(|p| crate::render::log_tail(std::path::Path::new(p), RESULT_TAIL_LINES))
                    .unwrap_or_default()
            })
        }),
    })
}

/// The end of a log (its last [`LOG_TAIL_BYTES`]), read without following a link.
fn log_end(path: &std::path::Path) -> String {
    use std::io::{Seek, SeekFrom};
    let Ok(mut file) = crate::logs::read_log(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A file of a snapshot's directory `dir`, if `path` names one below it.
fn file(dir: &std::path::Path, path: &str) -> Response {
    let Ok(root) = dir.canonicalize() else {
        return not_found();
    };
    let Some(found) = crate::serve::resolve(&root, path) else {
        return not_found();
    };
    match std::fs::read(&found) {
        Ok(body) => Response::new(200, crate::serve::content_type(&found), body)
            .with("Content-Security-Policy", http::FILE_POLICY),
        Err(_) => not_found(),
    }
}
