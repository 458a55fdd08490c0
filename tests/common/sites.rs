//! Loopback "sites" for politeness: each a server on an address of its own (127.0.0.x) that
//! records when each request arrived and when its answer was sent, holds each answer a while, and
//! can answer 429 with `Retry-After` — what a site sees of abxd, read from its own log.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One request as a site saw it: its path, when it arrived and when its answer was sent
/// (wall-clock ms).
#[derive(Debug, Clone)]
pub struct Visit {
    pub path: String,
    pub arrived: u128,
    pub ended: u128,
}

/// A loopback site: answers every GET after `hold`, with 429 and `Retry-After` for the first
/// `throttled` requests.
pub struct Site {
    pub address: String,
    pub visits: Arc<Mutex<Vec<Visit>>>,
    /// Requests that arrived, answered or not.
    pub arrived: Arc<Mutex<usize>>,
}

fn wall_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

impl Site {
    pub fn start(ip: &str, hold: Duration, throttled: usize, retry_after: u64) -> Site {
        let listener = TcpListener::bind((ip, 0)).expect("bind a loopback address");
        let address = listener.local_addr().unwrap().to_string();
        let visits = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&visits);
        let served = Arc::new(Mutex::new(0usize));
        let arrived = Arc::clone(&served);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (seen, served) = (Arc::clone(&seen), Arc::clone(&served));
                std::thread::spawn(move || {
                    serve(stream, hold, (throttled, retry_after), seen, served)
                });
            }
        });
        Site {
            address,
            visits,
            arrived,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.address)
    }

    pub fn visits(&self) -> Vec<Visit> {
        let mut visits = self.visits.lock().unwrap().clone();
        visits.sort_by_key(|v| v.arrived);
        visits
    }
}

fn serve(
    stream: TcpStream,
    hold: Duration,
    (throttled, retry_after): (usize, u64),
    seen: Arc<Mutex<Vec<Visit>>>,
    served: Arc<Mutex<usize>>,
) {
    let arrived = wall_ms();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
    let nth = {
        let mut served = served.lock().unwrap();
        *served += 1;
        *served
    };
    std::thread::sleep(hold);
    let answer = match nth <= throttled {
        true => format!(
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: {retry_after}\r\n\
             Content-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        false => "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 13\r\n\
                  Connection: close\r\n\r\n<p>page</p>\r\n"
            .to_string(),
    };
    let mut stream = stream;
    let _ = stream.write_all(answer.as_bytes());
    let _ = stream.flush();
    seen.lock().unwrap().push(Visit {
        path,
        arrived,
        ended: wall_ms(),
    });
}

/// The most requests a site had open at once.
pub fn most_at_once(visits: &[Visit]) -> usize {
    let mut edges: Vec<(u128, i32)> = Vec::new();
    for visit in visits {
        edges.push((visit.arrived, 1));
        // (An answer sent at the same ms as another's arrival is over before it.)
        edges.push((visit.ended, -1));
    }
    edges.sort_by_key(|&(at, change)| (at, change));
    let (mut open, mut most) = (0i32, 0i32);
    for (_, change) in edges {
        open += change;
        most = most.max(open);
    }
    most as usize
}

/// The smallest gap between two arrivals at one site.
pub fn closest_starts(visits: &[Visit]) -> Option<u128> {
    visits
        .windows(2)
        .map(|pair| pair[1].arrived - pair[0].arrived)
        .min()
}
