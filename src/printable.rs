//! Text from outside (page titles, URLs, argv, hook output) made safe to print: control
//! characters escaped, so a page cannot drive the operator's terminal.
//!
//! Invariant: what abxctl and `abxd run` print in plain text passes through here; the result
//! holds no C0 or C1 control character, no DEL (only `\n` and `\t` where [`text`] keeps them), and
//! every escaped character is shown as `\xNN` (or `\u{NNNN}`), so nothing is silently lost.
//! JSON output keeps the data as it is (JSON strings escape control characters themselves).

use std::borrow::Cow;
use std::fmt::Write;

/// One line: every control character escaped, newlines and tabs included.
pub fn line(raw: &str) -> Cow<'_, str> {
    escape(raw, |_| false)
}

/// Text of several lines: control characters escaped but for `\n` and `\t`.
pub fn text(raw: &str) -> Cow<'_, str> {
    escape(raw, |c| c == '\n' || c == '\t')
}

fn escape(raw: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && !keep(c);
    if !raw.chars().any(unsafe_char) {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len() + 8);
    for c in raw.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:04x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_bell_and_c1_controls_are_shown_escaped() {
        assert_eq!(line("a\x1b[2Jb\x07c"), "a\\x1b[2Jb\\x07c");
        assert_eq!(line("\u{9b}31m"), "\\x9b31m");
        assert_eq!(line("del\x7f"), "del\\x7f");
        assert_eq!(line("two\nlines\tand tab"), "two\\x0alines\\x09and tab");
        assert_eq!(text("two\nlines\tand tab\r"), "two\nlines\tand tab\\x0d");
    }

    #[test]
    fn clean_text_is_borrowed_unchanged() {
        assert!(matches!(line("Example Domain — ünïcode"), Cow::Borrowed(_)));
        assert!(matches!(text("a\nb"), Cow::Borrowed(_)));
    }
}
