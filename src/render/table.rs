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
    /// Every row's cells, one after another (one buffer, not a `String` per cell: `ps` lays
    /// out ten cells for each of thousands of rows).
    text: String,
    /// Each row's cells: where each ends in `text` (it starts where the one before it ends),
    /// and its width.
    rows: Vec<[(usize, usize); N]>,
    widths: [usize; N],
    /// Columns left out when the table is rendered.
    hidden: [bool; N],
}

impl<const N: usize> Table<N> {
    pub fn new(header: [&'static str; N]) -> Table<N> {
        Table {
            header,
            text: String::new(),
            rows: Vec::new(),
            widths: header.map(visible_len),
            hidden: [false; N],
        }
    }

    /// Leaves column `column` out (one that would say the same on every row).
    pub fn hide(&mut self, column: usize) {
        self.hidden[column] = true;
    }

    pub fn add_row(&mut self, row: [impl AsRef<str>; N]) {
        let mut cells = [(0, 0); N];
        for ((span, widest), cell) in cells.iter_mut().zip(&mut self.widths).zip(&row) {
            let cell = cell.as_ref();
            let width = visible_len(cell);
            *widest = (*widest).max(width);
            self.text.push_str(cell);
            *span = (self.text.len(), width);
        }
        self.rows.push(cells);
    }

    /// Appends the table to `out`, every line starting with `indent`.
    pub fn render_into(&self, out: &mut String, indent: &str) {
        out.reserve(
            (self.rows.len() + 1) * (indent.len() + self.widths.iter().sum::<usize>() + 2 * N),
        );
        let header = self.header.iter().map(|&cell| (cell, visible_len(cell)));
        self.line_into(out, indent, header);
        let mut start = 0;
        for cells in &self.rows {
            let cells = cells.iter().map(|&(end, width)| {
                let cell = &self.text[start..end];
                start = end;
                (cell, width)
            });
            self.line_into(out, indent, cells);
        }
    }

    /// One line of `cells`, each with its width.
    fn line_into<'a>(
        &self,
        out: &mut String,
        indent: &str,
        cells: impl Iterator<Item = (&'a str, usize)>,
    ) {
        let start = out.len();
        out.push_str(indent);
        let last = (0..N).rev().find(|&c| !self.hidden[c]).unwrap_or(0);
        let mut first = true;
        for (column, (cell, width)) in cells.enumerate() {
            if self.hidden[column] {
                continue;
            }
            if !std::mem::take(&mut first) {
                out.push_str("  ");
            }
            out.push_str(cell);
            if column < last {
                let mut pad = self.widths[column].saturating_sub(width);
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
        table.add_row(["1", "orchestrator", "abxd --config x"]);
        table.add_row(["12", "└─ hook", ""]);
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
        table.add_row(["1", "alpha", "sleep 1"]);
        table.hide(1);
        assert_eq!(table.to_string(), "ID  COMMAND\n1   sleep 1\n");
        let mut last_hidden = Table::new(["ID", "HOST"]);
        last_hidden.add_row(["1", "alpha"]);
        last_hidden.hide(1);
        assert_eq!(last_hidden.to_string(), "ID\n1\n");
    }

    #[test]
    fn every_line_is_indented() {
        let mut table = Table::new(["A", "B"]);
        table.add_row(["x", "y"]);
        let mut out = String::new();
        table.render_into(&mut out, "    ");
        assert_eq!(out, "    A  B\n    x  y\n");
    }
}
