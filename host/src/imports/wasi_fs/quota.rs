//! The call's write quota where a guest's writes pass the host: its output streams
//! on files ([`QuotaStream`]), and what [`super::host`] charges for positional
//! writes, holes past a file's end and `set-size`.
//!
//! A write that does not fit in what is left of the quota fails with the WASI error
//! code `quota` (EDQUOT in the guest; [`QuotaExceeded`] behind a stream's error) and
//! writes nothing; the [`WriteMeter`] remembers it, so the host fails the call with
//! `write_quota` even when the guest ignores the error. A stream offers at most what
//! is left (`check-write`), so a guest writes right up to the quota before a write
//! fails. A disk quota of the host's own (EDQUOT from the kernel) is not the call's:
//! it reaches the guest as `insufficient-space`, like a full disk.

use std::sync::Arc;

use bytes::Bytes;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;
use wasmtime_wasi::p2::{DynOutputStream, OutputStream, Pollable, StreamError, StreamResult};

use crate::limits::WriteMeter;

/// Behind a stream error when the call's write quota refused the write.
#[derive(Debug, thiserror::Error)]
#[error("the call's write quota is used up")]
pub(super) struct QuotaExceeded;

/// The WASI error code behind a stream error: `quota` for the call's own quota,
/// `insufficient-space` for a disk quota of the host (wasmtime-wasi knows no
/// EDQUOT), `None` to let wasmtime-wasi decide.
pub(super) fn stream_error_code(err: &wasmtime::Error) -> Option<ErrorCode> {
    if err.is::<QuotaExceeded>() {
        return Some(ErrorCode::Quota);
    }
    let io = err.downcast_ref::<std::io::Error>()?;
    (io.raw_os_error() == Some(libc::EDQUOT)).then_some(ErrorCode::InsufficientSpace)
}

/// A file's output stream held to the call's write quota.
pub(super) struct QuotaStream {
    inner: DynOutputStream,
    meter: Arc<WriteMeter>,
}

impl QuotaStream {
    /// `inner` (a stream wasmtime-wasi opened on a file), charged to `meter`.
    pub(super) fn new(inner: DynOutputStream, meter: Arc<WriteMeter>) -> Self {
        Self { inner, meter }
    }
}

fn refused() -> StreamError {
    StreamError::LastOperationFailed(wasmtime::Error::new(QuotaExceeded))
}

#[wasmtime_wasi::async_trait]
impl OutputStream for QuotaStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let len = bytes.len() as u64;
        if !self.meter.take(len) {
            return Err(refused());
        }
        self.inner.write(bytes).inspect_err(|_| self.meter.give_back(len))
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        let permit = self.inner.check_write()?;
        // With nothing left, the full permit: the write then fails (a permit of 0
        // would leave the guest waiting, and a guest that wrote exactly its quota
        // still flushes).
        match self.meter.remaining() {
            0 => Ok(permit),
            left => Ok(permit.min(usize::try_from(left).unwrap_or(usize::MAX))),
        }
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for QuotaStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a stream below the quota stream was asked to write.
    #[derive(Default)]
    struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);

    impl OutputStream for Sink {
        fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
            self.0.lock().unwrap().extend_from_slice(&bytes);
            Ok(())
        }
        fn flush(&mut self) -> StreamResult<()> {
            Ok(())
        }
        fn check_write(&mut self) -> StreamResult<usize> {
            Ok(4096)
        }
    }

    #[wasmtime_wasi::async_trait]
    impl Pollable for Sink {
        async fn ready(&mut self) {}
    }

    #[test]
    fn a_stream_writes_up_to_the_quota_then_fails_with_quota() {
        let sink = Sink::default();
        let written = sink.0.clone();
        let meter = Arc::new(WriteMeter::new(10));
        let mut stream = QuotaStream::new(Box::new(sink), meter.clone());
        assert_eq!(stream.check_write().unwrap(), 10, "at most what is left is offered");
        stream.write(Bytes::from_static(b"123456")).unwrap();
        assert_eq!(stream.check_write().unwrap(), 4);
        stream.write(Bytes::from_static(b"7890")).unwrap();
        assert!(!meter.tripped(), "exactly the quota is not past it");
        stream.flush().unwrap();
        assert_eq!(stream.check_write().unwrap(), 4096, "nothing left: the write will say so");
        let Err(StreamError::LastOperationFailed(err)) = stream.write(Bytes::from_static(b"x")) else {
            panic!("a write past the quota went through");
        };
        assert_eq!(stream_error_code(&err), Some(ErrorCode::Quota));
        assert!(meter.tripped());
        assert_eq!(&*written.lock().unwrap(), b"1234567890", "nothing past the quota reached the file");
        assert_eq!(meter.used(), 10);
    }

    #[test]
    fn a_disk_quota_of_the_host_is_insufficient_space_and_other_errors_are_left_alone() {
        let edquot = wasmtime::Error::new(std::io::Error::from_raw_os_error(libc::EDQUOT));
        assert_eq!(stream_error_code(&edquot), Some(ErrorCode::InsufficientSpace));
        let enospc = wasmtime::Error::new(std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert_eq!(stream_error_code(&enospc), None, "wasmtime-wasi maps ENOSPC itself");
    }
}
