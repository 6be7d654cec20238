//! Diagnostics to the host's log. They never reach the model.

use crate::bindings::toolhost::plugin::log::{Level, log};

/// Log at debug level.
pub fn debug(message: &str) {
    log(Level::Debug, message);
}

/// Log at info level.
pub fn info(message: &str) {
    log(Level::Info, message);
}

/// Log at warn level.
pub fn warn(message: &str) {
    log(Level::Warn, message);
}

/// Log at error level.
pub fn error(message: &str) {
    log(Level::Error, message);
}
