//! Filesystem helpers for what WASI 0.2 lacks, provided by the host's
//! `toolhost:plugin/files` import (confined to the work dir).

use std::io;
use std::path::Path;

/// Give `to` the permission bits of `from`, for example to keep a file's
/// mode when replacing it with a renamed temporary file. Both paths must be
/// inside the work dir, and the call must be allowed to write.
///
/// In a native build (unit tests) this is `std::fs::set_permissions`.
pub fn copy_permissions(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::toolhost::plugin::files::copy_permissions(
            &from.to_string_lossy(),
            &to.to_string_lossy(),
        )
        .map_err(|message| io::Error::new(io::ErrorKind::PermissionDenied, message))
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::fs::set_permissions(to, std::fs::metadata(from)?.permissions())
    }
}
