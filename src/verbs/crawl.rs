//! `add`: a crawl enqueued from its spec.

use super::{check_persona, check_plugins, check_seeds, with_defaults, Refusal};
use crate::config::Config;
use crate::domain::CrawlSpec;
use crate::store::{Store, StoreError};

/// A spec judged fit to make a crawl, with `[crawl]`'s defaults merged in.
#[derive(Debug, Clone)]
pub struct Admitted(CrawlSpec);

impl Admitted {
    pub fn spec(&self) -> &CrawlSpec {
        &self.0
    }
}

/// Judges `spec` as a crawl of `config`'s: its shape and rules, its seeds, its plugins.
pub fn admit(config: &Config, spec: CrawlSpec) -> Result<Admitted, Refusal> {
    let spec = with_defaults(config, spec)?;
    if let Some(why) = spec.problem() {
        return Err(Refusal::malformed(why));
    }
    check_seeds(&spec.urls)?;
    check_plugins(&config.plugins_dirs, &spec)?;
    check_persona(config, &spec)?;
    Ok(Admitted(spec))
}

/// Enqueues the crawl `admitted` asks for, due now (with its export, if `[archivebox]` names a
/// collection — but for a crawl of ArchiveBox's own queue, whose rows are written as it runs);
/// returns its id. A busy database refuses it whole: it may be tried again.
pub fn enqueue(store: &Store, config: &Config, admitted: &Admitted) -> Result<i64, StoreError> {
    let spec = admitted.spec();
    let export_to = config.archivebox.export_to();
    let export_to = export_to.filter(|_| spec.options.archivebox.is_none());
    store.crawls().add(spec, export_to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(std::path::Path::new("/etc/abxd/supervisor.toml"), text).unwrap()
    }

    #[test]
    fn the_crawl_defaults_are_merged_at_admission() {
        let config = config("[crawl]\nmax_urls = 7\n");
        let admitted = admit(
            &config,
            CrawlSpec::of_urls(vec!["http://a.test/".into()], 0),
        );
        assert_eq!(admitted.unwrap().spec().rules.max_urls, Some(7));
    }

    /// A client's config with an error elsewhere kept only `[paths]` and `[control]`: its
    /// `[crawl]` is gone, so it must not make a crawl (the daemon's would get other rules).
    #[test]
    fn a_config_read_only_in_part_writes_no_work() {
        let config = Config {
            read_partly: Some("limits.typo: unknown key".into()),
            ..config("")
        };
        let spec = CrawlSpec::of_urls(vec!["http://a.test/".into()], 0);
        let refusal = admit(&config, spec).unwrap_err();
        assert!(
            refusal.message.contains("limits.typo"),
            "{}",
            refusal.message
        );
    }

    #[test]
    fn a_seed_the_url_rule_refuses_is_refused_before_anything_is_written() {
        let spec = CrawlSpec::of_urls(vec!["ftp://a.test/".into()], 0);
        let refusal = admit(&config(""), spec).unwrap_err();
        assert_eq!(refusal.code, crate::control::protocol::ErrorCode::Malformed);
    }
}
