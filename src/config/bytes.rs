//! Sizes in the config file: a number of bytes, or a number with a binary suffix ("512M").

use serde::{Deserialize, Deserializer, Serializer};

/// Parses "4096", "512K", "512M", "2G", "1.5G" (powers of 1024; "KiB"-style, "bytes" and lower
/// case too, as ArchiveBox reads sizes).
pub fn parse(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let invalid = || format!("invalid size {text:?}: write it like \"512M\" or \"2G\"");
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = text[digits.len()..].to_ascii_uppercase();
    let scale: u64 = match suffix.trim_end_matches("IB").trim_end_matches('B') {
        "" | "BYTE" | "BYTES" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return Err(invalid()),
    };
    let digits = digits.trim();
    if let Ok(number) = digits.parse::<u64>() {
        return (number.checked_mul(scale)).ok_or_else(|| format!("size {text:?} is too large"));
    }
    // ("1.5G", as ArchiveBox takes it: a fraction that comes to whole bytes.)
    let fraction: f64 = match digits.parse() {
        Ok(n) if digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') => n,
        _ => return Err(invalid()),
    };
    let bytes = fraction * scale as f64;
    if bytes.fract() != 0.0 {
        return Err(format!("size {text:?} is not a whole number of bytes"));
    }
    match bytes < u64::MAX as f64 {
        true => Ok(bytes as u64),
        false => Err(format!("size {text:?} is too large")),
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Size {
    Number(u64),
    Text(String),
}

pub fn optional<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    match Size::deserialize(deserializer)? {
        Size::Number(n) => Ok(Some(n)),
        Size::Text(text) => parse(&text).map(Some).map_err(serde::de::Error::custom),
    }
}

pub fn size<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    optional(deserializer).map(|n| n.unwrap_or(0))
}

pub fn size_text<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(*value)
}

pub fn optional_text<S: Serializer>(value: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(n) => serializer.serialize_u64(*n),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_binary_suffixes() {
        assert_eq!(parse("4096"), Ok(4096));
        assert_eq!(parse("512K"), Ok(512 << 10));
        assert_eq!(parse("512M"), Ok(512 << 20));
        assert_eq!(parse("2g"), Ok(2 << 30));
        assert_eq!(parse("1GiB"), Ok(1 << 30));
        assert!(parse("12X").unwrap_err().contains("\"12X\""));
        assert!(parse("M").is_err());
        // As ArchiveBox reads its sizes: "45 mb", "1.5gb", "100 bytes".
        assert_eq!(parse("45 mb"), Ok(45 << 20));
        assert_eq!(parse("1.5gb"), Ok(3 << 29));
        assert_eq!(parse("100 bytes"), Ok(100));
        assert!(parse("0.3b").unwrap_err().contains("whole number"));
        assert!(parse("1.2.3M").is_err());
    }
}
