//! A filesystem that can lose power: the test support of `tests/power_cut.rs`, after Jepsen's
//! LazyFS. It passes a backing directory through FUSE, but keeps every byte written to a file in
//! its own memory until that file is synced (`fsync`/`fdatasync`); [`LazyFs::cut_power`] drops
//! every byte not synced, as a power cut drops what the kernel had not written.
//!
//! Invariants: what a file reads is its backing file's bytes overlaid by what was written since
//! its last sync (whole 4 KiB blocks, and its length), so a reader sees every write at once; a
//! sync writes the file's overlay to its backing file and `fdatasync`s it; a cut forgets every
//! overlay, so the backing directory is exactly what was synced. Names (create, rename, unlink,
//! mkdir) are applied to the backing directory at once: the cut loses file contents, not names
//! (a journaling filesystem's metadata, in ordered mode, is the model; it is the weaker half of
//! LazyFS's, said in docs/design.md). Remounting after a cut ([`Mount::cut_power`]) drops the
//! kernel's page cache too. The backing filesystem gives a freed inode number to the next file
//! at once, so names are looked up and changed one at a time, and a file unlinked or replaced
//! leaves nothing of its own behind for the next holder of its number.

#![allow(dead_code)]

use fuser::{
    AccessFlags, BsdFileFlags, Config, Errno, FileAttr, FileHandle, FileType, Filesystem,
    FopenFlags, Generation, INodeNo, LockOwner, MountOption, OpenFlags, RenameFlags, ReplyAttr,
    ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, SessionACL, TimeOrNow, WriteFlags,
};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

const BLOCK: u64 = 4096;
/// No attribute or name is cached by the kernel: every one is asked of the overlay.
const TTL: Duration = Duration::ZERO;

/// What was written to one file since its last sync.
#[derive(Default)]
struct Overlay {
    /// Whole blocks written since the last sync, by block index.
    blocks: BTreeMap<u64, Vec<u8>>,
    /// The file's length now.
    len: u64,
    /// Below this offset the backing file's bytes still count; above it (up to `len`) a
    /// truncation since the sync made them zeros.
    backing_valid: u64,
}

impl Overlay {
    fn over(backing: &File) -> io::Result<Overlay> {
        let len = backing.metadata()?.len();
        Ok(Overlay {
            blocks: BTreeMap::new(),
            len,
            backing_valid: len,
        })
    }

    /// The block `index` as the file has it now.
    fn block(&self, backing: &File, index: u64) -> io::Result<Vec<u8>> {
        if let Some(block) = self.blocks.get(&index) {
            return Ok(block.clone());
        }
        let mut block = vec![0; BLOCK as usize];
        let start = index * BLOCK;
        if start < self.backing_valid {
            let want = (self.backing_valid - start).min(BLOCK) as usize;
            let mut read = 0;
            while read < want {
                let n = backing.read_at(&mut block[read..want], start + read as u64)?;
                if n == 0 {
                    break;
                }
                read += n;
            }
        }
        Ok(block)
    }

    fn read(&self, backing: &File, offset: u64, size: u64) -> io::Result<Vec<u8>> {
        let end = (offset + size).min(self.len);
        let mut out = Vec::new();
        let mut at = offset;
        while at < end {
            let block = self.block(backing, at / BLOCK)?;
            let from = (at % BLOCK) as usize;
            let to = ((end - at / BLOCK * BLOCK).min(BLOCK)) as usize;
            out.extend_from_slice(&block[from..to]);
            at = at / BLOCK * BLOCK + to as u64;
        }
        Ok(out)
    }

    fn write(&mut self, backing: &File, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut at = offset;
        let mut rest = data;
        while !rest.is_empty() {
            let index = at / BLOCK;
            let mut block = self.block(backing, index)?;
            let from = (at % BLOCK) as usize;
            let n = rest.len().min(BLOCK as usize - from);
            block[from..from + n].copy_from_slice(&rest[..n]);
            self.blocks.insert(index, block);
            rest = &rest[n..];
            at += n as u64;
        }
        self.len = self.len.max(offset + data.len() as u64);
        Ok(())
    }

    fn truncate(&mut self, len: u64) {
        self.blocks.retain(|&index, _| index * BLOCK < len);
        if let Some((&last, block)) = self.blocks.iter_mut().next_back() {
            let keep = (len - last * BLOCK).min(BLOCK) as usize;
            block[keep..].fill(0);
        }
        self.backing_valid = self.backing_valid.min(len);
        self.len = len;
    }

    /// Writes what is kept to `backing` and syncs it.
    fn sync(&self, backing: &File) -> io::Result<()> {
        // Bytes the overlay zeroed by a truncation, that no block rewrote, are zeros in the
        // backing file too (cut there, then grown again).
        backing.set_len(self.backing_valid)?;
        backing.set_len(self.len)?;
        for (&index, block) in &self.blocks {
            let start = index * BLOCK;
            let n = (self.len - start).min(BLOCK) as usize;
            backing.write_all_at(&block[..n], start)?;
        }
        backing.sync_data()
    }
}

#[derive(Default)]
struct State {
    /// Each inode the kernel knows: its parent and name (the root: none).
    names: HashMap<u64, (u64, OsString)>,
    /// The files written to since their last sync, by inode.
    overlays: HashMap<u64, Overlay>,
    /// How many bytes the cuts dropped, for a test to say.
    dropped: u64,
}

/// The filesystem: its backing directory and its state, shared with the test (`cut_power`).
#[derive(Clone)]
pub struct LazyFs {
    backing: PathBuf,
    /// The backing directory's own inode number (shown as the root, 1).
    root_ino: u64,
    state: Arc<Mutex<State>>,
    /// Held by every operation that looks a name up or changes one, from its backing call to
    /// its record in [`State::names`]: the backing filesystem gives a freed inode number to the
    /// next file at once, so a lookup recorded after another thread's unlink and mkdir would
    /// give the new directory the old file's name (and everything below it `ENOENT`).
    namespace: Arc<Mutex<()>>,
}

fn errno(err: io::Error) -> Errno {
    Errno::from(err)
}

impl LazyFs {
    pub fn new(backing: &Path) -> LazyFs {
        let root_ino = fs::metadata(backing).expect("the backing directory").ino();
        LazyFs {
            backing: backing.to_path_buf(),
            root_ino,
            state: Arc::default(),
            namespace: Arc::default(),
        }
    }

    /// Runs `op` (one that looks a name up or changes one) while no other such runs.
    fn naming<T>(&self, op: impl FnOnce() -> T) -> T {
        let _held = self
            .namespace
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        op()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Forgets every byte written but not synced; returns how many there were.
    pub fn drop_unsynced(&self) -> u64 {
        let mut state = self.state();
        let bytes: u64 = state
            .overlays
            .values()
            .map(|o| o.blocks.len() as u64 * BLOCK)
            .sum();
        state.overlays.clear();
        state.dropped += bytes;
        bytes
    }

    /// How many bytes every cut so far dropped.
    pub fn dropped(&self) -> u64 {
        self.state().dropped
    }

    fn path_of(state: &State, backing: &Path, ino: u64) -> Option<PathBuf> {
        if ino == 1 {
            return Some(backing.to_path_buf());
        }
        let mut names = Vec::new();
        let mut at = ino;
        while at != 1 {
            let (parent, name) = state.names.get(&at)?;
            names.push(name.clone());
            at = *parent;
        }
        let mut path = backing.to_path_buf();
        path.extend(names.iter().rev());
        Some(path)
    }

    fn path(&self, ino: INodeNo) -> Result<PathBuf, Errno> {
        Self::path_of(&self.state(), &self.backing, ino.0).ok_or(Errno::ENOENT)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        Ok(self.path(parent)?.join(name))
    }

    /// The FUSE inode number of a backing file's.
    fn ino(&self, backing_ino: u64) -> u64 {
        if backing_ino == self.root_ino {
            1
        } else {
            backing_ino
        }
    }

    fn attr(&self, path: &Path) -> Result<FileAttr, Errno> {
        let meta = fs::symlink_metadata(path).map_err(errno)?;
        let ino = self.ino(meta.ino());
        let size = match self.state().overlays.get(&ino) {
            Some(overlay) => overlay.len,
            None => meta.len(),
        };
        let kind = kind_of(&meta.file_type());
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: meta.accessed().unwrap_or(SystemTime::UNIX_EPOCH),
            mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            ctime: SystemTime::UNIX_EPOCH + Duration::from_secs(meta.ctime().max(0) as u64),
            crtime: SystemTime::UNIX_EPOCH,
            kind,
            perm: (meta.mode() & 0o7777) as u16,
            nlink: meta.nlink() as u32,
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: meta.rdev() as u32,
            blksize: BLOCK as u32,
            flags: 0,
        })
    }

    /// Looks `name` up below `parent` and remembers it.
    fn entry(&self, parent: INodeNo, name: &OsStr) -> Result<FileAttr, Errno> {
        let attr = self.attr(&self.child(parent, name)?)?;
        self.state()
            .names
            .insert(attr.ino.0, (parent.0, name.to_os_string()));
        Ok(attr)
    }

    /// Gives a new entry to the user who made it (the backing one is made by root).
    fn own(path: &Path, req: &Request) -> Result<(), Errno> {
        std::os::unix::fs::lchown(path, Some(req.uid()), Some(req.gid())).map_err(errno)
    }

    fn backing_file(&self, ino: INodeNo) -> Result<File, Errno> {
        let path = self.path(ino)?;
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(errno)
    }

    fn sync(&self, ino: INodeNo) -> Result<(), Errno> {
        // (Under the lock: a write while the overlay goes to disk would read stale blocks.)
        let mut state = self.state();
        if let Some(overlay) = state.overlays.get(&ino.0) {
            let path = Self::path_of(&state, &self.backing, ino.0).ok_or(Errno::ENOENT)?;
            let backing = OpenOptions::new().write(true).open(path).map_err(errno)?;
            overlay.sync(&backing).map_err(errno)?;
            state.overlays.remove(&ino.0);
        }
        Ok(())
    }
}

/// The overlay of inode `ino` (over its `backing` file), made if it has none yet.
fn overlay_of<'s>(state: &'s mut State, ino: u64, backing: &File) -> io::Result<&'s mut Overlay> {
    use std::collections::hash_map::Entry;
    match state.overlays.entry(ino) {
        Entry::Occupied(overlay) => Ok(overlay.into_mut()),
        Entry::Vacant(none) => Ok(none.insert(Overlay::over(backing)?)),
    }
}

fn kind_of(file_type: &fs::FileType) -> FileType {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_dir() {
        FileType::Directory
    } else if file_type.is_symlink() {
        FileType::Symlink
    } else if file_type.is_socket() {
        FileType::Socket
    } else if file_type.is_fifo() {
        FileType::NamedPipe
    } else {
        FileType::RegularFile
    }
}

fn reply_entry(reply: ReplyEntry, attr: Result<FileAttr, Errno>) {
    match attr {
        Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
        Err(err) => reply.error(err),
    }
}

fn reply_empty(reply: ReplyEmpty, done: Result<(), Errno>) {
    match done {
        Ok(()) => reply.ok(),
        Err(err) => reply.error(err),
    }
}

impl Filesystem for LazyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        reply_entry(reply, self.naming(|| self.entry(parent, name)));
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.path(ino).and_then(|path| self.attr(&path)) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(err) => reply.error(err),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let set = || -> Result<FileAttr, Errno> {
            let path = self.path(ino)?;
            if let Some(mode) = mode {
                fs::set_permissions(&path, fs::Permissions::from_mode(mode & 0o7777))
                    .map_err(errno)?;
            }
            if uid.is_some() || gid.is_some() {
                std::os::unix::fs::lchown(&path, uid, gid).map_err(errno)?;
            }
            if let Some(size) = size {
                let backing = self.backing_file(ino)?;
                let mut state = self.state();
                overlay_of(&mut state, ino.0, &backing)
                    .map_err(errno)?
                    .truncate(size);
            }
            self.attr(&path)
        };
        match set() {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(err) => reply.error(err),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.path(ino).and_then(|p| fs::read_link(p).map_err(errno)) {
            Ok(target) => reply.data(target.as_os_str().as_bytes()),
            Err(err) => reply.error(err),
        }
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let made = || -> Result<FileAttr, Errno> {
            let path = self.child(parent, name)?;
            nix::sys::stat::mknod(
                &path,
                nix::sys::stat::SFlag::from_bits_truncate(mode),
                nix::sys::stat::Mode::from_bits_truncate(mode & !umask & 0o7777),
                rdev.into(),
            )
            .map_err(|e| Errno::from_i32(e as i32))?;
            Self::own(&path, req)?;
            self.entry(parent, name)
        };
        reply_entry(reply, self.naming(made));
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let made = || -> Result<FileAttr, Errno> {
            let path = self.child(parent, name)?;
            fs::create_dir(&path).map_err(errno)?;
            fs::set_permissions(&path, fs::Permissions::from_mode(mode & !umask & 0o7777))
                .map_err(errno)?;
            Self::own(&path, req)?;
            self.entry(parent, name)
        };
        reply_entry(reply, self.naming(made));
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let removed = || -> Result<(), Errno> {
            let path = self.child(parent, name)?;
            let meta = fs::symlink_metadata(&path).map_err(errno)?;
            fs::remove_file(&path).map_err(errno)?;
            if meta.nlink() <= 1 {
                // Its inode number is free for the next file at once: nothing of it may stay
                // (what is unlinked cannot be read here anyway, its path being gone).
                let ino = self.ino(meta.ino());
                let mut state = self.state();
                state.names.remove(&ino);
                state.overlays.remove(&ino);
            }
            Ok(())
        };
        reply_empty(reply, self.naming(removed));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let removed = || -> Result<(), Errno> {
            let path = self.child(parent, name)?;
            let ino = fs::symlink_metadata(&path).map_err(errno)?.ino();
            fs::remove_dir(&path).map_err(errno)?;
            self.state().names.remove(&self.ino(ino));
            Ok(())
        };
        reply_empty(reply, self.naming(removed));
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let made = || -> Result<FileAttr, Errno> {
            let path = self.child(parent, link_name)?;
            std::os::unix::fs::symlink(target, &path).map_err(errno)?;
            Self::own(&path, req)?;
            self.entry(parent, link_name)
        };
        reply_entry(reply, self.naming(made));
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let renamed = || -> Result<(), Errno> {
            let from = self.child(parent, name)?;
            let to = self.child(newparent, newname)?;
            if flags.contains(RenameFlags::RENAME_NOREPLACE) && to.symlink_metadata().is_ok() {
                return Err(Errno::EEXIST);
            }
            if !(flags - RenameFlags::RENAME_NOREPLACE).is_empty() {
                return Err(Errno::EINVAL);
            }
            let ino = self.ino(fs::symlink_metadata(&from).map_err(errno)?.ino());
            let replaced = fs::symlink_metadata(&to).ok().map(|m| self.ino(m.ino()));
            fs::rename(&from, &to).map_err(errno)?;
            let mut state = self.state();
            if let Some(replaced) = replaced {
                state.names.remove(&replaced);
                state.overlays.remove(&replaced);
            }
            state
                .names
                .insert(ino, (newparent.0, newname.to_os_string()));
            Ok(())
        };
        reply_empty(reply, self.naming(renamed));
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        // Every change goes through this mount, so what the kernel keeps of a file stays true.
        match self.path(ino) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
            Err(err) => reply.error(err),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let read = || -> Result<Vec<u8>, Errno> {
            let path = self.path(ino)?;
            let backing = File::open(path).map_err(errno)?;
            let state = self.state();
            let data = match state.overlays.get(&ino.0) {
                Some(overlay) => overlay.read(&backing, offset, size.into()),
                None => Overlay::over(&backing).and_then(|o| o.read(&backing, offset, size.into())),
            };
            data.map_err(errno)
        };
        match read() {
            Ok(data) => reply.data(&data),
            Err(err) => reply.error(err),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let written = || -> Result<(), Errno> {
            let backing = self.backing_file(ino)?;
            let mut state = self.state();
            let overlay = overlay_of(&mut state, ino.0, &backing).map_err(errno)?;
            overlay.write(&backing, offset, data).map_err(errno)
        };
        match written() {
            Ok(()) => reply.written(data.len() as u32),
            Err(err) => reply.error(err),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // A close syncs nothing (as on a real disk).
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply_empty(reply, self.sync(ino));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.path(ino) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(err) => reply.error(err),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let listed = || -> Result<Vec<(u64, FileType, OsString)>, Errno> {
            let path = self.path(ino)?;
            let mut entries = vec![
                (ino.0, FileType::Directory, OsString::from(".")),
                (ino.0, FileType::Directory, OsString::from("..")),
            ];
            for entry in fs::read_dir(path).map_err(errno)? {
                let entry = entry.map_err(errno)?;
                let meta = entry.metadata().map_err(errno)?;
                entries.push((
                    self.ino(meta.ino()),
                    kind_of(&meta.file_type()),
                    entry.file_name(),
                ));
            }
            Ok(entries)
        };
        match listed() {
            Ok(entries) => {
                for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize)
                {
                    if reply.add(INodeNo(ino), (i + 1) as u64, kind, &name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(err) => reply.error(err),
        }
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        // (Names are kept at once: see the module's comment.)
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match nix::sys::statvfs::statvfs(&self.backing) {
            Ok(s) => reply.statfs(
                s.blocks(),
                s.blocks_free(),
                s.blocks_available(),
                s.files(),
                s.files_free(),
                s.block_size() as u32,
                s.name_max() as u32,
                s.fragment_size() as u32,
            ),
            Err(e) => reply.error(Errno::from_i32(e as i32)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        // (What a regular file says to a terminal's ioctl, isatty(3)'s among them.)
        reply.error(Errno::ENOTTY);
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: AccessFlags, reply: ReplyEmpty) {
        // (The kernel checks permissions itself: `default_permissions`.)
        reply_empty(reply, self.path(ino).map(drop));
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let made = || -> Result<FileAttr, Errno> {
            let path = self.child(parent, name)?;
            let mut options = OpenOptions::new();
            options
                .write(true)
                .create(true)
                .mode(mode & !umask & 0o7777);
            if flags & nix::libc::O_EXCL != 0 {
                options.create_new(true);
            }
            let existed = path.symlink_metadata().is_ok();
            options.open(&path).map_err(errno)?;
            if !existed {
                Self::own(&path, req)?;
            }
            self.entry(parent, name)
        };
        match self.naming(made) {
            Ok(attr) => reply.created(
                &TTL,
                &attr,
                Generation(0),
                FileHandle(0),
                FopenFlags::FOPEN_KEEP_CACHE,
            ),
            Err(err) => reply.error(err),
        }
    }
}

/// The filesystem mounted in this process: dropped, it is unmounted. Only a process of its own
/// may serve it ([`Mount`] starts one): a process that maps a file of its own FUSE mount (SQLite's
/// `-shm`) deadlocks on unmapping it, its munmap waiting for a writeback its server threads
/// cannot serve while the munmap holds the process's memory lock.
pub struct Session {
    fs: LazyFs,
    at: PathBuf,
    session: Option<fuser::BackgroundSession>,
}

impl Session {
    /// Mounts a [`LazyFs`] over `backing` at `at` (as root: `allow_other`, so hooks that run
    /// as another user reach it too, with the kernel checking permissions).
    pub fn new(backing: &Path, at: &Path) -> io::Result<Session> {
        let fs = LazyFs::new(backing);
        let session = Self::mount(&fs, at)?;
        Ok(Session {
            fs,
            at: at.to_path_buf(),
            session: Some(session),
        })
    }

    fn mount(fs: &LazyFs, at: &Path) -> io::Result<fuser::BackgroundSession> {
        let mut config = Config::default();
        config.mount_options = vec![
            MountOption::FSName("abxd-lazyfs".into()),
            MountOption::DefaultPermissions,
        ];
        config.acl = SessionACL::All;
        config.n_threads = Some(4);
        fuser::spawn_mount(fs.clone(), at, &config)
    }

    /// Cuts the power: unmounts (once every process using the mount is gone: one killed may
    /// still be writing back what it had mapped), forgets every byte not synced, and mounts
    /// again. Returns how many bytes were dropped.
    pub fn cut_power(&mut self) -> io::Result<u64> {
        self.unmount(Duration::from_secs(30))?;
        let dropped = self.fs.drop_unsynced();
        self.fs.state().names.clear();
        self.session = Some(Self::mount(&self.fs, &self.at)?);
        Ok(dropped)
    }

    /// Unmounts, waiting up to `patience` for the processes that use the mount to be gone.
    fn unmount(&mut self, patience: Duration) -> io::Result<()> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let deadline = std::time::Instant::now() + patience;
        loop {
            match nix::mount::umount(&self.at) {
                Ok(()) => break,
                Err(nix::errno::Errno::EBUSY) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(err) => {
                    // (Detached, so that nothing waits on a server that is about to go.)
                    let _ = nix::mount::umount2(&self.at, nix::mount::MntFlags::MNT_DETACH);
                    let _ = session.join();
                    return Err(io::Error::other(format!(
                        "cannot unmount {}: {err}; processes using it: {:?}",
                        self.at.display(),
                        users_of(&self.at)
                    )));
                }
            }
        }
        // (Unmounted: the session's loop ends; what fuser tries of an unmount then only warns.)
        session.join()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.unmount(Duration::from_secs(10));
    }
}

/// Where the server process mounts, and what it passes through (set by [`Mount::new`]).
const AT_ENV: &str = "ABXD_LAZYFS_AT";
const BACKING_ENV: &str = "ABXD_LAZYFS_BACKING";

/// The server process's part: mounts where [`Mount::new`] said, says `mounted`, then takes one
/// command a line on its stdin — `cut` (answered `cut BYTES`), `quit` — until `quit` or the end
/// of its input (its test gone), and unmounts. Run by hand (no mount asked for), does nothing.
pub fn serve() {
    use std::io::{BufRead, Write};
    let (Some(at), Some(backing)) = (std::env::var_os(AT_ENV), std::env::var_os(BACKING_ENV))
    else {
        return;
    };
    // (Written to the descriptor itself: what a test prints is captured.)
    let say = |line: String| {
        let mut out = io::stdout().lock();
        writeln!(out, "{line}").and_then(|()| out.flush()).unwrap();
    };
    let mut session = match Session::new(Path::new(&backing), Path::new(&at)) {
        Ok(session) => session,
        Err(err) => return say(format!("error {err}")),
    };
    say("mounted".into());
    for line in io::stdin().lock().lines() {
        match line.as_deref().unwrap_or("quit").trim() {
            "cut" => match session.cut_power() {
                Ok(dropped) => say(format!("cut {dropped}")),
                Err(err) => say(format!("error {err}")),
            },
            _ => break,
        }
    }
}

/// A [`LazyFs`] served by a process of its own (the test binary's `lazyfs_server`, an ignored
/// test), commanded through its stdin: dropped, it is unmounted and the server ends.
pub struct Mount {
    server: std::process::Child,
    answers: io::Lines<io::BufReader<std::process::ChildStdout>>,
    dropped: u64,
}

impl Mount {
    /// Mounts a [`LazyFs`] over `backing` at `at`, served by a new process.
    pub fn new(backing: &Path, at: &Path) -> io::Result<Mount> {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let mut server = Command::new(std::env::current_exe()?)
            .args(["--ignored", "--exact", "lazyfs_server", "--nocapture"])
            .env(AT_ENV, at)
            .env(BACKING_ENV, backing)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let answers = io::BufReader::new(server.stdout.take().unwrap()).lines();
        let mut mount = Mount {
            server,
            answers,
            dropped: 0,
        };
        mount.answer("mounted")?;
        Ok(mount)
    }

    /// Reads the server's next answer, which must start with `expected`; returns the rest.
    fn answer(&mut self, expected: &str) -> io::Result<String> {
        loop {
            let line = match self.answers.next() {
                Some(line) => line?,
                None => return Err(io::Error::other("the lazyfs server ended")),
            };
            if let Some(rest) = line.strip_prefix(expected) {
                return Ok(rest.trim().to_string());
            }
            if let Some(err) = line.strip_prefix("error ") {
                return Err(io::Error::other(err.to_string()));
            }
            // (Anything else is the test harness's own output.)
        }
    }

    /// Cuts the power (see [`Session::cut_power`]); returns how many bytes were dropped.
    pub fn cut_power(&mut self) -> io::Result<u64> {
        use std::io::Write;
        let stdin = self.server.stdin.as_mut().unwrap();
        writeln!(stdin, "cut").and_then(|()| stdin.flush())?;
        let dropped: u64 = self.answer("cut")?.parse().map_err(io::Error::other)?;
        self.dropped += dropped;
        Ok(dropped)
    }

    /// How many bytes every cut so far dropped.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // The end of its input ends the server, which unmounts.
        drop(self.server.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if self.server.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The processes with a file, a mapping or their directory below `at`.
fn users_of(at: &Path) -> Vec<(i32, String)> {
    let below = |link: &Path| link.starts_with(at);
    let mut users = Vec::new();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let dir = entry.path();
        let fds = fs::read_dir(dir.join("fd")).into_iter().flatten().flatten();
        let uses = fds
            .filter_map(|fd| fs::read_link(fd.path()).ok())
            .any(|l| below(&l))
            || fs::read_link(dir.join("cwd")).is_ok_and(|l| below(&l))
            || fs::read_to_string(dir.join("maps"))
                .is_ok_and(|maps| maps.contains(&*at.to_string_lossy()));
        if uses {
            let comm = fs::read_to_string(dir.join("comm")).unwrap_or_default();
            users.push((pid, comm.trim().to_string()));
        }
    }
    users
}
