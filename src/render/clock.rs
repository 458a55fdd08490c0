//! How `ps` and `status` show moments and durations: a moment as a local clock shows it (as
//! ps(1)'s STIME), a duration compactly, numbers written without `core::fmt`.
//!
//! Invariant: the local zone is read once per process (`TZ`, else `/etc/localtime` as it is),
//! and a moment is shown against today's date in that zone.

/// A compact duration: `850ms`, `42s`, `3m05s`, `2h07m`, `3d04h`.
pub fn short_duration(ms: i64) -> String {
    let mut out = String::new();
    write_short_duration(&mut out, ms);
    out
}

/// [`short_duration`], appended to `out`.
pub(super) fn write_short_duration(out: &mut String, ms: i64) {
    if ms < 0 {
        out.push('-');
    }
    let ms = ms.unsigned_abs();
    let s = ms / 1000;
    let (high, high_unit, low, low_unit) = match s {
        _ if ms < 1000 => (ms, "ms", None, ""),
        0..=59 => (s, "s", None, ""),
        60..=3599 => (s / 60, "m", Some(s % 60), "s"),
        3600..=86399 => (s / 3600, "h", Some((s % 3600) / 60), "m"),
        _ => (s / 86400, "d", Some((s % 86400) / 3600), "h"),
    };
    push_decimal(out, high, 1);
    out.push_str(high_unit);
    if let Some(low) = low {
        push_decimal(out, low, 2);
        out.push_str(low_unit);
    }
}

/// Appends `n` in decimal, zeros before it up to `width` digits (at most 20, as many as `u64`
/// has): `write!(out, "{n:0width$}")` without the formatting machinery (`ps` writes half a dozen
/// numbers per row).
pub(super) fn push_decimal(out: &mut String, n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    let mut rest = n;
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let start = start.min(digits.len().saturating_sub(width));
    out.push_str(std::str::from_utf8(&digits[start..]).expect("ASCII digits"));
}

/// A moment as a local clock shows it, as ps(1)'s STIME: `14:03:27` today, `Nov21` before.
pub(super) fn clock_time(at_ms: i64, now_ms: i64) -> String {
    LocalClock::at(now_ms).time_of(at_ms)
}

/// The local clock at one moment, for showing many moments against it (`ps` shows one per
/// row: the zone and today's date are looked up once, not per row).
pub(super) struct LocalClock {
    zone: jiff::tz::TimeZone,
    today: Option<jiff::civil::Date>,
}

impl LocalClock {
    pub(super) fn at(now_ms: i64) -> LocalClock {
        let zone = local_zone();
        let today = jiff::Timestamp::from_millisecond(now_ms)
            .ok()
            .map(|now| zone.to_datetime(now).date());
        LocalClock { zone, today }
    }

    /// [`clock_time`] of `at_ms`.
    fn time_of(&self, at_ms: i64) -> String {
        let mut out = String::new();
        self.write_time_of(&mut out, at_ms);
        out
    }

    /// [`LocalClock::time_of`], appended to `out`.
    pub(super) fn write_time_of(&self, out: &mut String, at_ms: i64) {
        let Ok(at) = jiff::Timestamp::from_millisecond(at_ms) else {
            return out.push('-');
        };
        let at = self.zone.to_datetime(at);
        match self.today {
            Some(today) if at.date() == today => {
                for (i, part) in [at.hour(), at.minute(), at.second()]
                    .into_iter()
                    .enumerate()
                {
                    if i > 0 {
                        out.push(':');
                    }
                    push_decimal(out, part.unsigned_abs().into(), 2);
                }
            }
            _ => {
                out.push_str(MONTHS[at.month().unsigned_abs() as usize - 1]);
                push_decimal(out, at.day().unsigned_abs().into(), 2);
            }
        }
    }
}

/// The months as ps(1) and strftime's `%b` name them (in the C locale, as before).
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The local time zone, read once per process: `TZ` if set, else `/etc/localtime` as it is.
///
/// (jiff's `TimeZone::system` takes the name `/etc/localtime` links to and looks it up in the
/// zone database, which lists all of `/usr/share/zoneinfo` first: some 3 % of `abxctl ps`.)
pub(super) fn local_zone() -> jiff::tz::TimeZone {
    static ZONE: std::sync::OnceLock<jiff::tz::TimeZone> = std::sync::OnceLock::new();
    ZONE.get_or_init(|| {
        zone_from(std::env::var_os("TZ").as_deref(), || {
            std::fs::read("/etc/localtime").ok()
        })
    })
    .clone()
}

/// The zone of [`local_zone`], given `TZ` and how to read `/etc/localtime`.
fn zone_from(
    tz: Option<&std::ffi::OsStr>,
    localtime: impl FnOnce() -> Option<Vec<u8>>,
) -> jiff::tz::TimeZone {
    tz.is_none()
        .then(localtime)
        .flatten()
        .and_then(|tzif| jiff::tz::TimeZone::tzif("localtime", &tzif).ok())
        .unwrap_or_else(jiff::tz::TimeZone::system)
}

#[cfg(test)]
mod tests {
    use super::short_duration;

    #[test]
    fn the_local_zone_is_read_from_etc_localtime_unless_tz_names_one() {
        let berlin = || std::fs::read("/usr/share/zoneinfo/Europe/Berlin").ok();
        let summer = jiff::Timestamp::from_millisecond(1_751_371_200_000).unwrap();
        let winter = jiff::Timestamp::from_millisecond(1_735_732_800_000).unwrap();
        let zone = super::zone_from(None, berlin);
        assert_eq!(zone.to_offset(summer).seconds(), 2 * 3600);
        assert_eq!(zone.to_offset(winter).seconds(), 3600);
        // With TZ set, /etc/localtime is not read: the system's zone is TZ's.
        let zone = super::zone_from(Some("UTC".as_ref()), || panic!("read /etc/localtime"));
        assert_eq!(
            zone.to_offset(summer),
            jiff::tz::TimeZone::system().to_offset(summer)
        );
        assert_eq!(
            super::local_zone().to_offset(summer),
            jiff::tz::TimeZone::system().to_offset(summer)
        );
    }

    #[test]
    fn durations_are_compact() {
        assert_eq!(short_duration(850), "850ms");
        assert_eq!(short_duration(42_000), "42s");
        assert_eq!(short_duration(185_000), "3m05s");
        assert_eq!(short_duration(7_620_000), "2h07m");
        assert_eq!(short_duration(-3_000), "-3s");
        assert_eq!(short_duration(-185_000), "-3m05s");
    }

    #[test]
    fn numbers_are_written_with_the_zeros_asked_for() {
        let written = |n, width| {
            let mut out = String::from("x");
            super::push_decimal(&mut out, n, width);
            out
        };
        assert_eq!(written(0, 1), "x0");
        assert_eq!(written(5, 2), "x05");
        assert_eq!(written(123, 2), "x123");
        assert_eq!(written(u64::MAX, 1), format!("x{}", u64::MAX));
    }

    /// As ps(1)'s STIME, in the local zone: the time for a moment of today, the date before.
    #[test]
    fn a_moment_of_today_shows_its_time_and_an_earlier_day_its_date() {
        let now = 1_764_000_000_000;
        let today = super::clock_time(now, now);
        assert!(
            matches!(today.as_bytes(), [_, _, b':', _, _, b':', _, _]),
            "{today}"
        );
        let clock = super::LocalClock::at(now);
        assert_eq!(clock.time_of(now), today);
        let before = clock.time_of(now - 3 * 86_400_000);
        assert!(
            before.len() == 5
                && before[..3].chars().all(|c| c.is_ascii_alphabetic())
                && before[3..].chars().all(|c| c.is_ascii_digit()),
            "{before}"
        );
        assert_eq!(super::clock_time(i64::MAX, now), "-");
        // As jiff's strftime shows them (what `ps` printed before it wrote them by hand).
        let zone = super::local_zone();
        let civil = |ms| zone.to_datetime(jiff::Timestamp::from_millisecond(ms).unwrap());
        assert_eq!(today, civil(now).strftime("%H:%M:%S").to_string());
        let earlier = now - 40 * 86_400_000;
        assert_eq!(
            clock.time_of(earlier),
            civil(earlier).strftime("%b%d").to_string()
        );
    }
}
