//! A Prometheus histogram as `/metrics` writes it: counts per bucket, kept apart, written
//! cumulative with `+Inf`, `_sum` and `_count`.
//!
//! Invariant: an observation lands in the first bucket whose bound holds it (or only in the
//! `+Inf` count), and is counted once.

use std::fmt::Write;

/// A histogram: counts per bucket (not cumulative), their sum and count.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    buckets: Vec<u64>,
    pub(super) sum: f64,
    pub(super) count: u64,
}

impl Histogram {
    pub(super) fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            buckets: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    pub(super) fn observe(&mut self, value: f64) {
        if let Some(at) = self.bounds.iter().position(|&bound| value <= bound) {
            self.buckets[at] += 1;
        }
        self.sum += value;
        self.count += 1;
    }

    pub(super) fn write(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, count) in self.bounds.iter().zip(&self.buckets) {
            cumulative += count;
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braces = |labels: &str| match labels {
            "" => String::new(),
            _ => format!("{{{labels}}}"),
        };
        let _ = writeln!(out, "{name}_sum{} {}", braces(labels), self.sum);
        let _ = writeln!(out, "{name}_count{} {}", braces(labels), self.count);
    }
}
