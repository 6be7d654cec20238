//! The stable error codes of toolhost, defined once: the host (`toolhost::codes`),
//! the Rust guest SDK (`toolhost_guest::codes`) and the builtin tools all use
//! these constants.
//!
//! A failed call reads `code: message`. Callers (a model, an agent) match on
//! the code, so a code never changes its spelling or its meaning. Every code
//! is lowercase `snake_case` of at most 64 printable ASCII bytes: the host
//! turns a code that is not into [`BAD_OUTPUT`]. A plugin may add codes of its
//! own in the same form; [`ALL`] lists the ones defined here.
//!
//! Who makes which code:
//!
//! | group | host-made | tool-made |
//! | --- | --- | --- |
//! | the call | [`UNKNOWN_TOOL`], [`INVALID_ARGS`] (the schema), [`CANCELLED`], [`TIMEOUT`], [`FUEL_EXHAUSTED`], [`MEMORY_LIMIT`], [`OUTPUT_LIMIT`], [`TRAP`], [`BAD_OUTPUT`], [`HOST_ERROR`], [`PERMISSION_DENIED`], [`JOURNAL_FAILED`], [`WRITE_QUOTA`] | [`INVALID_ARGS`] (well-typed but unusable arguments), [`TOOL_ERROR`] (a typed-export function's `result` error) |
//! | MCP servers (`[servers.NAME]`) | [`SERVER_FAILED`] (could not start, stopped mid-call, backing off), its message starting with [`SERVER_CHANGED`] or [`SERVER_UNPINNED`] when the start was refused | — |
//! | the host's native tools | [`OUTPUT_NOT_FOUND`], [`OUTPUT_STORE_UNAVAILABLE`] (`read_output`), [`RUN_TESTS_BUSY`], [`TESTS_FAILED`] (`run_tests`) | — |
//! | loading a plugin (a load error, not a call's) | [`CAPABILITY_DENIED`], [`IDENTITY_MISMATCH`], [`TOOL_LIST_TOO_LARGE`], [`DUPLICATE_TOOL`] | — |
//! | the filesystem | — (the sandbox refuses; the tool reports it) | [`NOT_FOUND`], [`PATH_ESCAPE`], [`PATH_TOO_LONG`], [`ACCESS_DENIED`], [`FORBIDDEN_PATH`], [`NO_FILESYSTEM`], [`IS_DIRECTORY`], [`NOT_A_DIRECTORY`], [`BINARY_FILE`], [`IO_ERROR`], [`NO_SPACE`]; `read_file`: [`FILE_TOO_LARGE`] (an image over 5 MiB); `edit_file`: [`NO_OP_EDIT`], [`OLD_STRING_NOT_FOUND`], [`OLD_STRING_NOT_UNIQUE`]; the changing tools: [`STALE_FILE`], [`IS_SYMLINK`], [`ALREADY_EXISTS`], [`ARTIFACT_NOT_FOUND`] |
//! | the network (the pinned fetch) | [`BLOCKED_URL`], [`INVALID_URL`], [`HOST_NOT_ALLOWED`], [`METHOD_NOT_ALLOWED`], [`TOO_MANY_REDIRECTS`], [`TOO_LARGE`], [`TRANSPORT`], [`TIMEOUT`] (a `fetch-error` case the SDK names) | [`INVALID_URL`], [`METHOD_NOT_ALLOWED`] (checked before sending), [`UNSUPPORTED_CONTENT_TYPE`], [`INVALID_SEARCH_URL`]; the web tools' `http_<status>` (`http_404`, …), made at run time and not in [`ALL`] |
//! | a community tool from a registry (a load error, or `toolhost add`/`publish` exiting 2) | [`SIGNATURE_MISSING`], [`SIGNATURE_INVALID`], [`SIGNATURE_TLOG_INVALID`], [`SIGNATURE_SCT_INVALID`], [`SIGNATURE_CERTIFICATE_INVALID`], [`SIGNATURE_IDENTITY_MISMATCH`] (a Sigstore bundle), [`DIGEST_MISMATCH`], [`REGISTRY_ERROR`], [`UNSUPPORTED_ARTIFACT`], [`INVALID_KEY`], and the network's [`TOO_LARGE`], [`BLOCKED_URL`], [`TOO_MANY_REDIRECTS`], [`TRANSPORT`], [`TIMEOUT`], [`NOT_FOUND`] | — |
//! | exec (starting a program) | [`PROGRAM_NOT_ALLOWED`], [`SHELL_NOT_ALLOWED`], [`ENV_NOT_ALLOWED`], [`BAD_CWD`], [`EXEC_BUSY`], [`SANDBOX_UNAVAILABLE`], [`SPAWN_FAILED`] (an `exec-error` case the SDK names; `run_tests` makes some itself) | [`COMMAND_FAILED`], [`TIMEOUT`], [`CANCELLED`] (how a program that ran failed) |

#![no_std]

// The call: made by the host around every call.

/// The host could not record the call in its effect journal, so it did not run it: the message says why (often a full disk).
pub const JOURNAL_FAILED: &str = "journal_failed";
/// No tool has this name: list the tools and call one of them.
pub const UNKNOWN_TOOL: &str = "unknown_tool";
/// The arguments do not match the tool's schema, or are unusable together: fix the field the message names.
pub const INVALID_ARGS: &str = "invalid_args";
/// The caller cancelled the call, before or while it ran: nothing to fix; call again if still wanted.
pub const CANCELLED: &str = "cancelled";
/// The call (or a program or request inside it) ran past its deadline: ask for less, or raise the limit.
pub const TIMEOUT: &str = "timeout";
/// The call used up its fuel (CPU budget): ask for less work, or raise the fuel limit.
pub const FUEL_EXHAUSTED: &str = "fuel_exhausted";
/// The guest tried to grow its memory past the cap: ask for less, or raise the memory limit.
pub const MEMORY_LIMIT: &str = "memory_limit";
/// The tool returned more output than the host accepts: ask for a smaller result.
pub const OUTPUT_LIMIT: &str = "output_limit";
/// The guest trapped (a panic, an abort, `unreachable`): a bug in the tool; the message has its stderr.
pub const TRAP: &str = "trap";
/// The tool returned something malformed (metadata that is not JSON, a bad code): a bug in the tool.
pub const BAD_OUTPUT: &str = "bad_output";
/// The host could not run the call (no work dir, an engine failure): not the arguments' fault.
pub const HOST_ERROR: &str = "host_error";
/// The permissions refused the call and the tool did not run: the message names the rule or path.
pub const PERMISSION_DENIED: &str = "permission_denied";
/// A typed-export function returned the error case of its `result<_, E>`, or an MCP server's tool answered
/// with an error (`isError`, a JSON-RPC error): the message is what it said.
pub const TOOL_ERROR: &str = "tool_error";
/// The MCP server behind the tool failed: it could not be started, stopped during the call (exited, was killed at
/// a limit, broke its stream) or is in its restart back-off; the message says which. It is started again on the
/// next call (after the back-off).
pub const SERVER_FAILED: &str = "server_failed";
/// A stdio MCP server's files (its package: the entry's `package` tree) differ from the `package-sha256` its entry
/// pins, so it was not started: the message names the first file that differs; see the changes and re-pin with
/// `toolhost update-server NAME`.
pub const SERVER_CHANGED: &str = "server_changed";
/// A stdio MCP server's entry pins no package (`package` + `package-sha256`) and does not say `unpinned = true`, so
/// it was not started: pin it with `toolhost update-server NAME`.
pub const SERVER_UNPINNED: &str = "server_unpinned";
/// The call wrote more to files than its write quota (`write-mib`) allows, and the write past it failed: write less, or raise the quota.
pub const WRITE_QUOTA: &str = "write_quota";

// The host's native tools.

/// `read_output` has no stored output for that call id and part (never kept, or evicted): re-run the call.
pub const OUTPUT_NOT_FOUND: &str = "output_not_found";
/// `read_output` could not ask the output store (a shared store that went away): the output may still be there; try again.
pub const OUTPUT_STORE_UNAVAILABLE: &str = "output_store_unavailable";
/// `run_tests` is already running on this host: wait for it to finish.
pub const RUN_TESTS_BUSY: &str = "run_tests_busy";
/// `run_tests` ran and the tests failed: the message keeps the log's tail.
pub const TESTS_FAILED: &str = "tests_failed";

// Loading a plugin: the start of a load error's message, not a call's code.

/// The component imports an interface its grants do not cover: grant the policy key the message names.
pub const CAPABILITY_DENIED: &str = "capability_denied";
/// The component's sha256 is not the one the policy approved: re-approve it with `toolhost add`.
pub const IDENTITY_MISMATCH: &str = "identity_mismatch";
/// The plugin's tool list passes one of the host's bounds: the message names which; fix the plugin.
pub const TOOL_LIST_TOO_LARGE: &str = "tool_list_too_large";
/// Two tools have the same name: rename one, or load only one of the plugins.
pub const DUPLICATE_TOOL: &str = "duplicate_tool";

// The filesystem: made by the tools (the SDK's `Context::resolve`, `fs::read_text`, the fs builtins).

/// The path (or something it names) does not exist: check the name, or list the directory.
pub const NOT_FOUND: &str = "not_found";
/// The path leaves the work directory: use a path inside it.
pub const PATH_ESCAPE: &str = "path_escape";
/// The path is longer than any the system accepts (4096 bytes): use a shorter one.
pub const PATH_TOO_LONG: &str = "path_too_long";
/// The sandbox refused the access (a symlink out, a write in a read-only call): not possible in this call.
pub const ACCESS_DENIED: &str = "access_denied";
/// The path is one the tools never write (`.git/`, the host's config): write elsewhere.
pub const FORBIDDEN_PATH: &str = "forbidden_path";
/// The tool has no filesystem access in this call: the plugin is not granted the work dir.
pub const NO_FILESYSTEM: &str = "no_filesystem";
/// The path names a directory where a file was expected: name a file in it.
pub const IS_DIRECTORY: &str = "is_directory";
/// The path names a file (or something else) where a directory was expected: name its directory.
pub const NOT_A_DIRECTORY: &str = "not_a_directory";
/// The file is not text (a NUL byte, or not UTF-8): a text tool cannot show or edit it.
pub const BINARY_FILE: &str = "binary_file";
/// Any other I/O failure: the message has the system's reason.
pub const IO_ERROR: &str = "io_error";
/// The disk (or the file size the system allows) is full: nothing was changed; free space or write less.
pub const NO_SPACE: &str = "no_space";
/// `edit_file` was asked to replace a string with itself: nothing to do.
pub const NO_OP_EDIT: &str = "no_op_edit";
/// `edit_file`: `old_string` does not occur in the file, not even by the tolerant matchers (trimmed lines, a
/// block by its first and last lines, whitespace, indentation, escapes, …; exact only for `replace_all` and past
/// the size budget): read the file and copy the text exactly.
pub const OLD_STRING_NOT_FOUND: &str = "old_string_not_found";
/// `edit_file`: `old_string` occurs more than once, or a tolerant matcher found two equally good places (never
/// guessed between): add context to make it unique, or set `replace_all`.
pub const OLD_STRING_NOT_UNIQUE: &str = "old_string_not_unique";
/// The file changed since the model read it (its sha256 is not `expected_sha256`), or the host requires
/// `expected_sha256` and none was given: read it again and pass the new sha256. Nothing was written.
pub const STALE_FILE: &str = "stale_file";
/// The path is a symlink (or goes through one) and the tools do not write through links here: name the real file.
pub const IS_SYMLINK: &str = "is_symlink";
/// `move_file`, `restore_file`: the destination already exists and is never overwritten: pick another path.
pub const ALREADY_EXISTS: &str = "already_exists";
/// `restore_file`: no saved artifact has that id (mistyped, or evicted): nothing to restore.
pub const ARTIFACT_NOT_FOUND: &str = "artifact_not_found";

// The network: the host's pinned fetch refuses (a `fetch-error` case), or a web tool checks first.

/// The URL's target is private, loopback, link-local or a local name: only public addresses are fetched.
pub const BLOCKED_URL: &str = "blocked_url";
/// The URL does not parse, or its scheme is not http or https: pass an absolute http(s) URL.
pub const INVALID_URL: &str = "invalid_url";
/// The plugin's network grant does not list this host: use a granted host, or grant it in the policy.
pub const HOST_NOT_ALLOWED: &str = "host_not_allowed";
/// The HTTP method is not one of the seven allowed: use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS.
pub const METHOD_NOT_ALLOWED: &str = "method_not_allowed";
/// The request was redirected more times than the limit (5): fetch the last URL directly, or give up.
pub const TOO_MANY_REDIRECTS: &str = "too_many_redirects";
/// The request body, its headers or the declared response is over a size limit: ask for less.
pub const TOO_LARGE: &str = "too_large";
/// A file is larger than the tool returns whole (`read_file` on an image over 5 MiB); the message names the limit.
pub const FILE_TOO_LARGE: &str = "file_too_large";
/// Resolving, connecting, TLS or the HTTP exchange failed: the message says which; retry later.
pub const TRANSPORT: &str = "transport";
/// `fetch_url` or `web_search` got a binary body (an image, a PDF, an archive): fetch a text page.
pub const UNSUPPORTED_CONTENT_TYPE: &str = "unsupported_content_type";
/// `web_search`: the configured search URL template is unusable: fix `TOOLHOST_SEARCH_URL`.
pub const INVALID_SEARCH_URL: &str = "invalid_search_url";

// Exec: why the host did not start a program (an `exec-error` case), and how one that ran failed.

/// The program is not on the exec allow-list, is a path, or resolves inside the work dir: use an allowed one.
pub const PROGRAM_NOT_ALLOWED: &str = "program_not_allowed";
/// A shell command line was asked for and the grant has no shell profile: run a program directly.
pub const SHELL_NOT_ALLOWED: &str = "shell_not_allowed";
/// An environment variable the plugin is not granted was set for the program: leave it out.
pub const ENV_NOT_ALLOWED: &str = "env_not_allowed";
/// The working directory is outside the work dir or does not exist: use one inside it.
pub const BAD_CWD: &str = "bad_cwd";
/// Too many programs are running on the host: try again later.
pub const EXEC_BUSY: &str = "exec_busy";
/// The host cannot confine a program on this system, so it starts none: not fixable by the caller.
pub const SANDBOX_UNAVAILABLE: &str = "sandbox_unavailable";
/// The program could not be started: the message has the system's reason.
pub const SPAWN_FAILED: &str = "spawn_failed";
/// The program ran and exited non-zero or died by a signal: the message keeps its output.
pub const COMMAND_FAILED: &str = "command_failed";

// Community tools from a registry (`toolhost add oci://…`, `publish`, and a start that loads a
// pinned `oci://` or `https://` entry): a refusal, the start of a load error's message.

/// The artifact has no signature by a key or identity the policy trusts for it: sign it, or trust its signer.
pub const SIGNATURE_MISSING: &str = "signature_missing";
/// A signature is there but does not verify (another key or identity, another digest, a changed payload).
pub const SIGNATURE_INVALID: &str = "signature_invalid";
/// Bytes from the registry (a manifest, a layer) do not hash to the digest they were asked for: not used.
pub const DIGEST_MISMATCH: &str = "digest_mismatch";
/// The registry answered with an error status (4xx, 5xx) or no usable answer: the message has the status.
pub const REGISTRY_ERROR: &str = "registry_error";
/// The artifact is not a WebAssembly component in the wasm OCI layout (an image index, a container image).
pub const UNSUPPORTED_ARTIFACT: &str = "unsupported_artifact";
/// A signing or public key could not be read: a wrong password, not a P-256 key, or not cosign's format.
pub const INVALID_KEY: &str = "invalid_key";
/// A keyless signature's transparency-log entry does not verify against the trusted root (another log, a signed entry
/// timestamp, inclusion proof or checkpoint that does not verify), or logs something else: the message says which.
pub const SIGNATURE_TLOG_INVALID: &str = "signature_tlog_invalid";
/// A keyless signature's certificate embeds no SCT signed by a CT log of the trusted root: it was not logged for
/// certificate transparency as the public instance's certificates are.
pub const SIGNATURE_SCT_INVALID: &str = "signature_sct_invalid";
/// A keyless signature's certificate does not chain to a CA of the trusted root, valid for code signing, at the time
/// the log says it was signed (an expired or untrusted certificate).
pub const SIGNATURE_CERTIFICATE_INVALID: &str = "signature_certificate_invalid";
/// A keyless signature that verifies, by a subject or OIDC issuer the policy does not trust: the message names both.
pub const SIGNATURE_IDENTITY_MISMATCH: &str = "signature_identity_mismatch";

/// Every code above, grouped as they are defined.
pub const ALL: &[&str] = &[
    UNKNOWN_TOOL,
    INVALID_ARGS,
    CANCELLED,
    TIMEOUT,
    FUEL_EXHAUSTED,
    MEMORY_LIMIT,
    OUTPUT_LIMIT,
    TRAP,
    BAD_OUTPUT,
    HOST_ERROR,
    PERMISSION_DENIED,
    WRITE_QUOTA,
    JOURNAL_FAILED,
    TOOL_ERROR,
    SERVER_FAILED,
    SERVER_CHANGED,
    SERVER_UNPINNED,
    OUTPUT_NOT_FOUND,
    OUTPUT_STORE_UNAVAILABLE,
    RUN_TESTS_BUSY,
    TESTS_FAILED,
    CAPABILITY_DENIED,
    IDENTITY_MISMATCH,
    TOOL_LIST_TOO_LARGE,
    DUPLICATE_TOOL,
    NOT_FOUND,
    PATH_ESCAPE,
    PATH_TOO_LONG,
    ACCESS_DENIED,
    FORBIDDEN_PATH,
    NO_FILESYSTEM,
    IS_DIRECTORY,
    NOT_A_DIRECTORY,
    BINARY_FILE,
    IO_ERROR,
    NO_SPACE,
    NO_OP_EDIT,
    OLD_STRING_NOT_FOUND,
    OLD_STRING_NOT_UNIQUE,
    STALE_FILE,
    IS_SYMLINK,
    ALREADY_EXISTS,
    ARTIFACT_NOT_FOUND,
    BLOCKED_URL,
    INVALID_URL,
    HOST_NOT_ALLOWED,
    METHOD_NOT_ALLOWED,
    TOO_MANY_REDIRECTS,
    TOO_LARGE,
    FILE_TOO_LARGE,
    TRANSPORT,
    UNSUPPORTED_CONTENT_TYPE,
    INVALID_SEARCH_URL,
    PROGRAM_NOT_ALLOWED,
    SHELL_NOT_ALLOWED,
    ENV_NOT_ALLOWED,
    BAD_CWD,
    EXEC_BUSY,
    SANDBOX_UNAVAILABLE,
    SPAWN_FAILED,
    COMMAND_FAILED,
    SIGNATURE_MISSING,
    SIGNATURE_INVALID,
    DIGEST_MISMATCH,
    REGISTRY_ERROR,
    UNSUPPORTED_ARTIFACT,
    INVALID_KEY,
    SIGNATURE_TLOG_INVALID,
    SIGNATURE_SCT_INVALID,
    SIGNATURE_CERTIFICATE_INVALID,
    SIGNATURE_IDENTITY_MISMATCH,
];

/// Reserved metadata keys: the host takes these out of a tool's metadata and
/// treats them itself.
pub mod metadata {
    /// An image the tool returns: `{"mime_type": "image/png" | "image/jpeg" |
    /// "image/gif" | "image/webp", "data": base64}`, at most 5 MiB decoded. The host
    /// checks it (`bad_output`: not base64, not the image type it claims;
    /// `output_limit`: over the bound), sends it as MCP image content and leaves it
    /// out of `metadata`.
    pub const IMAGE: &str = "toolhost/image";
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec::Vec;

    use super::ALL;

    /// Lowercase `snake_case`: a letter first, then words of `a-z0-9` joined by single underscores.
    fn is_snake_case(code: &str) -> bool {
        code.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && code.split('_').all(|word| {
                !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            })
    }

    #[test]
    fn every_code_is_unique_short_printable_snake_case() {
        for (i, code) in ALL.iter().enumerate() {
            // The host's bound (`output::bound_error`): at most 64 bytes, printable ASCII.
            assert!(code.len() <= 64 && code.bytes().all(|b| b.is_ascii_graphic()), "{code:?}");
            assert!(is_snake_case(code), "{code:?} is not lowercase snake_case");
            assert!(!ALL[..i].contains(code), "{code:?} is listed twice");
        }
    }

    #[test]
    fn the_check_refuses_what_is_not_snake_case() {
        for bad in
            ["", "Timeout", "time out", "_timeout", "timeout_", "time__out", "9lives", "http_", "ünknown"]
        {
            assert!(!is_snake_case(bad), "{bad:?}");
        }
        assert!(is_snake_case("http_404"));
    }

    /// A constant defined in this file but left out of `ALL` would escape the check above.
    #[test]
    fn all_lists_every_constant() {
        let source = include_str!("lib.rs");
        let defined: Vec<&str> = source
            .lines()
            .filter_map(|line| {
                line.strip_prefix("pub const ")?.split_once(": &str = \"")?.1.strip_suffix("\";")
            })
            .collect();
        assert_eq!(defined.len(), ALL.len(), "defined {defined:?}");
        for code in &defined {
            assert!(ALL.contains(code), "{code:?} is not in ALL");
        }
    }
}
