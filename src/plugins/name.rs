//! Hook file names, parsed exactly as abx-dl 1.12.183 parses them (`abx_dl.models
//! .parse_hook_filename`): `^on_(\w+)__(?:(\d+)_)?(.+)$`, background when `.bg.` appears anywhere.
//!
//! Invariant: the same file name gives the same (event, order, background) here as in abx-dl —
//! `tests/abx_plugins.rs` checks every hook of abx-plugins 1.12.171 against abx-dl itself. A
//! name is identified by its stem (the file name without its last extension), as abx-dl does.

/// What a hook's name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookName {
    /// The event family: `CrawlSetup`, `Crawl`, `Snapshot`, `Install`, `Binary`, …
    pub event: String,
    /// The `NN` prefix; 0 when there is none.
    pub order: u32,
    /// `.bg.` appears in the file name.
    pub background: bool,
    /// The file name without its last extension: how abx-dl names (and orders) the hook.
    pub stem: String,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Parses a hook file name, or `None` when it is not one.
pub fn parse(file_name: &str) -> Option<HookName> {
    let rest = file_name.strip_prefix("on_")?;
    // `(\w+)__` — greedy, so the event ends at the *last* `__` inside the leading run of word
    // characters that still leaves something for `(.+)`.
    let word_run = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
    let split = (1..word_run.saturating_sub(1))
        .rev()
        .find(|&at| rest[at..].starts_with("__") && at + 2 < rest.len())?;
    let event = &rest[..split];
    let after = &rest[split + 2..];
    // `(?:(\d+)_)?` — taken when digits and an underscore lead and something follows them.
    let digits = after
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after.len());
    let order = match after[digits..].strip_prefix('_') {
        Some(tail) if digits > 0 && !tail.is_empty() => after[..digits].parse().ok()?,
        _ => 0,
    };
    let stem = match file_name.rfind('.') {
        Some(dot) if dot > 0 => &file_name[..dot],
        _ => file_name,
    };
    Some(HookName {
        event: event.to_string(),
        order,
        background: file_name.contains(".bg."),
        stem: stem.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(name: &str) -> Option<(String, u32, bool, String)> {
        parse(name).map(|h| (h.event, h.order, h.background, h.stem))
    }

    #[test]
    fn names_of_both_generations_parse() {
        assert_eq!(
            parsed("on_Snapshot__35_wget.finite.bg.py"),
            Some((
                "Snapshot".into(),
                35,
                true,
                "on_Snapshot__35_wget.finite.bg".into()
            ))
        );
        assert_eq!(
            parsed("on_CrawlSetup__90_chrome_launch.daemon.bg.js"),
            Some((
                "CrawlSetup".into(),
                90,
                true,
                "on_CrawlSetup__90_chrome_launch.daemon.bg".into()
            ))
        );
        assert_eq!(
            parsed("on_Crawl__10_chrome_launch.bg.sh"),
            Some((
                "Crawl".into(),
                10,
                true,
                "on_Crawl__10_chrome_launch.bg".into()
            ))
        );
        assert_eq!(
            parsed("on_Snapshot__3_a.b.c.py"),
            Some(("Snapshot".into(), 3, false, "on_Snapshot__3_a.b.c".into()))
        );
    }

    #[test]
    fn the_corners_of_the_regex_are_kept() {
        // No order: 0, and the description starts right after `__`.
        assert_eq!(parsed("on_Install__setup.sh").map(|p| p.1), Some(0));
        // Digits without a description after them are the description.
        assert_eq!(parsed("on_Snapshot__12_").map(|p| p.1), Some(0));
        // `\w+` is greedy: the event runs to the last `__` of the leading word run.
        assert_eq!(
            parsed("on_Snapshot__10_a__b.py").map(|p| p.0),
            Some("Snapshot__10_a".into())
        );
        // Overlapping underscores: the last place `__` can stand wins.
        assert_eq!(parsed("on_a___b.sh").map(|p| p.0), Some("a_".into()));
        // `.bg` only counts with a dot on both sides.
        assert_eq!(parsed("on_Snapshot__10_x.bg").map(|p| p.2), Some(false));
        assert_eq!(parsed("on_Snapshot__10_bg.py").map(|p| p.2), Some(false));
        for not_a_hook in [
            "on_Snapshot_10_x.sh",
            "Snapshot__10_x.sh",
            "on___x",
            "on_X__",
        ] {
            assert_eq!(parse(not_a_hook), None, "{not_a_hook}");
        }
    }
}
