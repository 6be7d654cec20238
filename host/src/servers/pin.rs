//! A stdio server pinned whole: the files of its package (a `node_modules` tree, a
//! `site-packages`, its own directory, or a single program) walked in a fixed order
//! and hashed into one digest, the entry's `package-sha256`.
//!
//! The walk never follows a link: a symlink is recorded as a link (its target text),
//! a directory as a directory, a file by its sha256, size and whether it is
//! executable; anything else (a FIFO, a socket, a device) is refused, as is a name
//! that is not UTF-8. It stops at [`Bounds`] (files, bytes, depth). The digest is
//! over a length-prefixed encoding of the entries sorted by path, so it does not
//! depend on the order a directory lists them in.
//!
//! The list itself ([`Manifest`]) is kept in the data dir under its digest
//! (`server-pins/<hex>.json`, 0600), so a start whose files differ can name them;
//! a kept list is used only when it hashes to the digest it is filed under.

use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use confine::hostfs;

/// How much a package walk reads before it gives up.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Entries (files, links, directories).
    pub max_entries: usize,
    /// Bytes of file content hashed.
    pub max_bytes: u64,
    /// Directory depth below the package root.
    pub max_depth: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Self { max_entries: 100_000, max_bytes: 2 << 30, max_depth: 64 }
    }
}

/// Largest kept file list read back.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// What one entry of a package is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Node {
    /// A directory.
    Dir,
    /// A regular file: its sha256 (hex), size and executable bit.
    File {
        /// Hex sha256 of its bytes.
        sha256: String,
        /// Its size in bytes.
        size: u64,
        /// Whether any execute bit is set.
        executable: bool,
    },
    /// A symbolic link, not followed: what it points at.
    Link {
        /// The link's target, as written.
        target: String,
    },
}

/// The walked files of one package, sorted by path (`""` is the root itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// (path relative to the root, what is there).
    pub entries: Vec<(String, Node)>,
}

/// What differs between two walks of a package.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Paths only the newer walk has.
    pub added: Vec<String>,
    /// Paths only the older walk has.
    pub removed: Vec<String>,
    /// Paths both have, with other contents, kind, link target or mode.
    pub changed: Vec<String>,
}

impl Changes {
    /// Whether nothing differs.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// The first differing path, and how it differs.
    pub fn first(&self) -> Option<(&str, &'static str)> {
        let changed = self.changed.first().map(|p| (p.as_str(), "changed"));
        let added = self.added.first().map(|p| (p.as_str(), "added"));
        changed.or(added).or_else(|| self.removed.first().map(|p| (p.as_str(), "removed")))
    }

    /// How many paths differ.
    pub fn count(&self) -> usize {
        self.added.len() + self.removed.len() + self.changed.len()
    }
}

impl Manifest {
    /// Walk the package at `root` (a directory, or one file) within `bounds`.
    pub fn walk(root: &Path, bounds: &Bounds) -> Result<Self, String> {
        let mut walk = Walk { bounds, entries: Vec::new(), bytes: 0 };
        walk.visit(root, String::new(), 0)?;
        walk.entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        Ok(Self { entries: walk.entries })
    }

    /// The package digest: hex sha256 of the entries' length-prefixed encoding.
    pub fn digest(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(b"toolhost package pin v1\n");
        let mut field = |bytes: &[u8]| {
            hash.update((bytes.len() as u64).to_be_bytes());
            hash.update(bytes);
        };
        for (path, node) in &self.entries {
            field(path.as_bytes());
            match node {
                Node::Dir => field(b"d"),
                Node::File { sha256, size, executable } => {
                    field(if *executable { b"x" } else { b"f" });
                    field(sha256.as_bytes());
                    field(&size.to_be_bytes());
                }
                Node::Link { target } => {
                    field(b"l");
                    field(target.as_bytes());
                }
            }
        }
        hex::encode(hash.finalize())
    }

    /// What changed from `self` (the older walk) to `newer`.
    pub fn changes(&self, newer: &Manifest) -> Changes {
        let old: std::collections::BTreeMap<&str, &Node> =
            self.entries.iter().map(|(p, n)| (p.as_str(), n)).collect();
        let new: std::collections::BTreeMap<&str, &Node> =
            newer.entries.iter().map(|(p, n)| (p.as_str(), n)).collect();
        let mut changes = Changes::default();
        for (path, node) in &new {
            match old.get(path) {
                None => changes.added.push(path.to_string()),
                Some(before) if before != node => changes.changed.push(path.to_string()),
                Some(_) => {}
            }
        }
        changes.removed = old.keys().filter(|p| !new.contains_key(*p)).map(|p| p.to_string()).collect();
        changes
    }

    /// How many regular files it holds, and their bytes.
    pub fn totals(&self) -> (usize, u64) {
        self.entries.iter().fold((0, 0), |(n, bytes), (_, node)| match node {
            Node::File { size, .. } => (n + 1, bytes + size),
            _ => (n, bytes),
        })
    }
}

struct Walk<'b> {
    bounds: &'b Bounds,
    entries: Vec<(String, Node)>,
    bytes: u64,
}

impl Walk<'_> {
    fn visit(&mut self, path: &Path, rel: String, depth: usize) -> Result<(), String> {
        let shown = || path.display().to_string();
        if self.entries.len() >= self.bounds.max_entries {
            return Err(format!(
                "{}: the package has more than {} entries; pin a smaller directory",
                crate::error::codes::TOO_LARGE,
                self.bounds.max_entries
            ));
        }
        let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", shown()))?;
        let kind = meta.file_type();
        if kind.is_symlink() {
            let target = std::fs::read_link(path).map_err(|e| format!("{}: {e}", shown()))?;
            let target = target
                .to_str()
                .ok_or_else(|| format!("{}: a link whose target is not UTF-8", shown()))?
                .to_string();
            self.entries.push((rel, Node::Link { target }));
        } else if kind.is_file() {
            let node = self.file(path)?;
            self.entries.push((rel, node));
        } else if kind.is_dir() {
            if depth > self.bounds.max_depth {
                return Err(format!(
                    "{}: {} is more than {} directories deep",
                    crate::error::codes::TOO_LARGE,
                    shown(),
                    self.bounds.max_depth
                ));
            }
            let mut names = Vec::new();
            for entry in std::fs::read_dir(path).map_err(|e| format!("{}: {e}", shown()))? {
                let entry = entry.map_err(|e| format!("{}: {e}", shown()))?;
                let name = entry.file_name();
                let name = name
                    .to_str()
                    .ok_or_else(|| format!("{}: a name that is not UTF-8 in it", shown()))?
                    .to_string();
                names.push(name);
            }
            names.sort();
            self.entries.push((rel.clone(), Node::Dir));
            for name in names {
                let child = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
                self.visit(&path.join(&name), child, depth + 1)?;
            }
        } else {
            return Err(format!("{}: not a file, a directory or a link; a package holds none", shown()));
        }
        Ok(())
    }

    /// A regular file, opened without following a link planted since it was looked at.
    fn file(&mut self, path: &Path) -> Result<Node, String> {
        let err = |e: std::io::Error| format!("{}: {e}", path.display());
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(err)?;
        let meta = file.metadata().map_err(err)?;
        if !meta.is_file() {
            return Err(format!("{}: changed while it was walked", path.display()));
        }
        let left = self.bounds.max_bytes.saturating_sub(self.bytes);
        if meta.len() > left {
            return Err(format!(
                "{}: the package's files are more than {} bytes; pin a smaller directory",
                crate::error::codes::TOO_LARGE,
                self.bounds.max_bytes
            ));
        }
        let mut hash = Sha256::new();
        let mut reader = file.take(left.saturating_add(1));
        let size = std::io::copy(&mut reader, &mut hash).map_err(err)?;
        if size > left {
            return Err(format!(
                "{}: the package's files are more than {} bytes; pin a smaller directory",
                crate::error::codes::TOO_LARGE,
                self.bounds.max_bytes
            ));
        }
        self.bytes += size;
        let executable = meta.permissions().mode() & 0o111 != 0;
        Ok(Node::File { sha256: hex::encode(hash.finalize()), size, executable })
    }
}

/// The kept file lists, under `<data dir>/server-pins`.
#[derive(Debug, Clone)]
pub struct Pins {
    dir: PathBuf,
}

impl Pins {
    /// The lists kept under `data_dir`.
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self { dir: data_dir.join("server-pins") }
    }

    /// Keep `manifest` under its digest; the digest.
    pub fn keep(&self, manifest: &Manifest) -> Result<String, String> {
        let digest = manifest.digest();
        let err = |e: std::io::Error| format!("{}: {e}", self.dir.display());
        hostfs::create_private_dir(&self.dir).map_err(err)?;
        let bytes = serde_json::to_vec(manifest).map_err(|e| e.to_string())?;
        hostfs::write_atomic(&self.dir.join(format!("{digest}.json")), &bytes, Some(0o600)).map_err(err)?;
        Ok(digest)
    }

    /// The list kept for `digest`, if there is one that hashes to it.
    pub fn get(&self, digest: &str) -> Option<Manifest> {
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let bytes =
            hostfs::read_regular(&self.dir.join(format!("{digest}.json")), MAX_MANIFEST_BYTES).ok()??;
        let manifest: Manifest = serde_json::from_slice(&bytes).ok()?;
        (manifest.digest() == digest).then_some(manifest)
    }
}

/// Check the package at `root` against `pinned` (its digest): `Ok` when it is the
/// same, else a `server_changed` message naming the first file that differs (when
/// the pinned list is kept in `pins`) and how to see and take the change.
pub(crate) fn check(name: &str, root: &Path, pinned: &str, pins: Option<&Pins>) -> Result<(), String> {
    let now = Manifest::walk(root, &Bounds::default())
        .map_err(|e| format!("{}: servers.{name}: {e}", crate::error::codes::SERVER_CHANGED))?;
    let digest = now.digest();
    if digest == pinned {
        return Ok(());
    }
    let what = match pins.and_then(|p| p.get(pinned)).map(|old| old.changes(&now)) {
        Some(changes) if !changes.is_empty() => {
            let (path, how) = changes.first().unwrap_or(("", "changed"));
            let more = changes.count() - 1;
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            let file = if path.is_empty() { root.to_path_buf() } else { root.join(path) };
            format!("{} ({how}){more}", file.display())
        }
        _ => format!("a file under {} (the pinned file list is not kept here)", root.display()),
    };
    Err(format!(
        "{}: servers.{name}: {what} differs from what was pinned (package-sha256 {pinned}, now {digest}); \
         see the changes and re-pin with `toolhost update-server {name}`",
        crate::error::codes::SERVER_CHANGED
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("pkg/lib")).unwrap();
        std::fs::write(root.join("pkg/index.js"), "main").unwrap();
        std::fs::write(root.join("pkg/lib/a.js"), "a").unwrap();
        std::os::unix::fs::symlink("lib/a.js", root.join("pkg/alias.js")).unwrap();
        dir
    }

    #[test]
    fn the_digest_is_stable_and_covers_contents_links_modes_and_names() {
        let dir = tree();
        let root = dir.path().join("pkg");
        let pin = Manifest::walk(&root, &Bounds::default()).unwrap();
        assert_eq!(pin.entries.len(), 5, "{pin:?}");
        assert_eq!(pin.digest(), Manifest::walk(&root, &Bounds::default()).unwrap().digest());
        let same = |m: &Manifest| m.digest() == pin.digest();
        // A link is hashed as a link: changing what it points at, not through it.
        std::fs::remove_file(root.join("alias.js")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("alias.js")).unwrap();
        let walked = Manifest::walk(&root, &Bounds::default()).unwrap();
        assert!(!same(&walked));
        assert_eq!(pin.changes(&walked).changed, ["alias.js"]);
        std::fs::remove_file(root.join("alias.js")).unwrap();
        std::os::unix::fs::symlink("lib/a.js", root.join("alias.js")).unwrap();
        assert!(same(&Manifest::walk(&root, &Bounds::default()).unwrap()));
        // The execute bit counts.
        std::fs::set_permissions(root.join("lib/a.js"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!same(&Manifest::walk(&root, &Bounds::default()).unwrap()));
        std::fs::set_permissions(root.join("lib/a.js"), std::fs::Permissions::from_mode(0o644)).unwrap();
        // An added empty directory, a renamed file.
        std::fs::create_dir(root.join("lib/new")).unwrap();
        let walked = Manifest::walk(&root, &Bounds::default()).unwrap();
        assert_eq!(pin.changes(&walked).added, ["lib/new"]);
        std::fs::remove_dir(root.join("lib/new")).unwrap();
        std::fs::rename(root.join("lib/a.js"), root.join("lib/b.js")).unwrap();
        let changes = pin.changes(&Manifest::walk(&root, &Bounds::default()).unwrap());
        assert_eq!(
            (changes.added, changes.removed),
            (vec!["lib/b.js".to_string()], vec!["lib/a.js".to_string()])
        );
    }

    #[test]
    fn the_walk_is_bounded_and_refuses_what_a_package_never_holds() {
        let dir = tree();
        let root = dir.path().join("pkg");
        let small = |max_entries, max_bytes, max_depth| Bounds { max_entries, max_bytes, max_depth };
        let err = Manifest::walk(&root, &small(3, 1 << 20, 8)).unwrap_err();
        assert!(err.starts_with("too_large: ") && err.contains("more than 3 entries"), "{err}");
        let err = Manifest::walk(&root, &small(100, 4, 8)).unwrap_err();
        assert!(err.starts_with("too_large: ") && err.contains("more than 4 bytes"), "{err}");
        let err = Manifest::walk(&root, &small(100, 1 << 20, 0)).unwrap_err();
        assert!(err.starts_with("too_large: ") && err.contains("more than 0 directories deep"), "{err}");
        assert!(Manifest::walk(&root, &small(5, 5, 1)).is_ok());
        let fifo = root.join("pipe");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let err = Manifest::walk(&root, &Bounds::default()).unwrap_err();
        assert!(err.contains("pipe: not a file, a directory or a link"), "{err}");
        std::fs::remove_file(&fifo).unwrap();
        // One file is a package too.
        let one = Manifest::walk(&root.join("index.js"), &Bounds::default()).unwrap();
        assert_eq!(one.entries.len(), 1);
        assert_eq!(one.entries[0].0, "");
    }

    #[test]
    fn a_changed_package_is_refused_naming_the_file_from_the_kept_list() {
        let dir = tree();
        let root = dir.path().join("pkg");
        let data = tempfile::tempdir().unwrap();
        let pins = Pins::in_data_dir(data.path());
        let pinned = pins.keep(&Manifest::walk(&root, &Bounds::default()).unwrap()).unwrap();
        let kept = data.path().join(format!("server-pins/{pinned}.json"));
        assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(check("m", &root, &pinned, Some(&pins)).is_ok());
        std::fs::write(root.join("lib/a.js"), "A").unwrap();
        let err = check("m", &root, &pinned, Some(&pins)).unwrap_err();
        assert!(err.starts_with("server_changed: servers.m: "), "{err}");
        assert!(err.contains(&format!("{} (changed)", root.join("lib/a.js").display())), "{err}");
        assert!(err.contains("toolhost update-server m"), "{err}");
        // A kept list that does not hash to its name is not believed.
        std::fs::write(&kept, b"{\"entries\":[]}").unwrap();
        let err = check("m", &root, &pinned, Some(&pins)).unwrap_err();
        assert!(err.contains("the pinned file list is not kept here"), "{err}");
        assert!(pins.get("../../etc/passwd").is_none());
    }
}
