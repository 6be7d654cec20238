//! An image a tool returns: taken out of its metadata (the reserved key
//! [`IMAGE_KEY`]) before the metadata bounds apply, checked and bounded on
//! its own ([`MAX_IMAGE_BYTES`]), and carried beside the text (MCP sends it as
//! an `image` content item; the CLI names its type and size).
//!
//! The metadata text is parsed only when the key is in it and the text is
//! within [`MAX_IMAGE_BYTES`] as base64 plus the metadata bound; the image
//! is refused (`bad_output`) when its data is not standard base64 or its
//! bytes are not the type it claims, and (`output_limit`) past the bound.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::error::{CallError, codes};
use crate::limits::Limits;

/// The reserved metadata key (`toolhost_codes::metadata::IMAGE`).
pub const IMAGE_KEY: &str = toolhost_codes::metadata::IMAGE;

/// Largest image a tool may return, decoded (5 MiB).
pub const MAX_IMAGE_BYTES: usize = 5 << 20;

/// The image types accepted, by MIME type, with the magic bytes each starts with.
const TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// An image a tool returned, checked.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// Its bytes, standard base64 (what MCP's `image` content carries).
    #[serde(skip)]
    pub data: String,
    /// Its size in bytes, decoded.
    pub bytes: usize,
}

/// The MIME type `bytes` start with, among [`TYPES`].
pub(crate) fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let webp = bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP";
    [
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        bytes.starts_with(b"\xff\xd8\xff"),
        bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a"),
        webp,
    ]
    .iter()
    .position(|hit| *hit)
    .map(|i| TYPES[i])
}

/// Take the image out of the metadata `text`: the rest of the metadata (as
/// text again, `None` when nothing is left) and the image. Metadata without
/// the key is returned as it is, unparsed.
pub(crate) fn lift(text: String, limits: &Limits) -> Result<(Option<String>, Option<Image>), CallError> {
    let quoted = format!("\"{IMAGE_KEY}\"");
    if !text.contains(&quoted) {
        return Ok((Some(text), None));
    }
    let most = MAX_IMAGE_BYTES.div_ceil(3) * 4 + limits.metadata_bytes + 1024;
    if text.len() > most {
        return Err(CallError::new(
            codes::OUTPUT_LIMIT,
            format!(
                "the tool's metadata with an image is {} bytes; an image is at most {MAX_IMAGE_BYTES} bytes \
                 ({} as base64) beside {} bytes of metadata",
                text.len(),
                MAX_IMAGE_BYTES.div_ceil(3) * 4,
                limits.metadata_bytes
            ),
        ));
    }
    let bad = |why: String| CallError::new(codes::BAD_OUTPUT, format!("the tool's image {why}"));
    let mut map: Map<String, Value> =
        serde_json::from_str(&text).map_err(|e| bad(format!("metadata is not a JSON object: {e}")))?;
    let Some(Value::Object(image)) = map.remove(IMAGE_KEY) else {
        return Err(bad(format!("({IMAGE_KEY}) is not an object {{\"mime_type\", \"data\"}}")));
    };
    let (Some(Value::String(mime)), Some(Value::String(data))) = (image.get("mime_type"), image.get("data"))
    else {
        return Err(bad(format!("({IMAGE_KEY}) needs string fields \"mime_type\" and \"data\"")));
    };
    if !TYPES.contains(&mime.as_str()) {
        let shown: String = mime.chars().take(40).collect();
        return Err(bad(format!("has type {shown:?}; accepted: {}", TYPES.join(", "))));
    }
    if data.len() > MAX_IMAGE_BYTES.div_ceil(3) * 4 {
        return Err(CallError::new(
            codes::OUTPUT_LIMIT,
            format!("the tool's image is over {MAX_IMAGE_BYTES} bytes ({} bytes of base64)", data.len()),
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| bad(format!("data is not standard base64: {e}")))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(CallError::new(
            codes::OUTPUT_LIMIT,
            format!("the tool's image is {} bytes; at most {MAX_IMAGE_BYTES}", bytes.len()),
        ));
    }
    if sniff(&bytes) != Some(mime.as_str()) {
        return Err(bad(format!("claims {mime} but its bytes are not one")));
    }
    let image = Image { mime_type: mime.clone(), data: data.clone(), bytes: bytes.len() };
    let rest = (!map.is_empty()).then(|| Value::Object(map).to_string());
    Ok((rest, Some(image)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR";

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn lifted(meta: Value) -> Result<(Option<String>, Option<Image>), CallError> {
        lift(meta.to_string(), &Limits::default())
    }

    #[test]
    fn metadata_without_an_image_is_untouched_and_unparsed() {
        let text = "{not even json".to_string();
        assert_eq!(lift(text.clone(), &Limits::default()).unwrap(), (Some(text), None));
    }

    #[test]
    fn the_image_is_taken_out_and_the_rest_kept() {
        let (rest, image) =
            lifted(json!({"sha256": "ab", IMAGE_KEY: {"mime_type": "image/png", "data": b64(PNG)}})).unwrap();
        assert_eq!(rest.as_deref(), Some(r#"{"sha256":"ab"}"#));
        let image = image.unwrap();
        assert_eq!(
            (image.mime_type.as_str(), image.bytes, image.data.clone()),
            ("image/png", PNG.len(), b64(PNG))
        );
        let (rest, _) = lifted(json!({IMAGE_KEY: {"mime_type": "image/png", "data": b64(PNG)}})).unwrap();
        assert_eq!(rest, None);
        assert_eq!(
            serde_json::to_value(&image).unwrap(),
            json!({"mime_type": "image/png", "bytes": PNG.len()})
        );
    }

    #[test]
    fn a_lying_or_malformed_image_is_bad_output() {
        for meta in [
            json!({IMAGE_KEY: {"mime_type": "image/png", "data": "not base64!"}}),
            json!({IMAGE_KEY: {"mime_type": "image/png", "data": format!(" {}", b64(PNG))}}),
            json!({IMAGE_KEY: {"mime_type": "image/jpeg", "data": b64(PNG)}}),
            json!({IMAGE_KEY: {"mime_type": "image/png", "data": b64(b"<svg onload=alert(1)>")}}),
            json!({IMAGE_KEY: {"mime_type": "image/svg+xml", "data": b64(b"<svg/>")}}),
            json!({IMAGE_KEY: {"mime_type": "image/png"}}),
            json!({IMAGE_KEY: {"mime_type": 1, "data": b64(PNG)}}),
            json!({IMAGE_KEY: "data"}),
            json!([IMAGE_KEY]),
        ] {
            let err = lifted(meta.clone()).unwrap_err();
            assert_eq!(err.code, codes::BAD_OUTPUT, "{meta}: {}", err.message);
            assert!(err.message.len() < 300, "{}", err.message);
        }
    }

    #[test]
    fn past_the_bound_is_output_limit_before_anything_is_parsed() {
        let mut big = PNG.to_vec();
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        let err = lifted(json!({IMAGE_KEY: {"mime_type": "image/png", "data": b64(&big)}})).unwrap_err();
        assert_eq!(err.code, codes::OUTPUT_LIMIT, "{}", err.message);
        let flood = format!("{{\"{IMAGE_KEY}\": {}}}", "[".repeat(16 << 20));
        let err = lift(flood, &Limits::default()).unwrap_err();
        assert_eq!(err.code, codes::OUTPUT_LIMIT, "{}", err.message);
        let mut exact = PNG.to_vec();
        exact.resize(MAX_IMAGE_BYTES, 0);
        let (_, image) = lifted(json!({IMAGE_KEY: {"mime_type": "image/png", "data": b64(&exact)}})).unwrap();
        assert_eq!(image.unwrap().bytes, MAX_IMAGE_BYTES);
    }

    #[test]
    fn deep_nesting_beside_the_key_is_refused_not_a_crash() {
        let deep = format!("{{\"{IMAGE_KEY}\": 1, \"x\": {}{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(lift(deep, &Limits::default()).unwrap_err().code, codes::BAD_OUTPUT);
    }
}
