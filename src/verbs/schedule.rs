//! `schedule add` and `schedule remove|pause|resume`: a crawl made again at each occurrence.

use super::{check_persona, check_plugins, check_seeds, with_defaults, Refusal, VerbError};
use crate::config::Config;
use crate::control::protocol::ScheduleAction;
use crate::domain::{Cadence, CrawlSpec};
use crate::store::{NewSchedule, Store, StoreError};
use jiff::tz::TimeZone;

/// A schedule judged fit to add: its crawl's spec (with `[crawl]`'s defaults merged in) and its
/// cadence.
#[derive(Debug, Clone)]
pub struct Admitted {
    spec: CrawlSpec,
    cadence: Cadence,
    import: bool,
    /// The zone its cron is read in: the one it was added in.
    zone: TimeZone,
}

impl Admitted {
    /// The crawl each of its occurrences makes.
    pub fn spec(&self) -> &CrawlSpec {
        &self.spec
    }
}

/// Judges a schedule of `spec`'s crawl, every `every_ms` or at the minutes of `cron` (one of
/// the two) read in time zone `zone` (an IANA name; none: this host's); with `import`, its one
/// URL is a `file://` to import at each occurrence.
pub fn admit(
    config: &Config,
    spec: CrawlSpec,
    (every_ms, cron): (Option<u64>, Option<&str>),
    zone: Option<&str>,
    import: bool,
) -> Result<Admitted, Refusal> {
    let spec = with_defaults(config, spec)?;
    if spec.urls.is_empty() {
        return Err(Refusal::malformed("a schedule needs at least one URL"));
    }
    if spec.input.is_some() {
        return Err(Refusal::malformed(
            "a schedule imports a file (--from FILE), not an input given whole",
        ));
    }
    check_seeds(&spec.urls)?;
    if import && !(spec.urls.len() == 1 && spec.urls[0].starts_with("file:///")) {
        return Err(Refusal::malformed(
            "a schedule that imports has one file:// URL: the file",
        ));
    }
    if let Some(why) = spec.rules.problem().or_else(|| spec.options.problem()) {
        return Err(Refusal::malformed(why));
    }
    let cadence = Cadence::named(every_ms, cron).map_err(Refusal::malformed)?;
    check_plugins(&config.plugins_dirs, &spec)?;
    check_persona(config, &spec)?;
    let zone = match zone {
        Some(name) => TimeZone::get(name).map_err(|_| {
            Refusal::malformed(format!(
                "no time zone {name:?} here (an IANA name: Europe/Paris)"
            ))
        })?,
        None => TimeZone::system(),
    };
    Ok(Admitted {
        spec,
        cadence,
        zone,
        import,
    })
}

/// Adds the schedule `admitted` describes; returns its id and its first occurrence (unix ms),
/// the first after now in its time zone.
pub fn add(store: &Store, admitted: &Admitted) -> Result<(i64, i64), StoreError> {
    let new = NewSchedule {
        spec: &admitted.spec,
        cadence: &admitted.cadence,
        import: admitted.import,
    };
    store.schedules().add(&new, &admitted.zone)
}

/// Removes, pauses or resumes schedule `id`; refused if there is none.
pub fn set(store: &Store, id: i64, action: ScheduleAction) -> Result<(), VerbError> {
    let zone = TimeZone::system();
    let found = match action {
        ScheduleAction::Remove => store.schedules().remove(id)?,
        ScheduleAction::Pause => store.schedules().set_paused(id, true, &zone)?,
        ScheduleAction::Resume => store.schedules().set_paused(id, false, &zone)?,
    };
    match found {
        true => Ok(()),
        false => Err(VerbError::Refused(Refusal::not_found(format!(
            "no schedule {id}"
        )))),
    }
}
