//! A real headless Chromium driven through the DevTools protocol over a pipe
//! (`--remote-debugging-pipe`: JSON messages ended by NUL on fds 3 and 4), so a test reads a
//! page's live DOM as a person's browser has it, with no WebSocket client and nothing from the
//! network.
//!
//! Every process it starts carries the test's tag; `Drop` kills them by pid (see
//! `kill_tagged`).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long one protocol call may take.
const CALL_WAIT: Duration = Duration::from_secs(30);

/// The Chromium on this machine, if there is one.
pub fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .ok()?;
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
        })
}

pub struct Browser {
    child: Child,
    tag: String,
    to_browser: std::fs::File,
    from_browser: BufReader<std::fs::File>,
    next_id: u64,
    /// The session of the page it opened.
    session: String,
    _profile: tempfile::TempDir,
}

/// A pipe's two ends, each at a descriptor above 10 (so neither is 3 or 4, which the child's
/// ends are moved to), both closed on exec.
fn pipe() -> (OwnedFd, OwnedFd) {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let high = |fd: OwnedFd| {
        let raw = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(10)).unwrap();
        // SAFETY: `raw` was just returned by fcntl, open and owned by nobody else.
        unsafe { OwnedFd::from_raw_fd(raw) }
    };
    (high(read), high(write))
}

impl Browser {
    /// Starts Chromium (headless, its own profile, tagged `tag`) on `url`.
    pub fn open(chromium: &Path, tag: &str, url: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (commands_read, commands_write) = pipe();
        let (answers_read, answers_write) = pipe();
        let (child_in, child_out) = (commands_read.as_raw_fd(), answers_write.as_raw_fd());
        let mut command = Command::new(chromium);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--remote-debugging-pipe",
                "--window-size=1280,900",
                "about:blank",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .env(super::TAG_ENV, tag)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only dup2, which is async-signal-safe; the sources are
        // above 10, so they are never the targets.
        unsafe {
            command.pre_exec(move || {
                for (from, to) in [(child_in, 3), (child_out, 4)] {
                    if nix::libc::dup2(from, to) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("start chromium");
        drop((commands_read, answers_write));
        let mut browser = Browser {
            child,
            tag: tag.to_string(),
            to_browser: std::fs::File::from(commands_write),
            from_browser: BufReader::new(std::fs::File::from(answers_read)),
            next_id: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({ "url": url }), false);
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = browser.call(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
            false,
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        // (A page made by the protocol may have no size yet: screenshots need one.)
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false }),
            true,
        );
        browser
    }

    /// Calls `method` (on the page's session if `on_page`) and returns its result.
    fn call(&mut self, method: &str, params: Value, on_page: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if on_page {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to_browser.write_all(&bytes).unwrap();
        let deadline = Instant::now() + CALL_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "chromium did not answer {method} in time");
            if self.from_browser.buffer().is_empty() {
                let fd = self.from_browser.get_ref();
                let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
                let timeout = rustix::event::Timespec {
                    tv_sec: left.as_secs() as i64,
                    tv_nsec: left.subsec_nanos() as i64,
                };
                if rustix::event::poll(&mut fds, Some(&timeout)).unwrap_or(0) == 0 {
                    continue;
                }
            }
            let mut raw = Vec::new();
            let read = self.from_browser.read_until(0, &mut raw).unwrap();
            assert!(read > 0, "chromium closed its pipe during {method}");
            raw.pop();
            let answer: Value = serde_json::from_slice(&raw).unwrap();
            if answer["id"] == json!(id) {
                assert!(
                    answer.get("error").is_none(),
                    "{method} failed: {}",
                    answer["error"]
                );
                return answer["result"].clone();
            }
        }
    }

    /// The value of `expression` evaluated in the page (JSON-serializable values only).
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true }),
            true,
        );
        result["result"]["value"].clone()
    }

    /// Loads `url` in the page.
    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }), true);
    }

    /// A PNG of the page as it is now (its viewport), written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        // (A page not laid out yet has no width to capture: wait until it has.)
        let laid_out = "document.documentElement.getBoundingClientRect().width > 0";
        super::wait_until("the page to be laid out", CALL_WAIT, || {
            (self.eval(laid_out) == json!(true)).then_some(())
        });
        let shot = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": false }),
            true,
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        super::kill_tagged(&self.tag);
    }
}

/// Standard base64 (with padding), as the protocol sends binary data.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c) << (18 - 6 * i);
        }
        let len = chunk.len() * 6 / 8;
        out.extend_from_slice(&n.to_be_bytes()[1..1 + len]);
    }
    out
}
