//! A page's event stream: its live part sent again each time it changed.
//!
//! Invariant: an open stream looks once a second ([`LOOK_EVERY`]) and sends only what changed (a
//! comment after [`KEEPALIVE_LOOKS`] quiet looks, so a client that left is noticed); it ends
//! when the client closes its side, a write fails, or what the page shows is gone. With no
//! stream open, nothing of the web view wakes.

use super::listener::Connection;
use super::route::View;
use super::{http, live, open_store, Shared};
use std::io::{Read, Write};
use std::time::Duration;

/// How often an open event stream looks for changes.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// After this many looks with nothing to send, a stream sends a comment (so a client that went
/// away is noticed by the failed write).
const KEEPALIVE_LOOKS: u32 = 15;

/// A stream of `view`'s live part: one event now, then one each time it changed, looked at
/// once a second, until the client goes or what it shows is gone.
pub(super) fn stream_events(mut connection: Connection, shared: &Shared, view: View) {
    let head = format!("{}retry: 3000\n\n", http::event_stream_head());
    if connection.write_all(head.as_bytes()).is_err() {
        return;
    }
    let store = match open_store(shared) {
        Ok(store) => store,
        Err(err) => {
            log::warn!("web: event stream: {err}");
            return;
        }
    };
    let mut sent = String::new();
    let mut quiet_looks = 0;
    loop {
        let message = match live(&store, shared, view) {
            Ok(Some(live)) if live == sent => None,
            Ok(Some(live)) => {
                let event = http::event("live", &live);
                sent = live;
                Some(event)
            }
            Ok(None) => return,
            Err(err) => {
                log::debug!("web: event stream: {err}");
                None
            }
        };
        let message = message.or_else(|| {
            quiet_looks += 1;
            (quiet_looks >= KEEPALIVE_LOOKS).then(|| ": still here\n\n".to_string())
        });
        if let Some(message) = message {
            quiet_looks = 0;
            if connection.write_all(message.as_bytes()).is_err() {
                return;
            }
        }
        if client_left(&mut connection, LOOK_EVERY) {
            return;
        }
    }
}

/// Waits up to `wait` for the client to say something; whether it closed the connection.
fn client_left(connection: &mut Connection, wait: Duration) -> bool {
    let timeout = rustix::event::Timespec {
        tv_sec: wait.as_secs() as i64,
        tv_nsec: wait.subsec_nanos() as i64,
    };
    let mut fds = [rustix::event::PollFd::new(
        connection,
        rustix::event::PollFlags::IN,
    )];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(0) => false,
        Ok(_) => {
            let mut buf = [0u8; 512];
            !matches!(connection.read(&mut buf), Ok(n) if n > 0)
        }
        Err(err) => err != rustix::io::Errno::INTR,
    }
}
