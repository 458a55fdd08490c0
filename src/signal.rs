//! Signals: the one type abxd names a signal with, from the command line and the control
//! protocol down to `pidfd_send_signal`.
//!
//! Invariant: a [`Signal`] is always a signal the kernel knows (it wraps nix's enum); raw numbers
//! only exist at the edges — parsing (names or numbers), the protocol's wire form (the number, as
//! protocol version 1 has always sent it) and the conversion to rustix for pidfds.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A signal abxd sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Signal(nix::sys::signal::Signal);

impl Signal {
    pub const TERM: Signal = Signal(nix::sys::signal::Signal::SIGTERM);
    pub const KILL: Signal = Signal(nix::sys::signal::Signal::SIGKILL);
    pub const CONT: Signal = Signal(nix::sys::signal::Signal::SIGCONT);
    pub const INT: Signal = Signal(nix::sys::signal::Signal::SIGINT);
    pub const HUP: Signal = Signal(nix::sys::signal::Signal::SIGHUP);
    pub const CHLD: Signal = Signal(nix::sys::signal::Signal::SIGCHLD);

    /// The signal numbered `number`, if there is one.
    pub fn from_raw(number: i32) -> Option<Signal> {
        nix::sys::signal::Signal::try_from(number).ok().map(Signal)
    }

    pub fn as_raw(self) -> i32 {
        self.0 as i32
    }

    /// Its name, `SIGTERM`.
    pub fn name(self) -> &'static str {
        self.0.as_str()
    }

    /// For `pidfd_send_signal`.
    pub fn to_rustix(self) -> rustix::process::Signal {
        rustix::process::Signal::from_named_raw(self.as_raw())
            .unwrap_or(rustix::process::Signal::TERM)
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Signal {
    type Err = String;

    /// A name (`TERM`, `SIGTERM`, `term`) or a number.
    fn from_str(text: &str) -> Result<Signal, String> {
        if let Ok(number) = text.parse::<i32>() {
            return Signal::from_raw(number)
                .ok_or_else(|| format!("{number} is not a signal number"));
        }
        let name = text.to_ascii_uppercase();
        let name = if name.starts_with("SIG") {
            name
        } else {
            format!("SIG{name}")
        };
        name.parse::<nix::sys::signal::Signal>()
            .map(Signal)
            .map_err(|_| format!("{text:?} is not a signal name (e.g. TERM, INT, KILL)"))
    }
}

impl Serialize for Signal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i32(self.as_raw())
    }
}

impl<'de> Deserialize<'de> for Signal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Signal, D::Error> {
        let number = i32::deserialize(deserializer)?;
        Signal::from_raw(number)
            .ok_or_else(|| serde::de::Error::custom(format!("{number} is not a signal number")))
    }
}

/// The name of a raw signal number as the kernel reported it (a wait status), or the number.
pub fn name_of_raw(number: i32) -> String {
    Signal::from_raw(number)
        .map(|s| s.name().to_string())
        .unwrap_or_else(|| number.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_parse_to_the_same_signal() {
        for text in ["TERM", "SIGTERM", "term", "15"] {
            assert_eq!(text.parse::<Signal>(), Ok(Signal::TERM), "{text}");
        }
        assert!("TERMINATE".parse::<Signal>().is_err());
        assert!("0".parse::<Signal>().is_err());
        assert!("999".parse::<Signal>().is_err());
    }

    #[test]
    fn the_wire_form_is_the_number() {
        assert_eq!(serde_json::to_string(&Signal::KILL).unwrap(), "9");
        assert_eq!(serde_json::from_str::<Signal>("2").unwrap(), Signal::INT);
        assert!(serde_json::from_str::<Signal>("-4").is_err());
        assert_eq!(Signal::TERM.to_rustix(), rustix::process::Signal::TERM);
        assert_eq!(name_of_raw(9), "SIGKILL");
        assert_eq!(name_of_raw(64), "64");
    }
}
