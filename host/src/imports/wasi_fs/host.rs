//! The `wasi:filesystem` host traits for [`GuardedFs`]: checks (see the module
//! docs), then wasmtime-wasi's own implementation.
//!
//! Calls that name a path and change something resolve it first
//! ([`resolve::resolve`]), refuse a protected target, and run wasmtime-wasi's
//! operation on the resolved parent (pushed as a temporary descriptor with the
//! guest descriptor's permissions) with the final name. Calls on an open descriptor
//! pass straight through: what a descriptor may do was settled when it was opened.

use std::sync::Arc;

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::{Descriptor, Dir as WasiDir, FsPerms, OpenMode, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::preopens;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, DescriptorFlags, DescriptorType, DirectoryEntry, ErrorCode, HostDescriptor,
    HostDirectoryEntryStream, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, FsError, FsResult};

use super::GuardedFs;
use super::quota::{QuotaStream, stream_error_code};
use super::resolve::{self, Target};

/// A directory to run a delegated operation on.
struct Parent {
    res: Resource<Descriptor>,
    /// Pushed by the host for this one operation (deleted after it).
    temporary: bool,
}

impl Parent {
    fn borrow(&self) -> Resource<Descriptor> {
        Resource::new_borrow(self.res.rep())
    }
}

/// The guest descriptor's host directory and what it may do.
struct DirHandle {
    file: Arc<std::fs::File>,
    perms: FsPerms,
    open_mode: OpenMode,
}

/// The operations on two paths.
enum TwoPaths {
    Link,
    Rename,
}

impl GuardedFs<'_> {
    fn dir(&mut self, fd: &Resource<Descriptor>) -> FsResult<DirHandle> {
        match self.view.table.get(fd)? {
            Descriptor::Dir(d) => {
                Ok(DirHandle { file: d.dir.clone(), perms: d.perms, open_mode: d.open_mode })
            }
            Descriptor::File(_) => Err(ErrorCode::NotDirectory.into()),
        }
    }

    /// Resolve `path` from `fd` for a change, refusing a protected target.
    fn target_for_change(
        &mut self,
        fd: &Resource<Descriptor>,
        path: &str,
        follow: bool,
    ) -> FsResult<(Target, DirHandle)> {
        let dir = self.dir(fd)?;
        let target = resolve::resolve(&dir.file, path, follow)?;
        self.refuse_protected(&target.real_path(&dir.file)?)?;
        Ok((target, dir))
    }

    /// [`Self::target_for_change`], with the resolved parent as a descriptor to run
    /// the operation on (see [`Self::push_parent`]).
    fn parent_for_change(
        &mut self,
        fd: &Resource<Descriptor>,
        path: &str,
        follow: bool,
    ) -> FsResult<(Parent, String)> {
        let (target, dir) = self.target_for_change(fd, path, follow)?;
        self.push_parent(fd, target, &dir)
    }

    fn refuse_protected(&self, real: &std::path::Path) -> FsResult<()> {
        let Some(protected) = &self.guard.protected else { return Ok(()) };
        if let Some(why) = protected.check(real, false) {
            tracing::debug!("refused a guest's change: {why}");
            return Err(ErrorCode::ReadOnly.into());
        }
        Ok(())
    }

    /// A change through an open descriptor (times, size): refused when it stands
    /// beneath a protected path, wherever it was opened from.
    fn refuse_descriptor_change(&mut self, fd: &Resource<Descriptor>) -> FsResult<()> {
        if self.guard.protected.is_none() {
            return Ok(());
        }
        let file = match self.view.table.get(fd)? {
            Descriptor::File(f) => f.file.clone(),
            Descriptor::Dir(d) => d.dir.clone(),
        };
        self.refuse_protected(&resolve::real_path(&file)?)
    }

    /// The size of the file `fd` (0 for a directory: nothing is written to one).
    fn file_size(&mut self, fd: &Resource<Descriptor>) -> FsResult<u64> {
        match self.view.table.get(fd)? {
            Descriptor::File(f) => Ok(f.file.metadata().map_err(ErrorCode::from)?.len()),
            Descriptor::Dir(_) => Ok(0),
        }
    }

    /// Charge `bytes` to the call's write quota, or refuse them (`quota`).
    fn charge(&self, bytes: u64) -> FsResult<()> {
        if self.guard.quota.take(bytes) { Ok(()) } else { Err(ErrorCode::Quota.into()) }
    }

    /// The output stream `stream` wasmtime-wasi pushed, swapped for one held to the
    /// call's write quota.
    fn held_to_quota(&mut self, stream: Resource<DynOutputStream>) -> FsResult<Resource<DynOutputStream>> {
        let inner = self.view.table.delete(stream)?;
        let held: DynOutputStream = Box::new(QuotaStream::new(inner, self.guard.quota.clone()));
        Ok(self.view.table.push(held)?)
    }

    /// Where to run the operation on `target`: the guest's own handle `fd` when the
    /// path had no parent part, else the parent the host opened, pushed as a
    /// temporary descriptor with `dir`'s rights. With the final name.
    fn push_parent(
        &mut self,
        fd: &Resource<Descriptor>,
        target: Target,
        dir: &DirHandle,
    ) -> FsResult<(Parent, String)> {
        let name = target.name_str();
        let parent = match target.into_parent() {
            None => Parent { res: Resource::new_borrow(fd.rep()), temporary: false },
            Some(file) => {
                let descriptor = Descriptor::Dir(WasiDir::new(file, dir.perms, dir.open_mode, true));
                Parent { res: self.view.table.push(descriptor)?, temporary: true }
            }
        };
        Ok((parent, name))
    }

    fn drop_parent(&mut self, parent: Parent) {
        if parent.temporary {
            let _ = self.view.table.delete(parent.res);
        }
    }

    /// `op` from `old` (a handle, a path, whether its last symlink is followed) to
    /// `new`, each side checked like any change (nothing beneath a protected path) and
    /// run on the parents the host opened.
    async fn change_two(
        &mut self,
        op: TwoPaths,
        (fd, old_path, follow): (&Resource<Descriptor>, &str, bool),
        (new_fd, new_path): (&Resource<Descriptor>, &str),
    ) -> FsResult<()> {
        let (old, old_dir) = self.target_for_change(fd, old_path, follow)?;
        let (new, new_dir) = self.target_for_change(new_fd, new_path, false)?;
        let (old_parent, old_name) = self.push_parent(fd, old, &old_dir)?;
        let done = match self.push_parent(new_fd, new, &new_dir) {
            Ok((new_parent, new_name)) => {
                let (from, to) = (old_parent.borrow(), new_parent.borrow());
                let done = match op {
                    TwoPaths::Link => {
                        HostDescriptor::link_at(
                            &mut self.view,
                            from,
                            PathFlags::empty(),
                            old_name,
                            to,
                            new_name,
                        )
                        .await
                    }
                    TwoPaths::Rename => {
                        HostDescriptor::rename_at(&mut self.view, from, old_name, to, new_name).await
                    }
                };
                self.drop_parent(new_parent);
                done
            }
            Err(e) => Err(e),
        };
        self.drop_parent(old_parent);
        done
    }

    async fn open_checked(
        &mut self,
        fd: &Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let dir = self.dir(fd)?;
        let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
        let target = resolve::resolve(&dir.file, &path, follow)?;
        let entry = target.entry_type(&dir.file);
        if entry.as_ref().is_some_and(resolve::is_special) {
            return Err(ErrorCode::Unsupported.into());
        }
        let changes = oflags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE)
            || flags.intersects(DescriptorFlags::WRITE | DescriptorFlags::MUTATE_DIRECTORY);
        if changes {
            self.refuse_protected(&target.real_path(&dir.file)?)?;
        } else if entry.is_none() && target.lossy_original(&dir.file).is_some() {
            drop(target);
            let opened = self.open_lossy(fd, &path, follow).ok_or(ErrorCode::NoEntry)?;
            return Ok(self.view.table.push(opened)?);
        }
        let (parent, name) = self.push_parent(fd, target, &dir)?;
        let opened =
            HostDescriptor::open_at(&mut self.view, parent.borrow(), PathFlags::empty(), name, oflags, flags)
                .await;
        self.drop_parent(parent);
        opened
    }

    /// A descriptor for the real entry behind a lossily listed name `path` (see
    /// [`Target::lossy_original`]), read-only, if there is one.
    fn open_lossy(&mut self, fd: &Resource<Descriptor>, path: &str, follow: bool) -> Option<Descriptor> {
        if !path.contains('\u{fffd}') {
            return None;
        }
        let dir = self.dir(fd).ok()?;
        let target = resolve::resolve(&dir.file, path, follow).ok()?;
        // Either the final name is the lossy one, or an earlier component was and the
        // resolved parent already stands for it.
        let real = target.lossy_original(&dir.file).or_else(|| target.name.clone())?;
        let file = target.open_read(&dir.file, &real)?;
        let is_dir = file.metadata().ok()?.is_dir();
        // Beneath a protected path or not, a descriptor opened this way only reads.
        Some(if is_dir {
            Descriptor::Dir(WasiDir::new(file, FsPerms::ReadOnly, OpenMode::READ, true))
        } else {
            Descriptor::File(wasmtime_wasi::filesystem::File::new(
                file,
                FsPerms::ReadOnly,
                OpenMode::READ,
                true,
            ))
        })
    }

    /// `op` on the real entry behind a lossily listed name `path` (see
    /// [`Self::open_lossy`]), through a temporary read-only descriptor deleted after
    /// it; `None` when `path` names no such entry (the caller runs the call as asked).
    async fn on_lossy<T>(
        &mut self,
        fd: &Resource<Descriptor>,
        path_flags: PathFlags,
        path: &str,
        op: impl AsyncFnOnce(&mut WasiFilesystemCtxView<'_>, Resource<Descriptor>) -> FsResult<T>,
    ) -> Option<FsResult<T>> {
        let real = self.open_lossy(fd, path, path_flags.contains(PathFlags::SYMLINK_FOLLOW))?;
        let tmp = match self.view.table.push(real) {
            Ok(tmp) => tmp,
            Err(e) => return Some(Err(e.into())),
        };
        let done = op(&mut self.view, Resource::new_borrow(tmp.rep())).await;
        let _ = self.view.table.delete(tmp);
        Some(done)
    }

    /// The entries of the directory `fd`, listed here: names that are not UTF-8
    /// arrive lossily instead of failing the listing.
    fn list(&mut self, fd: &Resource<Descriptor>) -> FsResult<Vec<DirectoryEntry>> {
        use cap_primitives::fs::FileTypeExt;
        let dir = self.dir(fd)?;
        let mut entries = Vec::new();
        for entry in cap_primitives::fs::read_base_dir(&dir.file).map_err(ErrorCode::from)? {
            let Ok(entry) = entry else { continue };
            let type_ = match entry.file_type() {
                Ok(t) if t.is_dir() => DescriptorType::Directory,
                Ok(t) if t.is_file() => DescriptorType::RegularFile,
                Ok(t) if t.is_symlink() => DescriptorType::SymbolicLink,
                Ok(t) if t.is_fifo() => DescriptorType::Fifo,
                Ok(t) if t.is_socket() => DescriptorType::Socket,
                Ok(t) if t.is_char_device() => DescriptorType::CharacterDevice,
                Ok(t) if t.is_block_device() => DescriptorType::BlockDevice,
                _ => DescriptorType::Unknown,
            };
            entries.push(DirectoryEntry { type_, name: entry.file_name().to_string_lossy().into_owned() });
        }
        Ok(entries)
    }
}

impl preopens::Host for GuardedFs<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let dirs = preopens::Host::get_directories(&mut self.view)?;
        for _ in &dirs {
            // Counted, never refused: a guest can't do without its preopens.
            self.guard.handles += 1;
        }
        Ok(dirs)
    }
}

impl types::Host for GuardedFs<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.view, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        if let Some(code) = stream_error_code(self.view.table.get(&err)?) {
            return Ok(Some(code));
        }
        types::Host::filesystem_error_code(&mut self.view, err)
    }
}

impl HostDescriptor for GuardedFs<'_> {
    async fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        HostDescriptor::advise(&mut self.view, fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        HostDescriptor::sync_data(&mut self.view, fd).await
    }

    async fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorFlags> {
        HostDescriptor::get_flags(&mut self.view, fd).await
    }

    async fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorType> {
        HostDescriptor::get_type(&mut self.view, fd).await
    }

    async fn set_size(&mut self, fd: Resource<Descriptor>, size: types::Filesize) -> FsResult<()> {
        self.refuse_descriptor_change(&fd)?;
        // Growing a file is writing to it (a hole is bytes any reader goes through).
        let growth = size.saturating_sub(self.file_size(&fd)?);
        self.charge(growth)?;
        let done = HostDescriptor::set_size(&mut self.view, fd, size).await;
        if done.is_err() {
            self.guard.quota.give_back(growth);
        }
        done
    }

    async fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.refuse_descriptor_change(&fd)?;
        HostDescriptor::set_times(&mut self.view, fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        HostDescriptor::read(&mut self.view, fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        // The bytes, and the hole a write past the end leaves before them.
        let len = buf.len() as u64;
        let hole = offset.saturating_sub(self.file_size(&fd)?);
        let charged = len.saturating_add(hole);
        self.charge(charged)?;
        let written = HostDescriptor::write(&mut self.view, fd, buf, offset).await;
        match &written {
            Ok(n) => self.guard.quota.give_back(len.saturating_sub(*n)),
            Err(_) => self.guard.quota.give_back(charged),
        }
        written
    }

    async fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        if !self.guard.take_handle() {
            return Err(ErrorCode::InsufficientMemory.into());
        }
        let listed = self.list(&fd);
        let stream = match listed {
            Ok(entries) => HostDescriptor::read_directory(&mut self.view, fd).await.map(|s| (s, entries)),
            Err(e) => Err(e),
        };
        match stream {
            Ok((stream, entries)) => {
                self.guard.streams.insert(stream.rep(), entries.into_iter());
                Ok(stream)
            }
            Err(e) => {
                self.guard.release_handle();
                Err(e)
            }
        }
    }

    async fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        HostDescriptor::sync(&mut self.view, fd).await
    }

    async fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let (parent, name) = self.parent_for_change(&fd, &path, false)?;
        let done = HostDescriptor::create_directory_at(&mut self.view, parent.borrow(), name).await;
        self.drop_parent(parent);
        done
    }

    async fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorStat> {
        HostDescriptor::stat(&mut self.view, fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        let stat = async |view: &mut WasiFilesystemCtxView<'_>, real| HostDescriptor::stat(view, real).await;
        match self.on_lossy(&fd, path_flags, &path, stat).await {
            Some(stat) => stat,
            None => HostDescriptor::stat_at(&mut self.view, fd, path_flags, path).await,
        }
    }

    async fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        let follow = path_flags.contains(PathFlags::SYMLINK_FOLLOW);
        let (parent, name) = self.parent_for_change(&fd, &path, follow)?;
        let parent_ref = parent.borrow();
        let done =
            HostDescriptor::set_times_at(&mut self.view, parent_ref, PathFlags::empty(), name, atim, mtim)
                .await;
        self.drop_parent(parent);
        done
    }

    async fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        // A hard link to a protected file would be a second way to write it.
        let follow = old_path_flags.contains(PathFlags::SYMLINK_FOLLOW);
        self.change_two(TwoPaths::Link, (&fd, &old_path, follow), (&new_descriptor, &new_path)).await
    }

    async fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        oflags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        if !self.guard.take_handle() {
            return Err(ErrorCode::InsufficientMemory.into());
        }
        let opened = self.open_checked(&fd, path_flags, path, oflags, flags).await;
        if opened.is_err() {
            self.guard.release_handle();
        }
        opened
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.guard.release_handle();
        HostDescriptor::drop(&mut self.view, fd)
    }

    async fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        HostDescriptor::readlink_at(&mut self.view, fd, path).await
    }

    async fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let (parent, name) = self.parent_for_change(&fd, &path, false)?;
        let done = HostDescriptor::remove_directory_at(&mut self.view, parent.borrow(), name).await;
        self.drop_parent(parent);
        done
    }

    async fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.change_two(TwoPaths::Rename, (&fd, &old_path, false), (&new_fd, &new_path)).await
    }

    async fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        let (parent, name) = self.parent_for_change(&fd, &dest_path, false)?;
        let done = HostDescriptor::symlink_at(&mut self.view, parent.borrow(), src_path, name).await;
        self.drop_parent(parent);
        done
    }

    async fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let (parent, name) = self.parent_for_change(&fd, &path, false)?;
        let done = HostDescriptor::unlink_file_at(&mut self.view, parent.borrow(), name).await;
        self.drop_parent(parent);
        done
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        HostDescriptor::read_via_stream(&mut self.view, fd, offset)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        // A stream that starts past the end leaves a hole: charged when it opens.
        let hole = offset.saturating_sub(self.file_size(&fd)?);
        self.charge(hole)?;
        let stream = HostDescriptor::write_via_stream(&mut self.view, fd, offset)
            .and_then(|stream| self.held_to_quota(stream));
        if stream.is_err() {
            self.guard.quota.give_back(hole);
        }
        stream
    }

    fn append_via_stream(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<DynOutputStream>> {
        let stream = HostDescriptor::append_via_stream(&mut self.view, fd)?;
        self.held_to_quota(stream)
    }

    async fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        HostDescriptor::is_same_object(&mut self.view, a, b).await
    }

    async fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<types::MetadataHashValue> {
        HostDescriptor::metadata_hash(&mut self.view, fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        let hash = async |view: &mut WasiFilesystemCtxView<'_>, real| {
            HostDescriptor::metadata_hash(view, real).await
        };
        match self.on_lossy(&fd, path_flags, &path, hash).await {
            Some(hash) => hash,
            None => HostDescriptor::metadata_hash_at(&mut self.view, fd, path_flags, path).await,
        }
    }
}

impl HostDirectoryEntryStream for GuardedFs<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<DirectoryEntry>> {
        match self.guard.streams.get_mut(&stream.rep()) {
            Some(entries) => Ok(entries.next()),
            None => HostDirectoryEntryStream::read_directory_entry(&mut self.view, stream).await,
        }
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        self.guard.streams.remove(&stream.rep());
        self.guard.release_handle();
        HostDirectoryEntryStream::drop(&mut self.view, stream)
    }
}
