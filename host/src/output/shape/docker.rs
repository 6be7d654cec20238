//! Container builds: BuildKit's plain progress (`#N …`) and the classic
//! builder (`Step N/M`). Folded: a step's output lines, its timing and cache
//! lines, layer transfers. Kept: the step headings and BuildKit's closing
//! block that repeats the failed step's output.

use super::Class;

pub(super) fn classify(line: &str) -> Option<Class> {
    if let Some(step) = line.strip_prefix('#') {
        let digits = step.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            let rest = step[digits..].trim_start();
            if rest.starts_with('[') {
                return Some(Class::Summary);
            }
            let timed =
                rest.split_once(' ').is_some_and(|(t, _)| t.contains('.') && t.parse::<f64>().is_ok());
            let quiet = [
                "DONE",
                "CACHED",
                "sha256:",
                "extracting",
                "resolve ",
                "transferring",
                "naming",
                "exporting",
                "writing",
            ];
            if timed || quiet.iter().any(|q| rest.starts_with(q)) {
                return Some(Class::Noise("build output lines"));
            }
        }
    }
    if line.starts_with(" ---> ") || line.starts_with("Removing intermediate container") {
        return Some(Class::Noise("build output lines"));
    }
    if line.starts_with("Step ") || line.starts_with(" > [") || line.starts_with("------") {
        return Some(Class::Summary);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buildkit_lines() {
        assert_eq!(classify("#5 [2/4] RUN apt-get update"), Some(Class::Summary));
        assert_eq!(
            classify("#5 0.512 Get:1 http://deb.debian.org bookworm InRelease"),
            Some(Class::Noise("build output lines"))
        );
        assert_eq!(classify("#5 DONE 3.2s"), Some(Class::Noise("build output lines")));
        assert_eq!(classify(" > [3/4] RUN make:"), Some(Class::Summary));
    }
}
