//! UUIDv7 ids (RFC 9562), as abx-dl and ArchiveBox give crawls, snapshots, results and
//! processes: 32 lower-case hex digits without dashes, time-ordered.
//!
//! Invariant: the first 48 bits are the Unix time in milliseconds, then the version (7), 12
//! random bits, the variant (binary 10) and 62 random bits from the kernel's generator.

/// A new UUIDv7, as 32 hex digits.
pub fn new() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut random = [0u8; 10];
    let mut filled = 0;
    while filled < random.len() {
        match rustix::rand::getrandom(&mut random[filled..], rustix::rand::GetRandomFlags::empty())
        {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            // (Never on Linux ≥ 3.17 once booted; the time alone still orders it.)
            Err(_) => break,
        }
    }
    of(millis, random)
}

/// The UUIDv7 of `millis` with `random` bits.
fn of(millis: u64, random: [u8; 10]) -> String {
    let mut bytes = [0u8; 16];
    bytes[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    bytes[6..].copy_from_slice(&random);
    bytes[6] = 0x70 | (bytes[6] & 0x0f);
    bytes[8] = 0x80 | (bytes[8] & 0x3f);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid7_carries_its_time_version_and_variant() {
        let id = of(0x0190_0000_0001, [0xff; 10]);
        assert_eq!(id, "019000000001".to_string() + "7fffbfffffffffffffff");
        let fresh = new();
        assert_eq!(fresh.len(), 32);
        assert_eq!(&fresh[12..13], "7");
        assert!(matches!(&fresh[16..17], "8" | "9" | "a" | "b"), "{fresh}");
        assert_ne!(new(), new());
    }
}
