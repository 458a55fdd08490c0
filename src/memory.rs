//! Giving the host back the pages of code only the start-up needed.
//!
//! A daemon's start-up runs code it will not run again for days: the config's parser, the
//! migrations, recovery, reconciliation. The kernel maps an executable's pages up to 64 KiB at a
//! time around each fault, so by the time the loop first sleeps most of the executable is mapped
//! in the daemon and counted in its PSS, whether the loop needs it or not. Once started, the
//! daemon drops its mappings of those pages (`MADV_DONTNEED`): the loop faults back in, from the
//! page cache, only what it runs next (with the kernel's fault-around, that is still some
//! 60 % of them: see BENCHMARKS.md), and the rest stays in the page cache only, unmapped, where
//! the kernel may reclaim it at no cost.
//!
//! Invariant: only mappings of this process's own executable that are not writable and hold no
//! page of their own (`Anonymous: 0`: nothing was copied on write there, as relocations are) are
//! dropped, so nothing is lost — their content is the file's, read again on demand from the
//! inode the mapping holds, also after a package upgrade replaced the file. It is advice: where
//! the kernel refuses it, nothing changes.

use procfs::process::{MMPermissions, MMapPath, Process};

/// Drops this process's mappings of its executable's read-only pages (see the module's text);
/// returns the bytes of address space advised.
pub fn release_start_up_code() -> u64 {
    let Some(own) = crate::own_exe::own_executable() else {
        return 0;
    };
    let Ok(maps) = Process::myself().and_then(|me| me.smaps()) else {
        return 0;
    };
    let mut advised = 0;
    for map in maps {
        let MMapPath::Path(path) = &map.pathname else {
            continue;
        };
        let copied = map.extension.map.get("Anonymous").copied();
        if *path != own || map.perms.contains(MMPermissions::WRITE) || copied != Some(0) {
            continue;
        }
        let (start, end) = map.address;
        let len = (end - start) as usize;
        // SAFETY: the range is a whole mapping of this process, read-only, backed by its own
        // executable, with no page of its own: dropping it changes what is resident, never
        // what is read there.
        let dropped =
            unsafe { rustix::mm::madvise(start as *mut _, len, rustix::mm::Advice::LinuxDontNeed) };
        match dropped {
            Ok(()) => advised += len as u64,
            Err(err) => log::debug!("cannot drop {} at {start:#x}: {err}", path.display()),
        }
    }
    advised
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mappings [`release_start_up_code`] may drop, as (start, end).
    fn own_read_only_mappings() -> Vec<(u64, u64)> {
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

    /// With every page of the test binary's code mapped, most leave the resident set, and the
    /// process goes on running (what it runs next faulted back in).
    #[test]
    fn the_executables_read_only_mappings_leave_the_resident_set() {
        let mappings = own_read_only_mappings();
        for &(start, end) in &mappings {
            for page in (start..end).step_by(4096) {
                // SAFETY: a readable mapping of this process, read where it is mapped.
                unsafe { std::ptr::read_volatile(page as *const u8) };
            }
        }
        let before = resident_kib(&mappings);
        let advised = release_start_up_code();
        let after = resident_kib(&mappings);
        assert!(advised > 0, "no mapping of the executable was advised");
        assert!(
            after < before / 2,
            "resident pages of the executable: {before} KiB before, {after} KiB after"
        );
    }
}
