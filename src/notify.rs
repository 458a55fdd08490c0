//! Talking to systemd (`Type=notify`): READY, WATCHDOG, STOPPING and STATUS.
//!
//! Invariants: nothing is sent unless `NOTIFY_SOCKET` is set (so it has no effect outside
//! systemd); READY=1 goes out once, only after recovery has finished and the control socket
//! listens; watchdog pings come from the event loop itself, at half the interval systemd asked
//! for, so a hung loop stops them; STATUS is sent only when it changes.

use sd_notify::NotifyState;
use std::time::{Duration, Instant};

pub struct Notifier {
    enabled: bool,
    ready: bool,
    watchdog: Option<Duration>,
    next_ping: Option<Instant>,
    status: String,
}

impl Notifier {
    /// Reads `NOTIFY_SOCKET` and `WATCHDOG_USEC` / `WATCHDOG_PID` from the environment.
    pub fn from_env() -> Notifier {
        let enabled = std::env::var_os("NOTIFY_SOCKET").is_some();
        // As sd_watchdog_enabled(3): WATCHDOG_USEC asks for pings; WATCHDOG_PID, when set, must
        // name this process.
        let for_us = std::env::var("WATCHDOG_PID")
            .map(|pid| pid.trim() == std::process::id().to_string())
            .unwrap_or(true);
        let watchdog = std::env::var("WATCHDOG_USEC")
            .ok()
            .and_then(|usec| usec.trim().parse::<u64>().ok())
            .filter(|&usec| enabled && for_us && usec > 0)
            .map(|usec| Duration::from_micros(usec) / 2);
        Notifier {
            enabled,
            ready: false,
            watchdog,
            next_ping: None,
            status: String::new(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn send(&self, states: &[NotifyState<'_>]) {
        if let Err(err) = sd_notify::notify(false, states) {
            log::warn!("cannot notify systemd: {err}");
        }
    }

    /// READY=1, once.
    pub fn ready(&mut self, status: String) {
        if !self.enabled || self.ready {
            return;
        }
        self.ready = true;
        self.send(&[NotifyState::Ready, NotifyState::Status(&status)]);
        self.status = status;
        self.next_ping = self.watchdog.map(|interval| Instant::now() + interval);
    }

    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// STOPPING=1.
    pub fn stopping(&mut self) {
        if self.enabled {
            self.send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
        }
    }

    /// STATUS=…, when it changed.
    pub fn status(&mut self, status: String) {
        if self.enabled && self.ready && status != self.status {
            self.send(&[NotifyState::Status(&status)]);
            self.status = status;
        }
    }

    /// When the loop must wake to ping the watchdog.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.next_ping
    }

    /// WATCHDOG=1 if it is time.
    pub fn ping_if_due(&mut self, now: Instant) {
        if let (Some(at), Some(interval)) = (self.next_ping, self.watchdog) {
            if at <= now {
                self.send(&[NotifyState::Watchdog]);
                self.next_ping = Some(now + interval);
            }
        }
    }
}
