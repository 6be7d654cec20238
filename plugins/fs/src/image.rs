//! `read_file` on an image: PNG, JPEG, GIF or WebP, known by its magic
//! bytes (never by its name), returned whole as base64 under the reserved
//! metadata key [`IMAGE`] so the host sends it as image content (MCP) and
//! reports its type and size elsewhere; the text says what it is.

use std::io::Read;

use base64::Engine as _;
use serde_json::json;
use sha2::{Digest, Sha256};
use toolhost_guest::{Output, ToolError, codes};

pub use toolhost_guest::codes::metadata::IMAGE;

/// Largest image returned, in bytes (before base64). The host holds tools to
/// the same bound.
pub const MAX_IMAGE_BYTES: u64 = 5 << 20;

/// The image type `head` (a file's first bytes) starts with, as a MIME type.
pub fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Width and height, when the header gives them cheaply.
pub fn dimensions(mime: &str, bytes: &[u8]) -> Option<(u32, u32)> {
    let be32 = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    let le16 = |at: usize| Some(u32::from(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?)));
    let le24 = |at: usize| {
        let b = bytes.get(at..at + 3)?;
        Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
    };
    match mime {
        "image/png" if bytes.get(12..16)? == b"IHDR" => Some((be32(16)?, be32(20)?)),
        "image/gif" => Some((le16(6)?, le16(8)?)),
        "image/webp" => match bytes.get(12..16)? {
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            b"VP8 " => Some((le16(26)? & 0x3fff, le16(28)? & 0x3fff)),
            b"VP8L" => {
                let b = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
                Some(((b & 0x3fff) + 1, ((b >> 14) & 0x3fff) + 1))
            }
            _ => None,
        },
        "image/jpeg" => jpeg_dimensions(bytes),
        _ => None,
    }
}

/// A JPEG's size from its first start-of-frame segment.
fn jpeg_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    while at + 9 < bytes.len() {
        if bytes[at] != 0xff {
            return None;
        }
        let marker = bytes[at + 1];
        let len = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
        let frame = (0xc0..=0xcf).contains(&marker) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
        if frame {
            let h = u16::from_be_bytes([bytes[at + 5], bytes[at + 6]]);
            let w = u16::from_be_bytes([bytes[at + 7], bytes[at + 8]]);
            return Some((w.into(), h.into()));
        }
        at += 2 + len;
    }
    None
}

/// The result for the image at `file` (its type `mime`, `len` bytes long),
/// shown as `shown`: a line of text and the image under [`IMAGE`];
/// `file_too_large` past [`MAX_IMAGE_BYTES`].
pub fn read(file: impl Read, mime: &str, len: u64, shown: &str) -> Result<Output, ToolError> {
    if len > MAX_IMAGE_BYTES {
        return Err(too_large(shown, mime, len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new(codes::IO_ERROR, format!("{shown}: {e}")))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(too_large(shown, mime, bytes.len() as u64));
    }
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let size = dimensions(mime, &bytes);
    let at = size.map(|(w, h)| format!(", {w}x{h}")).unwrap_or_default();
    let content =
        format!("[sha256 {sha256}] {shown}: {mime} image, {} bytes{at} (sent as an image)\n", bytes.len());
    let mut metadata = json!({
        "sha256": sha256,
        "bytes": bytes.len(),
        "mime_type": mime,
    });
    if let Some((w, h)) = size {
        metadata["width"] = json!(w);
        metadata["height"] = json!(h);
    }
    metadata[IMAGE] =
        json!({"mime_type": mime, "data": base64::engine::general_purpose::STANDARD.encode(&bytes)});
    Ok(Output::text(content).with_metadata(metadata))
}

fn too_large(shown: &str, mime: &str, len: u64) -> ToolError {
    ToolError::new(
        codes::FILE_TOO_LARGE,
        format!(
            "{shown} is a {mime} image of {len} bytes; images are returned up to {MAX_IMAGE_BYTES} bytes"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    #[test]
    fn known_by_magic_bytes_only() {
        assert_eq!(sniff(&png(1, 1)), Some("image/png"));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0\0\x10JFIF"), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a\x02\0\x03\0"), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        for not in [&b"RIFF\0\0\0\0WAVE"[..], b"\x89PNX", b"GIF90a", b"", b"plain text", b"RIFF"] {
            assert_eq!(sniff(not), None, "{not:?}");
        }
    }

    #[test]
    fn dimensions_from_headers() {
        assert_eq!(dimensions("image/png", &png(640, 480)), Some((640, 480)));
        assert_eq!(dimensions("image/gif", b"GIF89a\x02\x01\x03\0"), Some((258, 3)));
        let mut jpeg = b"\xff\xd8\xff\xe0\0\x04ab\xff\xc0\0\x11\x08".to_vec();
        jpeg.extend_from_slice(&[0x01, 0xe0, 0x02, 0x80, 3, 0, 0, 0]);
        assert_eq!(dimensions("image/jpeg", &jpeg), Some((640, 480)));
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        vp8x.extend_from_slice(&[0x7f, 0x02, 0x00, 0xdf, 0x01, 0x00]);
        assert_eq!(dimensions("image/webp", &vp8x), Some((640, 480)));
        assert_eq!(dimensions("image/png", b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(dimensions("image/jpeg", b"\xff\xd8\xff"), None);
        assert_eq!(dimensions("image/jpeg", b"\xff\xd8\x00\x00\x00\x00\x00\x00\x00\x00\x00"), None);
    }

    #[test]
    fn an_image_is_returned_as_base64_under_the_reserved_key() {
        let bytes = png(2, 3);
        let out = read(&bytes[..], "image/png", bytes.len() as u64, "a.png").unwrap();
        assert!(
            out.content.ends_with(&format!(
                "a.png: image/png image, {} bytes, 2x3 (sent as an image)\n",
                bytes.len()
            ))
        );
        let meta = out.metadata.unwrap();
        assert_eq!(
            (meta["width"].clone(), meta["height"].clone(), meta["bytes"].clone()),
            (json!(2), json!(3), json!(bytes.len()))
        );
        let data = meta[IMAGE]["data"].as_str().unwrap();
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).unwrap(), bytes);
        assert_eq!(meta[IMAGE]["mime_type"], "image/png");
        assert_eq!(IMAGE, "toolhost/image");
    }

    #[test]
    fn past_the_bound_is_file_too_large_even_when_the_length_lied() {
        let err = read(&b""[..], "image/png", MAX_IMAGE_BYTES + 1, "big.png").unwrap_err();
        assert_eq!(err.code, codes::FILE_TOO_LARGE);
        assert!(err.message.contains(&MAX_IMAGE_BYTES.to_string()), "{}", err.message);
        let grown = vec![0u8; MAX_IMAGE_BYTES as usize + 10];
        let err = read(&grown[..], "image/png", 10, "grown.png").unwrap_err();
        assert_eq!(err.code, codes::FILE_TOO_LARGE);
    }
}
