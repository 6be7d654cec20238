//! Progress on the terminal for the library's slow steps (`toolhost::Progress`):
//! a spinner while a component compiles, a byte bar while one is pulled from a
//! registry. Drawn on stderr only when stderr is a terminal, and never under
//! `serve` (which does not ask for it): piped output gets not a byte of it.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use toolhost::{Progress, ProgressStep};

/// Bars drawn together on stderr.
struct TerminalProgress {
    bars: MultiProgress,
}

/// Progress for this process: `Some` when stderr is a terminal.
pub(crate) fn if_terminal() -> Option<Arc<dyn Progress>> {
    std::io::stderr().is_terminal().then(|| {
        let bars = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        Arc::new(TerminalProgress { bars }) as Arc<dyn Progress>
    })
}

impl Progress for TerminalProgress {
    fn start(&self, what: &str, total: Option<u64>) -> Box<dyn ProgressStep> {
        let (bar, template) = match total {
            Some(n) => (ProgressBar::new(n), "{spinner} {msg} {bar:30} {bytes}/{total_bytes}"),
            None => (ProgressBar::new_spinner(), "{spinner} {msg} ({elapsed})"),
        };
        let style =
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner());
        let bar = self.bars.add(bar.with_style(style).with_message(what.to_string()));
        bar.enable_steady_tick(Duration::from_millis(100));
        Box::new(Step(bar))
    }
}

/// One bar; cleared from the screen when the step ends.
struct Step(ProgressBar);

impl ProgressStep for Step {
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
