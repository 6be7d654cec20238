//! C and C++ builds: make, cmake, ninja, and gcc/clang diagnostics. Folded:
//! make's directory notes, cmake's configure checks and progress steps, and
//! compiler command lines. Kept: `file:line:col:` diagnostics (an error's
//! source excerpt is its context), the linker's undefined references.

use super::Class;

/// Programs whose echoed command lines are build steps.
const COMPILERS: [&str; 10] =
    ["cc ", "gcc ", "g++ ", "c++ ", "clang ", "clang++ ", "ar ", "ld ", "ranlib ", "libtool "];

pub(super) fn classify(line: &str) -> Option<Class> {
    let t = line.trim_start();
    if line.starts_with("make")
        && (line.contains(": Entering directory") || line.contains(": Leaving directory"))
    {
        return Some(Class::Noise("make directory lines"));
    }
    if line.starts_with("-- ") {
        return Some(Class::Noise("configure checks"));
    }
    if let Some(step) = line.strip_prefix('[') {
        let progress = step.split_once(']').is_some_and(|(n, _)| {
            let n = n.trim().trim_end_matches('%');
            n.split('/').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        });
        if progress {
            return Some(Class::Noise("build steps"));
        }
    }
    if COMPILERS.iter().any(|c| t.starts_with(c)) || t.starts_with("/usr/bin/") && t.contains(" -c ") {
        return Some(Class::Noise("build steps"));
    }
    if diagnostic(line) || line.contains(": In function ") || line.contains(": In member function ") {
        return Some(Class::Alarm);
    }
    None
}

/// `path:line:col: ` or `path:line: ` followed by a message: a compiler's diagnostic.
pub(super) fn diagnostic(line: &str) -> bool {
    let Some((path, rest)) = line.split_once(':') else { return false };
    if path.is_empty() || path.contains(' ') || !path.contains('.') {
        return false;
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let rest = &rest[digits..];
    let rest =
        rest.strip_prefix(':').map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit())).unwrap_or(rest);
    rest.starts_with(": ") || rest.starts_with(':') && rest.len() > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_lines() {
        assert_eq!(classify("cc -Wall -O2 -c main.c -o main.o"), Some(Class::Noise("build steps")));
        assert_eq!(classify("[ 42%] Building C object x.o"), Some(Class::Noise("build steps")));
        assert_eq!(classify("[3/10] Linking CXX executable app"), Some(Class::Noise("build steps")));
        assert_eq!(classify("make[1]: Entering directory '/x'"), Some(Class::Noise("make directory lines")));
        assert_eq!(classify("parse.c:6:13: ‘struct point’ has no member named ‘z’"), Some(Class::Alarm));
        assert_eq!(classify("    6 |     return p.z;"), None);
        assert!(diagnostic("./main.go:5:2: undefined: x") && !diagnostic("note: 12:30 today"));
    }
}
