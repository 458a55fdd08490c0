//! Colour for a terminal: failed in red, unverified in yellow — never in a pipe, never when
//! `NO_COLOR` is set (no-color.org).
//!
//! Invariant: colour is only ever ANSI SGR sequences around a word, so a width can be measured
//! by skipping them ([`visible_len`]) and a pipe gets the words alone.

use std::io::IsTerminal;

/// The colours abxd uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    Red,
    Yellow,
}

/// Whether what goes to standard output may be coloured.
pub fn for_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `text` in `colour` when `on`, else as it is.
pub fn paint(text: &str, colour: Colour, on: bool) -> String {
    if !on {
        return text.to_string();
    }
    let code = match colour {
        Colour::Red => 31,
        Colour::Yellow => 33,
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// How many characters of `text` show: its characters less any `ESC [ … m` sequence.
pub fn visible_len(text: &str) -> usize {
    // (Nearly every cell: plain ASCII, one byte a character.)
    if text.is_ascii() && !text.contains('\x1b') {
        return text.len();
    }
    let mut count = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::{paint, visible_len, Colour};

    #[test]
    fn painted_words_measure_as_the_words() {
        let red = paint("failed", Colour::Red, true);
        assert_ne!(red, "failed");
        assert_eq!(visible_len(&red), 6);
        assert_eq!(paint("failed", Colour::Red, false), "failed");
        assert_eq!(visible_len("└─ hook"), 7);
    }
}
