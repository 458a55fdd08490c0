//! What a request's path asks for.
//!
//! Invariant: every path the view answers is named here, and nothing else is; an id that is not
//! a number, or a path with more or fewer parts than its kind has, is [`Route::NotFound`].

/// A page that updates itself: its live part is streamed by `/events/…` with the same tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// `/`: the process tree and the crawls.
    Index,
    /// `/crawl/ID`: a crawl's snapshots, the first page of them; `/crawl/ID/page/N` page N.
    Crawl(i64, u64),
    /// `/snapshot/ID`: a snapshot's results, files and logs.
    Snapshot(i64),
}

impl View {
    /// Its path (`/`, `/crawl/3`).
    pub fn path(self) -> String {
        match self {
            View::Index => "/".into(),
            View::Crawl(id, 1) => format!("/crawl/{id}"),
            View::Crawl(id, page) => format!("/crawl/{id}/page/{page}"),
            View::Snapshot(id) => format!("/snapshot/{id}"),
        }
    }

    /// The path of its stream of updates.
    pub fn events_path(self) -> String {
        match self {
            View::Index => "/events".into(),
            other => format!("/events{}", other.path()),
        }
    }
}

/// Which of a process's logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Page(View),
    Events(View),
    /// `/log/ROW/stdout`: the end of a process row's log.
    Log(i64, Stream),
    /// `/files/SNAPSHOT/PATH`: a file of a snapshot's directory (PATH still %-encoded).
    File(i64, String),
    Metrics,
    Script,
    Style,
    NotFound,
}

/// The route of `path` (%-encoded, without its query).
pub fn route(path: &str) -> Route {
    let id = |text: &str| text.parse::<i64>().ok().filter(|&id| id > 0);
    let view = |parts: &[&str]| match parts {
        [] => Some(View::Index),
        ["crawl", n] => id(n).map(|n| View::Crawl(n, 1)),
        ["crawl", n, "page", page] => Some(View::Crawl(id(n)?, id(page)? as u64)),
        ["snapshot", n] => id(n).map(View::Snapshot),
        _ => None,
    };
    if let Some(rest) = path.strip_prefix("/files/") {
        let (snapshot, file) = rest.split_once('/').unwrap_or((rest, ""));
        return match id(snapshot) {
            Some(snapshot) => Route::File(snapshot, format!("/{file}")),
            None => Route::NotFound,
        };
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        ["metrics"] => Route::Metrics,
        ["app.js"] => Route::Script,
        ["app.css"] => Route::Style,
        ["log", n, "stdout"] => id(n).map_or(Route::NotFound, |n| Route::Log(n, Stream::Stdout)),
        ["log", n, "stderr"] => id(n).map_or(Route::NotFound, |n| Route::Log(n, Stream::Stderr)),
        ["events", rest @ ..] => view(rest).map_or(Route::NotFound, Route::Events),
        rest => view(rest).map_or(Route::NotFound, Route::Page),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_has_one_route() {
        assert_eq!(route("/"), Route::Page(View::Index));
        assert_eq!(route("/crawl/3"), Route::Page(View::Crawl(3, 1)));
        assert_eq!(route("/crawl/3/page/2"), Route::Page(View::Crawl(3, 2)));
        assert_eq!(
            route("/events/crawl/3/page/2"),
            Route::Events(View::Crawl(3, 2))
        );
        assert_eq!(route("/snapshot/12/"), Route::Page(View::Snapshot(12)));
        assert_eq!(route("/events"), Route::Events(View::Index));
        assert_eq!(
            route("/events/snapshot/12"),
            Route::Events(View::Snapshot(12))
        );
        assert_eq!(route("/log/7/stderr"), Route::Log(7, Stream::Stderr));
        assert_eq!(route("/metrics"), Route::Metrics);
        assert_eq!(
            route("/files/4/wget/index.html"),
            Route::File(4, "/wget/index.html".into())
        );
        assert_eq!(
            route("/files/4/%2e%2e/x"),
            Route::File(4, "/%2e%2e/x".into())
        );
        for path in [
            "/crawl/x",
            "/crawl/-1",
            "/crawl",
            "/crawl/3/page/0",
            "/crawl/3/page",
            "/snapshot/1/2",
            "/log/1/other",
            "/files/x/a",
            "/nothing",
            "/events/crawl",
        ] {
            assert_eq!(route(path), Route::NotFound, "{path}");
        }
    }

    #[test]
    fn a_view_names_its_page_and_its_stream() {
        for view in [
            View::Index,
            View::Crawl(2, 1),
            View::Crawl(2, 3),
            View::Snapshot(9),
        ] {
            assert_eq!(route(&view.path()), Route::Page(view));
            assert_eq!(route(&view.events_path()), Route::Events(view));
        }
    }
}
