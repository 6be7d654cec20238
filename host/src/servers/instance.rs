//! One running instance of a server: its confined process (stdio) or its HTTP
//! session, the MCP connection to it, its stderr logger and its proxy. Dropping
//! it stops all of them: the process tree is killed (`Resident`), the tasks are
//! aborted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::client::{Connection, OnChange};
use super::launch::Launch;
use super::streams::{LineGuard, Tail, Tripped, log_stderr};
use crate::imports::exec::ExecRuntime;
use crate::imports::fetch::FetchClient;

/// How long a server may take to start and answer `initialize`.
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a vanished connection waits for the process's exit status, to say
/// how it ended.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A started instance.
pub(crate) struct Instance {
    /// The MCP session.
    pub(crate) connection: Connection,
    /// When it was started.
    pub(crate) started: Instant,
    /// How its process ended, once it has.
    exit: Arc<Mutex<Option<String>>>,
    tripped: Tripped,
    tail: Tail,
    stop: CancellationToken,
    _tasks: Vec<AbortOnDrop>,
}

/// What starting an instance needs from the host.
pub(crate) struct StartWith<'a> {
    /// The server's name (for logs).
    pub(crate) name: &'a str,
    /// Starts the confined process.
    pub(crate) exec: &'a ExecRuntime,
    /// The pinned client its proxy connects with.
    pub(crate) fetch: &'a Arc<FetchClient>,
    /// The longest message it may write.
    pub(crate) max_message: usize,
    /// Runs on `notifications/tools/list_changed`.
    pub(crate) on_change: OnChange,
}

impl Instance {
    /// Start `launch`'s process confined (the work dir writable when `writable` and
    /// granted) and initialize a session with it. The error says why, with the end
    /// of its stderr.
    pub(crate) async fn start_stdio(
        launch: &Launch,
        writable: bool,
        with: StartWith<'_>,
    ) -> Result<Self, String> {
        let spec = launch.spec(writable)?;
        let mut resident = with.exec.start_resident(spec).await.map_err(|e| e.to_string())?;
        let (tail, tripped, stop) = (Tail::default(), Tripped::default(), CancellationToken::new());
        let exit = Arc::new(Mutex::new(None));
        let mut tasks = Vec::new();
        if let Some(stderr) = resident.stderr.take() {
            tasks.push(AbortOnDrop(tokio::spawn(log_stderr(with.name.to_string(), stderr, tail.clone()))));
        }
        if let (Some(listener), Some(grant)) = (resident.listener.take(), &launch.network) {
            let proxy =
                super::proxy::spawn(listener, grant.clone(), with.fetch.clone(), with.name.to_string())
                    .map_err(|e| format!("its proxy: {e}"))?;
            tasks.push(AbortOnDrop(proxy));
        }
        let (Some(stdout), Some(stdin)) = (resident.stdout.take(), resident.stdin.take()) else {
            return Err("its stdin or stdout is missing".into());
        };
        let stdout = LineGuard::new(stdout, with.max_message, tripped.clone());
        // The reaper: records how the leader ended and kills what it left; on stop,
        // kills the whole tree (dropping the resident does).
        let (ended, stopped) = (exit.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                status = resident.wait() => {
                    let text = match status {
                        Ok(status) => describe_status(status),
                        Err(e) => format!("could not be waited for: {e}"),
                    };
                    *ended.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
                    resident.kill();
                }
                _ = stopped.cancelled() => {}
            }
            drop(resident);
        });
        let instance = |connection| Self {
            connection,
            started: Instant::now(),
            exit: exit.clone(),
            tripped: tripped.clone(),
            tail: tail.clone(),
            stop: stop.clone(),
            _tasks: Vec::new(),
        };
        let opened =
            tokio::time::timeout(START_TIMEOUT, Connection::open((stdout, stdin), with.on_change)).await;
        match opened {
            Ok(Ok(connection)) => {
                let mut started = instance(connection);
                started._tasks = tasks;
                Ok(started)
            }
            Ok(Err(why)) => {
                let why = gone(&exit, &tripped, &tail, Some(why)).await;
                stop.cancel();
                Err(why)
            }
            Err(_) => {
                stop.cancel();
                Err(format!("it did not answer `initialize` within {} s", START_TIMEOUT.as_secs()))
            }
        }
    }

    /// Open a session with the HTTP server `remote` through the pinned client.
    pub(crate) async fn start_http(
        remote: &super::http::Remote,
        context: &super::Context,
        on_change: OnChange,
    ) -> Result<Self, String> {
        let transport = remote.transport(context.fetch.clone(), context.max_message);
        let connection = match tokio::time::timeout(START_TIMEOUT, Connection::open(transport, on_change))
            .await
        {
            Ok(opened) => opened?,
            Err(_) => {
                return Err(format!("it did not answer `initialize` within {} s", START_TIMEOUT.as_secs()));
            }
        };
        Ok(Self {
            connection,
            started: Instant::now(),
            exit: Arc::new(Mutex::new(None)),
            tripped: Tripped::default(),
            tail: Tail::default(),
            stop: CancellationToken::new(),
            _tasks: Vec::new(),
        })
    }

    /// Whether it is still serving.
    pub(crate) fn alive(&self) -> bool {
        self.exit.lock().unwrap_or_else(|e| e.into_inner()).is_none() && !self.connection.is_closed()
    }

    /// How it ended: its exit status (waiting briefly for it), a broken stream, and
    /// the end of its stderr.
    pub(crate) async fn why_gone(&self) -> String {
        gone(&self.exit, &self.tripped, &self.tail, None).await
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.connection.close();
        self.stop.cancel();
    }
}

/// Say how an instance ended (`context`: what failed first, if anything did).
async fn gone(
    exit: &Mutex<Option<String>>,
    tripped: &Tripped,
    tail: &Tail,
    context: Option<String>,
) -> String {
    let deadline = Instant::now() + EXIT_GRACE;
    let status = loop {
        if let Some(status) = exit.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let mut parts = Vec::new();
    if let Some(why) = tripped.get() {
        parts.push(why);
    }
    match status {
        Some(status) => parts.push(format!("it {status}")),
        None if parts.is_empty() => parts.push("its connection closed".into()),
        None => {}
    }
    if let Some(context) = context
        && parts.len() < 2
    {
        parts.push(context);
    }
    let mut text = parts.join("; ");
    let stderr = tail.text();
    if !stderr.is_empty() {
        text.push_str(&format!("; its stderr ended with: {stderr}"));
    }
    text
}

/// `exited with status N` or `was killed by signal N (NAME)`.
fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => {
            let name = match signal {
                libc::SIGKILL => " (SIGKILL: a limit, or killed)",
                libc::SIGXCPU => " (SIGXCPU: its CPU seconds ran out)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                _ => "",
            };
            format!("was killed by signal {signal}{name}")
        }
        (None, None) => "ended".into(),
    }
}
