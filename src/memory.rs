//! Giving the host back the pages of code the daemon is not running.
//!
//! A daemon's start-up runs code it will not run again for days: the config's parser, the
//! migrations, recovery, reconciliation; a request or a crawl runs code the idle loop does not.
//! The kernel maps an executable's pages up to 64 KiB at a time around each fault, so whatever
//! ran once stays mapped in the daemon and counted in its PSS, whether the loop needs it or not.
//! Once started, and each time it goes idle again, the daemon drops its mappings of those pages
//! (`MADV_DONTNEED`): the loop faults back in, from the page cache, only what it runs next, and
//! the rest stays in the page cache only, unmapped, where the kernel may reclaim it at no cost.
//!
//! Invariant: only mappings of this process's own executable that are not writable and hold no
//! page of their own (`Anonymous: 0`: nothing was copied on write there, as relocations are) are
//! dropped, so nothing is lost — their content is the file's, read again on demand from the
//! inode the mapping holds, also after a package upgrade replaced the file. It is advice: where
//! the kernel refuses it, nothing changes. They are looked for again at each release (one read of
//! `smaps`), so a page copied on write since (a debugger's breakpoint) is never dropped.

use procfs::process::{MMPermissions, MMapPath, Process};

/// Drops this process's mappings of its executable's read-only pages (see the module's text);
/// returns the bytes of address space advised.
pub fn release_code() -> u64 {
    let mut advised = 0;
    for (start, len) in own_read_only_mappings() {
        // SAFETY: the range is a whole mapping of this process, read-only, backed by its own
        // executable, with no page of its own: dropping it changes what is resident, never what
        // is read there.
        let dropped =
            unsafe { rustix::mm::madvise(start as *mut _, len, rustix::mm::Advice::LinuxDontNeed) };
        match dropped {
            Ok(()) => advised += len as u64,
            Err(err) => log::debug!("cannot drop the code mapped at {start:#x}: {err}"),
        }
    }
    advised
}

/// The mappings [`release_code`] may drop (see the module's invariant), as (start, length).
fn own_read_only_mappings() -> Vec<(usize, usize)> {
    let Some(own) = crate::own_exe::own_executable() else {
        return Vec::new();
    };
    let Ok(maps) = Process::myself().and_then(|me| me.smaps()) else {
        return Vec::new();
    };
    maps.into_iter()
        .filter(|map| map.pathname == MMapPath::Path(own.clone()))
        .filter(|map| !map.perms.contains(MMPermissions::WRITE))
        .filter(|map| map.extension.map.get("Anonymous").copied() == Some(0))
        .map(|map| {
            let (start, end) = map.address;
            (start as usize, (end - start) as usize)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The executable's read-only mappings, as (start, end), found apart from the code tested.
    fn read_only_code() -> Vec<(u64, u64)> {
        let own = crate::own_exe::own_executable().unwrap();
        let maps = Process::myself().unwrap().maps().unwrap();
        maps.into_iter()
            .filter(|map| map.pathname == MMapPath::Path(own.clone()))
            .filter(|map| !map.perms.contains(MMPermissions::WRITE))
            .map(|map| map.address)
            .collect()
    }

    /// Resident pages of those mappings, in KiB.
    fn resident_kib(mappings: &[(u64, u64)]) -> u64 {
        let maps = Process::myself().unwrap().smaps().unwrap();
        maps.into_iter()
            .filter(|map| mappings.contains(&map.address))
            .map(|map| map.extension.map["Rss"] / 1024)
            .sum()
    }

    /// Maps every page of those mappings.
    fn touch_all(mappings: &[(u64, u64)]) {
        for &(start, end) in mappings {
            for page in (start..end).step_by(4096) {
                // SAFETY: a readable mapping of this process, read where it is mapped.
                unsafe { std::ptr::read_volatile(page as *const u8) };
            }
        }
    }

    /// With every page of the test binary's code mapped, most leave the resident set, and the
    /// process goes on running (what it runs next faulted back in); and again at the next
    /// release.
    #[test]
    fn the_executables_read_only_mappings_leave_the_resident_set_at_each_release() {
        let mappings = read_only_code();
        for release in ["first", "second"] {
            touch_all(&mappings);
            let before = resident_kib(&mappings);
            let advised = release_code();
            let after = resident_kib(&mappings);
            assert!(advised > 0, "{release} release: no mapping was advised");
            assert!(
                after < before / 2,
                "{release} release: resident pages of the executable: {before} KiB before, \
                 {after} KiB after"
            );
        }
    }
}
