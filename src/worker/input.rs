//! An imported crawl's first snapshot (`abxctl add --from FILE`, `abxctl add -`): what the
//! operator imported — bookmarks, a feed, JSONL, text — written where abx-dl 1.13's `parse_input`
//! writes it (`staticfile/stdin.txt` in the snapshot's directory, its `file://` URL the
//! snapshot's), parsed by the plugins that accept it (`x-accepts-internal-input`) as hooks of the
//! crawl like any other, each URL they report a seed of the crawl at depth 0.
//!
//! Invariants: abxd parses nothing itself; an imported URL passes the rule every seed passes
//! (http or https, never a metadata address) and the crawl's own rules (allow and deny lists);
//! the input is written before any hook starts, readable by the hook user, never through a
//! symbolic link.

use crate::domain::{CrawlRules, Refusal};
use crate::store::{Crawl, Snapshot};
use crate::url_rule::CrawlFilter;
use std::path::{Path, PathBuf};

/// Where the input goes in its snapshot's directory.
const INPUT_FILE: &str = "staticfile/stdin.txt";

/// The input file of snapshot `snapshot_id` of crawl `crawl_id`.
pub fn input_path(data_dir: &Path, crawl_id: i64, snapshot_id: i64) -> PathBuf {
    crate::hooks::snapshot_dir(data_dir, crawl_id, snapshot_id).join(INPUT_FILE)
}

/// The URL of the input snapshot `snapshot_id` of crawl `crawl_id`: its input file's.
pub fn input_url(data_dir: &Path, crawl_id: i64, snapshot_id: i64) -> String {
    format!(
        "file://{}",
        input_path(data_dir, crawl_id, snapshot_id).display()
    )
}

/// Whether `snapshot` is `crawl`'s input snapshot: its input file's, or the file its parser
/// hooks read themselves (`Crawl::import_url`).
pub fn is_input(data_dir: &Path, crawl: &Crawl, snapshot: &Snapshot) -> bool {
    crawl.has_input
        && snapshot.depth == 0
        && (snapshot.url == input_url(data_dir, crawl.id, snapshot.id)
            || crawl.import_url.as_deref() == Some(snapshot.url.as_str()))
}

/// The URL of `crawl`'s input snapshot `snapshot_id`: the file it imports, or its input file.
pub fn input_url_of(data_dir: &Path, crawl: &Crawl, snapshot_id: i64) -> String {
    match &crawl.import_url {
        Some(url) => url.clone(),
        None => input_url(data_dir, crawl.id, snapshot_id),
    }
}

/// `crawl` as its index tells ArchiveBox of it: its `urls` what was submitted — for an import,
/// the file (its input snapshot's URL), as ArchiveBox's own Crawl of an import names its
/// source; never the seeds it was parsed into, which are its snapshots (a 100,000-link import
/// copied into each snapshot's index would be 3 MB a snapshot).
pub fn as_submitted(
    store: &crate::store::Store,
    data_dir: &Path,
    crawl: &Crawl,
) -> Result<Crawl, crate::store::StoreError> {
    let mut submitted = crawl.clone();
    if crawl.has_input && crawl.urls.is_empty() {
        if let Some(first) = store.crawls().first_snapshot(crawl.id)? {
            submitted.urls = vec![input_url_of(data_dir, crawl, first)];
        }
    }
    Ok(submitted)
}

/// Writes `input` where the parsers read it, readable by every user (the hooks' may be another
/// than abxd's; the snapshot's directory is given to it when its first hook starts). Every
/// directory on the way is entered, and the file made anew, without following a symbolic link
/// (a hook of an earlier run of the snapshot may have planted one).
pub fn write_input(
    data_dir: &Path,
    crawl_id: i64,
    snapshot_id: i64,
    input: &str,
) -> std::io::Result<()> {
    use rustix::fs::{fchmod, openat, unlinkat, AtFlags, Mode, OFlags};
    use std::io::Write;
    let path = input_path(data_dir, crawl_id, snapshot_id);
    let dir = path.parent().expect("a file below a dir");
    std::fs::create_dir_all(data_dir)?;
    let dir = crate::logs::enter_dirs(data_dir, dir, 0o750, &mut |_| Ok(()))?;
    fchmod(&dir, Mode::from_raw_mode(0o755))?;
    let name = path.file_name().expect("a file name");
    match unlinkat(&dir, name, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        Err(err) => return Err(err.into()),
    }
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = openat(&dir, name, flags, Mode::from_raw_mode(0o644))?;
    fchmod(&file, Mode::from_raw_mode(0o644))?;
    std::fs::File::from(file).write_all(input.as_bytes())
}

/// An imported URL as a seed of a crawl under `rules`: normalized, or why not.
pub fn admit_seed(url: &str, rules: &CrawlRules) -> Result<String, Refusal> {
    if crate::url_rule::seed_problem(url).is_some() {
        return Err(Refusal::Invalid);
    }
    // (The URL is its own seed: an operator may import local addresses, as `add` takes them.)
    let filter = CrawlFilter::new(&[url.to_string()], rules).map_err(|_| Refusal::Invalid)?;
    filter.admit(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_imported_url_is_a_seed_under_the_crawls_lists() {
        let rules = CrawlRules {
            url_denylist: vec!["ads.example".into()],
            ..CrawlRules::default()
        };
        assert_eq!(
            admit_seed("https://example.com/a#x", &rules).as_deref(),
            Ok("https://example.com/a")
        );
        assert_eq!(
            admit_seed("http://127.0.0.1:8000/", &rules).as_deref(),
            Ok("http://127.0.0.1:8000/")
        );
        assert_eq!(
            admit_seed("https://ads.example/", &rules),
            Err(Refusal::Denylist)
        );
        assert_eq!(
            admit_seed("http://169.254.169.254/", &rules),
            Err(Refusal::Invalid)
        );
        assert_eq!(
            admit_seed("javascript:alert(1)", &rules),
            Err(Refusal::Invalid)
        );
    }

    #[test]
    fn the_input_is_written_readable_where_the_parsers_look() {
        let data = tempfile::tempdir().unwrap();
        write_input(data.path(), 3, 7, "https://example.com/\n").unwrap();
        let path = input_path(data.path(), 3, 7);
        assert!(path.ends_with("crawls/3/snapshots/7/staticfile/stdin.txt"));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "https://example.com/\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        assert_eq!(
            input_url(data.path(), 3, 7),
            format!("file://{}", path.display())
        );
    }
}
