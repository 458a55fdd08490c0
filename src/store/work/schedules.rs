//! Schedules: a crawl made again at each occurrence (`abxctl schedule`), linked to it.
//!
//! Invariants: an occurrence is taken by moving the schedule's `next_at` from the value read to
//! the next occurrence after now, conditional on the value read, in the transaction that makes
//! its crawl — so on a fleet exactly one host fires it, and a schedule that was due while no
//! daemon ran fires once, not once per occurrence missed. An occurrence whose previous crawl is
//! not sealed makes no crawl: it is counted skipped, saying why. Times are the store's shared
//! clock (unix ms).

pub use crate::domain::Schedule;

use crate::domain::{Cadence, CrawlSpec, WorkStatus};
use crate::store::engine::sql::{args, columns, Db, Row, SqlError, Value};
use crate::store::work::{insert_crawl, json_column, NewCrawl};
use crate::store::Schedules;
use crate::store::StoreError;
use jiff::tz::TimeZone;

/// A schedule to add.
pub struct NewSchedule<'a> {
    /// The crawl each occurrence makes.
    pub spec: &'a CrawlSpec,
    /// `Every`'s anchor is ignored: periods are counted from when it is added.
    pub cadence: &'a Cadence,
    /// Its one URL is a `file://` to import at each occurrence (`--from FILE`).
    pub import: bool,
}

columns! {
    /// A schedule's columns (`s`) and its latest crawl's (`c`), as [`schedule_from_row`] reads
    /// them from [`FROM`].
    enum ScheduleColumn {
        id = "s.id", uuid = "s.uuid", urls = "s.urls", max_depth = "s.max_depth",
        plugins = "s.plugins", rules = "s.rules", every_ms = "s.every_ms", cron = "s.cron",
        anchor_at = "s.anchor_at", next_at = "s.next_at", paused_at = "s.paused_at",
        created_at = "s.created_at", fired = "s.fired", skipped = "s.skipped",
        last_note = "s.last_note", last_crawl_id = "c.id", last_crawl_status = "c.status",
        import = "s.import", options = "s.options", zone = "s.zone",
    }
}

/// The schedules and, beside each, its latest crawl (`c`).
const FROM: &str = "schedules s LEFT JOIN crawls c \
    ON c.id = (SELECT max(id) FROM crawls WHERE schedule_id = s.id)";

/// Reads a row selected with [`ScheduleColumn::LIST`] from [`FROM`].
fn schedule_from_row(row: &Row) -> Result<Schedule, SqlError> {
    use ScheduleColumn as C;
    let plugins: Option<String> = row.get(C::plugins)?;
    Ok(Schedule {
        id: row.get(C::id)?,
        uuid: row.get(C::uuid)?,
        urls: json_column(row, C::urls)?,
        max_depth: row.get(C::max_depth)?,
        plugins: plugins.and_then(|p| serde_json::from_str(&p).ok()),
        rules: json_column(row, C::rules)?,
        every_ms: row.get(C::every_ms)?,
        cron: row.get(C::cron)?,
        anchor_at: row.get(C::anchor_at)?,
        next_at: row.get(C::next_at)?,
        paused_at: row.get(C::paused_at)?,
        created_at: row.get(C::created_at)?,
        fired: row.get(C::fired)?,
        skipped: row.get(C::skipped)?,
        last_note: row.get(C::last_note)?,
        last_crawl: match (
            row.get::<Option<i64>>(C::last_crawl_id)?,
            row.get(C::last_crawl_status)?,
        ) {
            (Some(id), Some(status)) => Some((id, status)),
            _ => None,
        },
        import: row.get(C::import)?,
        options: json_column(row, C::options)?,
        zone: row.get(C::zone)?,
    })
}

/// What one due occurrence did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    pub schedule_id: i64,
    /// The crawl it made (`None`: skipped).
    pub crawl_id: Option<i64>,
    pub note: String,
}

/// The status of crawl `id`, read in `tx`.
fn crawl_status(tx: &Db, id: i64) -> Result<Option<WorkStatus>, StoreError> {
    let status: Option<String> =
        tx.query_value("SELECT status FROM crawls WHERE id = ?1", &args![id])?;
    Ok(status.and_then(|s| s.parse().ok()))
}

impl Schedules<'_> {
    /// Adds a schedule, its cron read in `zone` (kept with it); its first occurrence is the first
    /// after now. Returns its id and when that occurrence is (unix ms).
    pub fn add(&self, new: &NewSchedule<'_>, zone: &TimeZone) -> Result<(i64, i64), StoreError> {
        let now = self.store.shared_now();
        let (every_ms, cron) = match new.cadence {
            Cadence::Every { every_ms, .. } => (Some(*every_ms), None),
            Cadence::Cron(cron) => (None, Some(cron.to_string())),
        };
        let cadence = match new.cadence {
            Cadence::Every { every_ms, .. } => Cadence::Every {
                every_ms: *every_ms,
                anchor_ms: now,
            },
            cron => cron.clone(),
        };
        // (The command line refuses an expression that names no moment: see `Cron::parse`.)
        let next_at = cadence.next_after(now, zone).unwrap_or(i64::MAX);
        let spec = new.spec;
        let urls = serde_json::to_string(&spec.urls).expect("strings serialize");
        let plugins =
            (spec.plugins.as_ref()).map(|p| serde_json::to_string(p).expect("strings serialize"));
        let rules = serde_json::to_string(&spec.rules).expect("rules serialize");
        let options = serde_json::to_string(&spec.options).expect("options serialize");
        let id = self.store.commits.durably(|| {
            self.store.write(|tx| {
                Ok(tx
                    .query_one(
                        "INSERT INTO schedules (urls, max_depth, plugins, rules, every_ms, cron, \
                     anchor_at, next_at, created_at, uuid, import, options, zone) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?7, ?9, ?10, ?11, ?12) RETURNING id",
                        &args![
                            urls,
                            spec.depth,
                            plugins,
                            rules,
                            every_ms,
                            cron,
                            now,
                            next_at,
                            crate::uuid7::new(),
                            i64::from(new.import),
                            options,
                            zone.iana_name()
                        ],
                    )?
                    .get(0)?)
            })
        })?;
        Ok((id, next_at))
    }

    /// The schedules `condition` (on `s`, with `args`) selects, by id, each with its latest
    /// crawl and where that stands.
    fn schedules_where(
        &self,
        condition: &str,
        args: &[Value],
    ) -> Result<Vec<Schedule>, StoreError> {
        let sql = format!(
            "SELECT {} FROM {} WHERE {condition} ORDER BY s.id",
            ScheduleColumn::LIST,
            FROM
        );
        Ok(self.store.db().query_map(&sql, args, schedule_from_row)?)
    }

    /// Every schedule, by id.
    pub fn all(&self) -> Result<Vec<Schedule>, StoreError> {
        self.schedules_where("1 = 1", &[])
    }

    /// Removes schedule `id` (its crawls stay, no longer linked to it); whether it was there.
    pub fn remove(&self, id: i64) -> Result<bool, StoreError> {
        self.store.commits.durably(|| {
            self.store.write(|tx| {
                tx.execute(
                    "UPDATE crawls SET schedule_id = NULL WHERE schedule_id = ?1",
                    &args![id],
                )?;
                Ok(tx.execute("DELETE FROM schedules WHERE id = ?1", &args![id])? == 1)
            })
        })
    }

    /// Pauses schedule `id`, or resumes it — from its next occurrence after now (none missed
    /// while paused fires); whether it was there.
    pub fn set_paused(&self, id: i64, paused: bool, zone: &TimeZone) -> Result<bool, StoreError> {
        let now = self.store.shared_now();
        let found = self.schedules_where("s.id = ?1", &args![id])?;
        let Some(schedule) = found.into_iter().next() else {
            return Ok(false);
        };
        let next_at = match (paused, schedule.cadence()) {
            (false, Some(cadence)) => {
                let zone = schedule.zone_or(zone);
                cadence.next_after(now, &zone).unwrap_or(i64::MAX)
            }
            _ => schedule.next_at,
        };
        let paused_at = paused.then_some(now);
        self.store.commits.durably(|| {
            self.store.write(|tx| {
                Ok(tx.execute(
                    "UPDATE schedules SET paused_at = ?2, next_at = ?3 WHERE id = ?1",
                    &args![id, paused_at, next_at],
                )? == 1)
            })
        })
    }

    /// When the next schedule not paused is due (unix ms, the shared clock), if one is.
    pub fn next_at(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .store
            .db()
            .query_value(
                "SELECT min(next_at) FROM schedules WHERE paused_at IS NULL",
                &[],
            )?
            .flatten())
    }

    /// Takes every due occurrence (see the module's invariants), each in a transaction of its
    /// own: makes its crawl, or counts it skipped. Returns what each did.
    pub fn fire_due(&self, zone: &TimeZone) -> Result<Vec<Fired>, StoreError> {
        let now = self.store.shared_now();
        let due = self.schedules_where("s.paused_at IS NULL AND s.next_at <= ?1", &args![now])?;
        let mut fired = Vec::new();
        for schedule in due {
            let zone = schedule.zone_or(zone);
            let next = schedule.cadence().and_then(|c| c.next_after(now, &zone));
            let queue_now = self.store.queue_now();
            let taken = self.store.write(|tx| {
                let moved = tx.execute(
                    "UPDATE schedules SET next_at = ?3, paused_at = ?4 \
                     WHERE id = ?1 AND next_at = ?2 AND paused_at IS NULL",
                    &args![
                        schedule.id,
                        schedule.next_at,
                        next.unwrap_or(i64::MAX),
                        next.is_none().then_some(now)
                    ],
                )?;
                if moved != 1 {
                    // (Another host took it, or it was paused or removed meanwhile.)
                    return Ok(None);
                }
                let previous = match schedule.last_crawl {
                    Some((id, _)) => crawl_status(tx, id)?.map(|status| (id, status)),
                    None => None,
                };
                let (crawl_id, note) = match schedule.skips(previous) {
                    Some(why) => (None, why),
                    None => {
                        // (A file to import is parsed anew by each crawl's parser hooks.)
                        let import_url = schedule.urls.first().filter(|_| schedule.import);
                        let spec = schedule.occurrence();
                        let crawl = NewCrawl {
                            spec: &spec,
                            schedule_id: Some(schedule.id),
                            import_url: import_url.map(String::as_str),
                        };
                        let id = insert_crawl(tx, &crawl, queue_now, None)?;
                        (Some(id), format!("crawl {id}"))
                    }
                };
                let note = Schedule::note(note, next);
                tx.execute(
                    "UPDATE schedules SET fired = fired + ?2, skipped = skipped + ?3, \
                     last_note = ?4 WHERE id = ?1",
                    &args![
                        schedule.id,
                        i64::from(crawl_id.is_some()),
                        i64::from(crawl_id.is_none()),
                        note.as_str()
                    ],
                )?;
                Ok(Some(Fired {
                    schedule_id: schedule.id,
                    crawl_id,
                    note,
                }))
            })?;
            fired.extend(taken);
        }
        Ok(fired)
    }
}
