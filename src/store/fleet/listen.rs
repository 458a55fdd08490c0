//! Wake-ups on a shared store: a crawl or snapshot that any host added, put back or sealed,
//! and a schedule any host added, changed, fired or removed, wakes the event loops that may act
//! on it, through PostgreSQL's LISTEN/NOTIFY — no polling.
//!
//! Invariants: the server notifies (a trigger, see the migrations) whenever a crawl or
//! snapshot is inserted or its status is written, or a schedule's next occurrence or pause is,
//! once per transaction; a listener is a thread
//! of its own with a connection of its own that only waits and wakes the loop's `mio::Waker`
//! (never touching the store the loop uses); a lost connection is made again with back-off,
//! and the loop is woken once it is back (what changed meanwhile was not heard); the thread
//! waits out its back-off on its [`Listening`] handle, and ends there once the loop dropped it.
//! An SQLite store has no listener: one host, whose own loops see their own changes.

use crate::config::{Location, Server};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// The channel the migrations' trigger notifies on.
pub const WORK_CHANNEL: &str = "abxd_work";

/// The longest wait between two attempts to listen again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The token the wake-ups arrive with in the loop (as `Event::Ready`).
pub const WORK_CHANGED: mio::Token = mio::Token(usize::MAX);

/// A listener's thread, for as long as this is kept: dropped, the thread ends at its next
/// back-off (or with the process, while it waits on the server).
pub struct Listening {
    _stop: Option<Sender<()>>,
}

/// Wakes the loop of `registry` (with [`WORK_CHANGED`]) whenever work changes on the shared
/// store at `location`, from a thread of its own, while the loop keeps the returned handle.
/// Nothing for a store of one host.
pub fn wake_on_work_changes(
    location: &Location,
    registry: &mio::Registry,
) -> std::io::Result<Listening> {
    let Location::Postgres(server) = location else {
        return Ok(Listening { _stop: None });
    };
    let waker = Arc::new(mio::Waker::new(registry, WORK_CHANGED)?);
    let server = server.clone();
    let (stop, stopped) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("abxd-listen".into())
        .spawn(move || listen(&server, &waker, &stopped));
    spawned.map(|_| Listening { _stop: Some(stop) })
}

/// Listens, and after each lost connection waits out the back-off — unless the handle is
/// dropped meanwhile, which ends it.
fn listen(server: &Server, waker: &mio::Waker, stopped: &Receiver<()>) {
    let mut backoff = Duration::from_millis(250);
    loop {
        match listen_once(server, waker) {
            Ok(()) => backoff = Duration::from_millis(250),
            Err(why) => log::debug!("listening for work: {why}"),
        }
        match stopped.recv_timeout(backoff) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// A client error as people read it.
fn said(err: postgres::Error) -> String {
    crate::store::engine::sql::SqlError::from(err).to_string()
}

/// Listens on one connection until it is lost.
fn listen_once(server: &Server, waker: &mio::Waker) -> Result<(), String> {
    let mut client = server.client()?.connect().map_err(said)?;
    client
        .batch_execute(&format!("LISTEN {WORK_CHANNEL}"))
        .map_err(said)?;
    // What changed while nobody listened was not heard.
    let _ = waker.wake();
    let mut notifications = client.notifications();
    let mut heard = notifications.blocking_iter();
    while let Some(notification) =
        postgres::fallible_iterator::FallibleIterator::next(&mut heard).map_err(said)?
    {
        log::trace!("work changed: {}", notification.payload());
        let _ = waker.wake();
    }
    Ok(())
}
