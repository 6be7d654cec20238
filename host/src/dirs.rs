//! Where the host keeps its own state outside any work dir: the data dir
//! (`$TOOLHOST_DATA_DIR`, else `$XDG_DATA_HOME/toolhost`, else
//! `$HOME/.local/share/toolhost`). Tools never see it: it is not preopened, and
//! when it lies inside the work dir it is protected like the compile cache.
//!
//! Each kind of state has its own subdirectory, created 0700 on first use with
//! `protect::hostfs::create_private_dir`.

use std::path::PathBuf;

/// The host's data dir by default, or `None` when no variable names one (the
/// `toolhost` binary's; a library host uses it when [`crate::HostBuilder::data_dir`] is not set).
pub fn default_data_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    env("TOOLHOST_DATA_DIR")
        .or_else(|| env("XDG_DATA_HOME").map(|d| d.join("toolhost")))
        .or_else(|| env("HOME").map(|d| d.join(".local").join("share").join("toolhost")))
}
