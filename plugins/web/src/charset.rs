//! Response text in the character set it is written in: the byte-order mark, else the
//! `charset` of `Content-Type`, else (HTML) a `<meta charset>` in the first 1024 bytes,
//! else UTF-8. Decoding is `encoding_rs`'s (the WHATWG Encoding Standard), so a
//! `windows-1252` or `Shift_JIS` page reads as the text its author wrote.

use encoding_rs::{Encoding, UTF_8};
use toolhost_guest::http::Response;

/// How far into a body a `<meta charset>` is looked for (the HTML prescan's window).
const PRESCAN: usize = 1024;

/// The `charset` parameter of a `Content-Type` value, if it names a known encoding.
fn from_content_type(value: &str) -> Option<&'static Encoding> {
    value.split(';').skip(1).find_map(|param| {
        let (name, label) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        Encoding::for_label(label.trim().trim_matches(['"', '\'']).as_bytes())
    })
}

/// The encoding a `<meta charset=…>` or `<meta http-equiv content="…; charset=…">` in the
/// first [`PRESCAN`] bytes names, if any. UTF-16 labels mean UTF-8 here, as in browsers: a
/// page that really is UTF-16 has a byte-order mark.
pub fn from_meta(body: &[u8]) -> Option<&'static Encoding> {
    let head = body[..body.len().min(PRESCAN)].to_ascii_lowercase();
    let mut rest = head.as_slice();
    while let Some(at) = find(rest, b"<meta") {
        let tag = &rest[at..];
        let tag = &tag[..find(tag, b">").unwrap_or(tag.len())];
        if let Some(found) = find(tag, b"charset").and_then(|i| label_after(&tag[i + 7..])) {
            let encoding = Encoding::for_label(found)?;
            return Some(if encoding.output_encoding() == UTF_8 { UTF_8 } else { encoding });
        }
        rest = &rest[at + 5..];
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The label in `= "label"` (spaces and quotes optional).
fn label_after(rest: &[u8]) -> Option<&[u8]> {
    let rest = rest.trim_ascii_start().strip_prefix(b"=")?.trim_ascii_start();
    let rest = rest.strip_prefix(b"\"").or_else(|| rest.strip_prefix(b"'")).unwrap_or(rest);
    let end =
        rest.iter().position(|b| !(b.is_ascii_alphanumeric() || b"-_:.".contains(b))).unwrap_or(rest.len());
    (end > 0).then_some(&rest[..end])
}

/// The encoding `resp`'s body declares (header first, then a `<meta>`), if any.
pub fn declared(resp: &Response) -> Option<&'static Encoding> {
    resp.header("content-type").and_then(from_content_type).or_else(|| from_meta(&resp.body))
}

/// `resp`'s body as text: a byte-order mark wins, then [`declared`], then UTF-8; bytes
/// that are not valid in the encoding become U+FFFD.
pub fn decode(resp: &Response) -> String {
    let encoding = declared(resp).unwrap_or(UTF_8);
    let (text, _, _) = encoding.decode(&resp.body);
    text.into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::tests::response;

    #[test]
    fn windows_1252_declared_in_the_header_is_decoded() {
        let resp = response(200, Some("text/plain; charset=windows-1252"), b"caf\xe9 \x93quoted\x94 \x80");
        assert_eq!(decode(&resp), "café “quoted” €");
        // ISO-8859-1 is windows-1252 in the Encoding Standard.
        let resp = response(200, Some("text/plain;charset=\"ISO-8859-1\""), b"na\xefve");
        assert_eq!(decode(&resp), "naïve");
    }

    #[test]
    fn shift_jis_declared_in_a_meta_tag_is_decoded() {
        let (body, _, _) = encoding_rs::SHIFT_JIS
            .encode("<html><head><meta charset=\"Shift_JIS\"></head><body>日本語のテキスト</body></html>");
        let resp = response(200, Some("text/html"), &body);
        assert!(decode(&resp).contains("日本語のテキスト"), "{}", decode(&resp));
        let (body, _, _) = encoding_rs::SHIFT_JIS.encode(
            "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=shift_jis\"><p>テスト</p>",
        );
        assert!(decode(&response(200, None, &body)).contains("テスト"));
    }

    #[test]
    fn a_byte_order_mark_wins_and_utf8_is_the_default() {
        let resp = response(200, Some("text/plain; charset=windows-1252"), "\u{feff}héllo".as_bytes());
        assert_eq!(decode(&resp), "héllo");
        assert_eq!(decode(&response(200, Some("text/plain"), "héllo".as_bytes())), "héllo");
        // An unknown label is ignored, and invalid bytes become U+FFFD rather than failing.
        assert_eq!(decode(&response(200, Some("text/plain; charset=klingon"), b"a\xffb")), "a\u{fffd}b");
        // A meta naming UTF-16 on a body without a BOM means UTF-8.
        assert_eq!(from_meta(b"<meta charset=utf-16>"), Some(UTF_8));
        assert_eq!(from_meta(b"<p>charset=latin1</p>"), None, "only inside a meta tag");
    }
}
