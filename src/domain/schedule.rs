//! When a schedule fires: every period from its start, or at the minutes a cron expression names
//! in the host's time zone.
//!
//! Invariants: the next occurrence is always strictly after the moment asked about, so a
//! schedule that was due while nobody looked fires once and then at its next occurrence — never
//! once per period missed; a cron expression is the five fields of crontab(5) (minute, hour, day
//! of month, month, day of week; `*`, lists, ranges, steps, names of months and days, and the
//! `@hourly`/`@daily`/`@weekly`/`@monthly`/`@yearly` shorthands), read strictly: anything else is
//! refused naming the field.

use super::rules::CrawlRules;
use super::spec::{CrawlOptions, CrawlSpec};
use super::work::WorkStatus;
use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use serde::Serialize;

/// How often a schedule fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cadence {
    /// Every `every_ms`, counted from `anchor_ms` (unix ms: when the schedule was made).
    Every { every_ms: i64, anchor_ms: i64 },
    /// At the minutes a cron expression names.
    Cron(Cron),
}

impl Cadence {
    /// The cadence a request names: a period (`every_ms`, at least a second) or a cron
    /// expression, one of the two. (Periods are counted from when the schedule is made.)
    pub fn named(every_ms: Option<u64>, cron: Option<&str>) -> Result<Cadence, String> {
        match (every_ms, cron) {
            (Some(every_ms), None) if every_ms >= 1_000 => Ok(Cadence::Every {
                every_ms: every_ms as i64,
                anchor_ms: 0,
            }),
            (Some(_), None) => Err("a schedule fires at most once a second".into()),
            (None, Some(cron)) => Ok(Cadence::Cron(cron.parse::<Cron>()?)),
            _ => Err("a schedule fires either --every DURATION or at --cron EXPR".into()),
        }
    }

    /// The first occurrence strictly after `after_ms` (unix ms), in `zone` for a cron
    /// expression; `None` if there is none within eight years (`0 0 30 2 *`).
    pub fn next_after(&self, after_ms: i64, zone: &TimeZone) -> Option<i64> {
        match self {
            Cadence::Every {
                every_ms,
                anchor_ms,
            } => {
                let every = (*every_ms).max(1);
                let periods = (after_ms - anchor_ms).div_euclid(every) + 1;
                Some(anchor_ms + periods * every)
            }
            Cadence::Cron(cron) => cron.next_after(after_ms, zone),
        }
    }
}

/// A cron expression, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    /// Whether the day of month or the day of week was `*`: crontab(5) fires on a day that
    /// matches either when both are restricted, else on one that matches the restricted one.
    any_day: bool,
    any_weekday: bool,
    text: String,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl std::fmt::Display for Cron {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// One field: the set of values it names within `min..=max`, as a bit set, and whether it was
/// `*`.
fn field(
    text: &str,
    name: &str,
    min: u32,
    max: u32,
    names: &[&str],
) -> Result<(u64, bool), String> {
    let value = |word: &str| -> Result<u32, String> {
        let lower = word.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            return Ok(i as u32 + min);
        }
        let n: u32 = word
            .parse()
            .map_err(|_| format!("{name}: {word:?} is not a number"))?;
        // (Day of week 7 is Sunday, as crontab(5) allows.)
        let n = if name == "day of week" && n == 7 {
            0
        } else {
            n
        };
        if n < min || n > max {
            return Err(format!("{name}: {n} is not within {min}-{max}"));
        }
        Ok(n)
    };
    let mut set = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or_else(|| format!("{name}: step {step:?} is not a positive number"))?;
                (range, step)
            }
            None => (part, 1),
        };
        let (low, high) = match range {
            "*" => (min, max),
            _ => match range.split_once('-') {
                Some((a, b)) => (value(a)?, value(b)?),
                None if step > 1 => (value(range)?, max),
                None => {
                    let v = value(range)?;
                    (v, v)
                }
            },
        };
        if low > high {
            return Err(format!("{name}: {range:?} runs backwards"));
        }
        for v in (low..=high).step_by(step as usize) {
            set |= 1 << v;
        }
    }
    Ok((set, text == "*"))
}

impl std::str::FromStr for Cron {
    type Err = String;

    fn from_str(text: &str) -> Result<Cron, String> {
        let expanded = match text.trim() {
            "@hourly" => "0 * * * *",
            "@daily" | "@midnight" => "0 0 * * *",
            "@weekly" => "0 0 * * 0",
            "@monthly" => "0 0 1 * *",
            "@yearly" | "@annually" => "0 0 1 1 *",
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(format!(
                "{text:?} has {} fields; a cron expression has 5: minute hour day-of-month \
                 month day-of-week (e.g. \"0 3 * * *\": every day at 03:00)",
                fields.len()
            ));
        };
        let (minutes, _) = field(minute, "minute", 0, 59, &[])?;
        let (hours, _) = field(hour, "hour", 0, 23, &[])?;
        let (days, any_day) = field(day, "day of month", 1, 31, &[])?;
        let (months, _) = field(month, "month", 1, 12, &MONTHS)?;
        let (weekdays, any_weekday) = field(weekday, "day of week", 0, 7, &WEEKDAYS)?;
        // (7 folded into Sunday.)
        let weekdays = (weekdays | (weekdays >> 7)) & 0x7f;
        let cron = Cron {
            minutes,
            hours: hours as u32,
            days: days as u32,
            months: months as u16,
            weekdays: weekdays as u8,
            any_day,
            any_weekday,
            text: text.trim().to_string(),
        };
        // (A day that no month has, as `30 2`: refused now, not found never to come.)
        if cron.next_after(0, &TimeZone::UTC).is_none() {
            return Err(format!("{text:?} names no moment that ever comes"));
        }
        Ok(cron)
    }
}

impl Cron {
    fn day_matches(&self, date: Date) -> bool {
        let by_day = self.days & (1 << date.day()) != 0;
        let by_weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        match (self.any_day, self.any_weekday) {
            (false, false) => by_day || by_weekday,
            (true, false) => by_weekday,
            (false, true) => by_day,
            (true, true) => true,
        }
    }

    /// The first minute it names strictly after `after_ms`, in `zone` (a minute a change of
    /// clocks skips fires at the instant after the gap).
    pub fn next_after(&self, after_ms: i64, zone: &TimeZone) -> Option<i64> {
        let after = Timestamp::from_millisecond(after_ms)
            .ok()?
            .to_zoned(zone.clone());
        let start = after
            .datetime()
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?;
        let mut at: DateTime = start.checked_add(1.minute()).ok()?;
        let last = start.checked_add(8.years()).ok()?;
        while at <= last {
            if self.months & (1 << at.month()) == 0 {
                let first = Date::new(at.year(), at.month(), 1).ok()?;
                at = first
                    .checked_add(1.month())
                    .ok()?
                    .to_datetime(Time::midnight());
                continue;
            }
            if !self.day_matches(at.date()) {
                at = at.date().tomorrow().ok()?.to_datetime(Time::midnight());
                continue;
            }
            if self.hours & (1 << at.hour()) == 0 {
                let hour = at.with().minute(0).build().ok()?;
                at = hour.checked_add(1.hour()).ok()?;
                continue;
            }
            if self.minutes & (1 << at.minute()) == 0 {
                at = at.checked_add(1.minute()).ok()?;
                continue;
            }
            let zoned = at.to_zoned(zone.clone()).ok()?;
            let ms = zoned.timestamp().as_millisecond();
            if ms > after_ms {
                return Some(ms);
            }
            at = at.checked_add(1.minute()).ok()?;
        }
        None
    }
}

/// A schedule as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    pub id: i64,
    pub uuid: Option<String>,
    pub urls: Vec<String>,
    pub max_depth: u32,
    pub plugins: Option<Vec<String>>,
    pub rules: CrawlRules,
    /// Its period, for `--every`.
    pub every_ms: Option<i64>,
    /// Its cron expression, for `--cron`.
    pub cron: Option<String>,
    pub anchor_at: i64,
    /// Its next occurrence (unix ms).
    pub next_at: i64,
    pub paused_at: Option<i64>,
    pub created_at: i64,
    /// Occurrences that made a crawl, and those skipped.
    pub fired: u64,
    pub skipped: u64,
    /// What its last occurrence did.
    pub last_note: Option<String>,
    /// Its one URL is a `file://` to import at each occurrence (`--from FILE`): each crawl
    /// parses it anew into its seeds.
    pub import: bool,
    /// Its latest crawl and where that stands.
    pub last_crawl: Option<(i64, WorkStatus)>,
    /// Its crawls' tags, persona and parser.
    #[serde(flatten)]
    pub options: CrawlOptions,
    /// The time zone its cron is read in: the one it was added in (an IANA name; none: the
    /// host's, for a schedule added before zones were kept).
    pub zone: Option<String>,
}

impl Schedule {
    /// Why an occurrence makes no crawl, if it makes none: its previous crawl (`previous`: its id
    /// and where it is) is not sealed yet.
    pub fn skips(&self, previous: Option<(i64, WorkStatus)>) -> Option<String> {
        match previous {
            Some((id, status)) if status != WorkStatus::Sealed => {
                Some(format!("skipped: its previous crawl {id} still runs"))
            }
            _ => None,
        }
    }

    /// What an occurrence notes: what it did, and — with no `next` occurrence — that the
    /// schedule paused.
    pub fn note(did: String, next: Option<i64>) -> String {
        match next {
            Some(_) => did,
            None => format!("{did}; no further occurrence: paused"),
        }
    }

    /// The crawl an occurrence makes (one that imports a file has no seeds: its parser hooks
    /// read the file, `import_url`).
    pub fn occurrence(&self) -> CrawlSpec {
        CrawlSpec {
            urls: if self.import {
                Vec::new()
            } else {
                self.urls.clone()
            },
            depth: self.max_depth,
            plugins: self.plugins.clone(),
            rules: self.rules.clone(),
            input: None,
            options: self.options.clone(),
            index_only: false,
            env: Default::default(),
        }
    }

    /// The zone its occurrences are counted in: its own, else `fallback` (one added before zones
    /// were kept, or whose zone this host does not know).
    pub fn zone_or(&self, fallback: &TimeZone) -> TimeZone {
        (self.zone.as_deref())
            .and_then(|name| TimeZone::get(name).ok())
            .unwrap_or_else(|| fallback.clone())
    }

    /// How often it fires, as stored (a cron expression that no longer parses fires no more).
    pub fn cadence(&self) -> Option<Cadence> {
        match (&self.every_ms, &self.cron) {
            (Some(every_ms), _) => Some(Cadence::Every {
                every_ms: *every_ms,
                anchor_ms: self.anchor_at,
            }),
            (None, Some(cron)) => cron.parse().ok().map(Cadence::Cron),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_occurrence_is_skipped_while_the_previous_crawl_runs_and_the_last_one_says_so() {
        let schedule = |import: bool| Schedule {
            id: 1,
            uuid: None,
            urls: vec!["file:///b.html".into()],
            max_depth: 1,
            plugins: None,
            rules: CrawlRules::default(),
            every_ms: Some(60_000),
            cron: None,
            anchor_at: 0,
            next_at: 0,
            paused_at: None,
            created_at: 0,
            fired: 0,
            skipped: 0,
            last_note: None,
            import,
            last_crawl: None,
            options: Default::default(),
            zone: None,
        };
        let s = schedule(false);
        assert_eq!(s.skips(None), None);
        assert_eq!(s.skips(Some((4, WorkStatus::Sealed))), None);
        assert_eq!(
            s.skips(Some((4, WorkStatus::Started))).unwrap(),
            "skipped: its previous crawl 4 still runs"
        );
        assert_eq!(Schedule::note("crawl 5".into(), Some(1)), "crawl 5");
        assert_eq!(
            Schedule::note("crawl 5".into(), None),
            "crawl 5; no further occurrence: paused"
        );
        assert_eq!(s.occurrence().urls, ["file:///b.html"]);
        assert!(schedule(true).occurrence().urls.is_empty());
    }

    fn utc(text: &str) -> i64 {
        text.parse::<Timestamp>().unwrap().as_millisecond()
    }

    fn next(cron: &str, after: &str) -> String {
        let cron: Cron = cron.parse().unwrap();
        let ms = cron.next_after(utc(after), &TimeZone::UTC).unwrap();
        Timestamp::from_millisecond(ms).unwrap().to_string()
    }

    #[test]
    fn a_period_fires_after_the_moment_asked_about_aligned_to_its_start_once_per_miss() {
        let every = Cadence::Every {
            every_ms: 60_000,
            anchor_ms: 1_000,
        };
        let zone = TimeZone::UTC;
        assert_eq!(every.next_after(1_000, &zone), Some(61_000));
        assert_eq!(every.next_after(60_999, &zone), Some(61_000));
        assert_eq!(every.next_after(61_000, &zone), Some(121_000));
        // A daemon down for an hour: the next occurrence is the one after now, not 60 behind.
        assert_eq!(every.next_after(3_600_500, &zone), Some(3_601_000));
    }

    #[test]
    fn cron_expressions_name_their_minutes() {
        assert_eq!(
            next("0 3 * * *", "2026-11-26T17:00:00Z"),
            "2026-11-27T03:00:00Z"
        );
        assert_eq!(
            next("*/15 * * * *", "2026-11-26T17:00:00Z"),
            "2026-11-26T17:15:00Z"
        );
        assert_eq!(
            next("*/15 * * * *", "2026-11-26T17:14:59Z"),
            "2026-11-26T17:15:00Z"
        );
        assert_eq!(
            next("@hourly", "2026-11-26T17:00:00Z"),
            "2026-11-26T18:00:00Z"
        );
        assert_eq!(
            next("0 0 1 jan *", "2026-11-26T17:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        // Monday to Friday at 09:30: from a Friday evening, the next Monday.
        assert_eq!(
            next("30 9 * * mon-fri", "2026-11-27T18:00:00Z"),
            "2026-11-30T09:30:00Z"
        );
        // Day of month and day of week both restricted: either one.
        assert_eq!(
            next("0 0 1 * sun", "2026-11-26T17:00:00Z"),
            "2026-11-29T00:00:00Z"
        );
        // Sunday as 7.
        assert_eq!(
            next("0 0 * * 7", "2026-11-26T17:00:00Z"),
            "2026-11-29T00:00:00Z"
        );
        assert_eq!(
            next("0 12 29 2 *", "2026-11-26T17:00:00Z"),
            "2028-02-29T12:00:00Z"
        );
    }

    #[test]
    fn a_cron_expression_in_a_zone_fires_at_its_local_time() {
        let zone = TimeZone::get("Europe/Paris").unwrap();
        let cron: Cron = "0 3 * * *".parse().unwrap();
        let ms = cron.next_after(utc("2026-11-26T17:00:00Z"), &zone).unwrap();
        assert_eq!(
            Timestamp::from_millisecond(ms).unwrap().to_string(),
            "2026-11-27T02:00:00Z"
        );
    }

    #[test]
    fn bad_expressions_are_refused_naming_the_field() {
        for (text, says) in [
            ("0 3 * *", "has 4 fields"),
            ("61 * * * *", "minute: 61"),
            ("* 24 * * *", "hour: 24"),
            ("* * 0 * *", "day of month: 0"),
            ("* * * 13 *", "month: 13"),
            ("* * * * 8", "day of week: 8"),
            ("*/0 * * * *", "step"),
            ("5-1 * * * *", "backwards"),
            ("x * * * *", "not a number"),
        ] {
            let err = text.parse::<Cron>().unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
        let never = "0 0 30 2 *".parse::<Cron>().unwrap_err();
        assert!(never.contains("no moment"), "{never}");
    }
}
