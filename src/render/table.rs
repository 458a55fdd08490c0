//! Plain text tables for a terminal or a pipe: a header and rows of cells, each column padded to
//! its widest cell, two spaces apart, no blanks at the end of a line.
//!
//! Invariant: a cell's width is its number of characters that show (colour sequences of
//! `paint` do not count). Cells are printable (escaped by
//! `printable::line` where they come from outside) and every column but the last holds narrow
//! text (ids, states, durations, hook names); the last column — a command line, a URL, an
//! output — may hold anything, and is never padded.

use super::paint::visible_len;

/// Padding, pushed a slice at a time rather than a character at a time.
const SPACES: &str = "                                ";

/// A table of `N` columns, laid out when it is rendered.
pub struct Table<const N: usize> {
    header: [&'static str; N],
    rows: Vec<[String; N]>,
    widths: [usize; N],
    /// Columns left out when the table is rendered.
    hidden: [bool; N],
}

impl<const N: usize> Table<N> {
    pub fn new(header: [&'static str; N]) -> Table<N> {
        Table {
            header,
            rows: Vec::new(),
            widths: header.map(visible_len),
            hidden: [false; N],
        }
    }

    /// Leaves column `column` out (one that would say the same on every row).
    pub fn hide(&mut self, column: usize) {
        self.hidden[column] = true;
    }

    pub fn add_row(&mut self, row: [String; N]) {
        for (width, cell) in self.widths.iter_mut().zip(&row) {
            *width = (*width).max(visible_len(cell));
        }
        self.rows.push(row);
    }

    /// Appends the table to `out`, every line starting with `indent`.
    pub fn render_into(&self, out: &mut String, indent: &str) {
        out.reserve(
            (self.rows.len() + 1) * (indent.len() + self.widths.iter().sum::<usize>() + 2 * N),
        );
        self.line_into(out, indent, self.header.iter().copied());
        for row in &self.rows {
            self.line_into(out, indent, row.iter().map(String::as_str));
        }
    }

    fn line_into<'a>(&self, out: &mut String, indent: &str, cells: impl Iterator<Item = &'a str>) {
        let start = out.len();
        out.push_str(indent);
        let last = (0..N).rev().find(|&c| !self.hidden[c]).unwrap_or(0);
        let mut first = true;
        for (column, cell) in cells.enumerate() {
            if self.hidden[column] {
                continue;
            }
            if !std::mem::take(&mut first) {
                out.push_str("  ");
            }
            out.push_str(cell);
            if column < last {
                let mut pad = self.widths[column].saturating_sub(visible_len(cell));
                while pad > 0 {
                    let spaces = pad.min(SPACES.len());
                    out.push_str(&SPACES[..spaces]);
                    pad -= spaces;
                }
            }
        }
        let end = out[start..].trim_end().len() + start;
        out.truncate(end);
        out.push('\n');
    }
}

impl<const N: usize> std::fmt::Display for Table<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = String::new();
        self.render_into(&mut out, "");
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::Table;

    #[test]
    fn columns_are_padded_to_their_widest_cell_and_lines_end_without_blanks() {
        let mut table = Table::new(["ID", "KIND", "COMMAND"]);
        table.add_row(["1".into(), "orchestrator".into(), "abxd --config x".into()]);
        table.add_row(["12".into(), "└─ hook".into(), "".into()]);
        assert_eq!(
            table.to_string(),
            "ID  KIND          COMMAND\n\
             1   orchestrator  abxd --config x\n\
             12  └─ hook\n"
        );
    }

    #[test]
    fn a_hidden_column_is_left_out_with_its_gap() {
        let mut table = Table::new(["ID", "HOST", "COMMAND"]);
        table.add_row(["1".into(), "alpha".into(), "sleep 1".into()]);
        table.hide(1);
        assert_eq!(table.to_string(), "ID  COMMAND\n1   sleep 1\n");
        let mut last_hidden = Table::new(["ID", "HOST"]);
        last_hidden.add_row(["1".into(), "alpha".into()]);
        last_hidden.hide(1);
        assert_eq!(last_hidden.to_string(), "ID\n1\n");
    }

    #[test]
    fn every_line_is_indented() {
        let mut table = Table::new(["A", "B"]);
        table.add_row(["x".into(), "y".into()]);
        let mut out = String::new();
        table.render_into(&mut out, "    ");
        assert_eq!(out, "    A  B\n    x  y\n");
    }
}
