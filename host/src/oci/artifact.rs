//! The wasm OCI artifact layout (CNCF TAG Runtime): an OCI image manifest whose config
//! is `application/vnd.wasm.config.v0+json` and whose one layer is the component,
//! `application/wasm`. What `publish` writes and what `add` accepts.

use std::collections::HashMap;

use oci_spec::image::{Descriptor, ImageManifest};
use serde::{Deserialize, Serialize};

use super::OciError;
use super::registry::digest_of;

/// The config media type of a wasm artifact.
pub(crate) const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a component.
pub(crate) const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer media type older tools (wasm-to-oci) push.
pub(crate) const LEGACY_WASM_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// An OCI image manifest.
pub(crate) const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// The config blob of a wasm artifact.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WasmConfig {
    /// When it was pushed (RFC 3339).
    pub created: String,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component.
    pub os: String,
    /// The layers' digests.
    pub layer_digests: Vec<String>,
    /// What the component imports and exports.
    pub component: ComponentInfo,
}

/// The `component` part of a `WasmConfig`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct ComponentInfo {
    /// Its imports (`wasi:cli/environment@0.2.6`, …).
    pub imports: Vec<String>,
    /// Its exports.
    pub exports: Vec<String>,
}

/// The blobs and the manifest of a component's artifact, ready to push.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The config blob.
    pub config: Vec<u8>,
    /// The manifest.
    pub manifest: Vec<u8>,
    /// The manifest's digest.
    pub digest: String,
    /// The layer's digest (`sha256:` + the component's sha256).
    pub layer_digest: String,
}

/// The artifact of `component` in the wasm layout.
pub fn build(component: &[u8], info: ComponentInfo, created: &str) -> Result<Artifact, OciError> {
    let layer_digest = digest_of(component);
    let config = WasmConfig {
        created: created.to_string(),
        architecture: "wasm".into(),
        os: "wasip2".into(),
        layer_digests: vec![layer_digest.clone()],
        component: info,
    };
    let config = serde_json::to_vec(&config).map_err(|e| OciError::Unsupported(e.to_string()))?;
    let manifest = manifest_json(
        WASM_CONFIG_MEDIA_TYPE,
        &config,
        &[(WASM_LAYER_MEDIA_TYPE, component, HashMap::new())],
        Some(WASM_CONFIG_MEDIA_TYPE),
    )?;
    Ok(Artifact { digest: digest_of(&manifest), config, manifest, layer_digest })
}

/// An OCI image manifest over `config` and `layers` (media type, bytes, annotations).
pub(crate) fn manifest_json(
    config_type: &str,
    config: &[u8],
    layers: &[(&str, &[u8], HashMap<String, String>)],
    artifact_type: Option<&str>,
) -> Result<Vec<u8>, OciError> {
    let descriptor = |media_type: &str, bytes: &[u8], annotations: &HashMap<String, String>| {
        let mut d = serde_json::json!({
            "mediaType": media_type,
            "digest": digest_of(bytes),
            "size": bytes.len(),
        });
        if !annotations.is_empty() {
            d["annotations"] = serde_json::json!(annotations);
        }
        d
    };
    let mut manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST_MEDIA_TYPE,
        "config": descriptor(config_type, config, &HashMap::new()),
        "layers": layers.iter().map(|(t, b, a)| descriptor(t, b, a)).collect::<Vec<_>>(),
    });
    if let Some(artifact_type) = artifact_type {
        manifest["artifactType"] = artifact_type.into();
    }
    serde_json::to_vec(&manifest).map_err(|e| OciError::Unsupported(e.to_string()))
}

/// Parse a manifest: an OCI (or Docker v2) image manifest; an index is refused.
pub(crate) fn parse_manifest(bytes: &[u8], media_type: &str, what: &str) -> Result<ImageManifest, OciError> {
    let unsupported = |why: String| OciError::Unsupported(format!("{what}: {why}"));
    // Look at the declared type before parsing the whole: an index parses as neither.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head {
        media_type: Option<String>,
        manifests: Option<serde_json::Value>,
    }
    let head: Head =
        serde_json::from_slice(bytes).map_err(|e| unsupported(format!("not a JSON manifest: {e}")))?;
    let declared = head.media_type.as_deref().unwrap_or(media_type);
    if head.manifests.is_some() || declared.contains("index") || declared.contains("manifest.list") {
        return Err(unsupported(
            "an image index (several manifests, as for a multi-platform image), not one component".into(),
        ));
    }
    serde_json::from_slice::<ImageManifest>(bytes)
        .map_err(|e| unsupported(format!("not an image manifest: {e}")))
}

/// The component layer of a wasm artifact's manifest: exactly one layer of a wasm media
/// type, at most `max_layer_bytes` long (a larger one is refused here, before any of it
/// is asked for).
pub(crate) fn component_layer(
    manifest: &ImageManifest,
    max_layer_bytes: u64,
    what: &str,
) -> Result<Descriptor, OciError> {
    let is_wasm = |d: &&Descriptor| {
        let t = d.media_type().as_ref();
        t == WASM_LAYER_MEDIA_TYPE || t == LEGACY_WASM_LAYER_MEDIA_TYPE
    };
    let wasm: Vec<&Descriptor> = manifest.layers().iter().filter(is_wasm).collect();
    let layer = match wasm.as_slice() {
        [one] if manifest.layers().len() == 1 => *one,
        _ => {
            let types: Vec<String> = manifest.layers().iter().map(|l| l.media_type().to_string()).collect();
            return Err(OciError::Unsupported(format!(
                "{what}: expected one layer of type {WASM_LAYER_MEDIA_TYPE}, found [{}] (config {}); \
                 is it a container image rather than a component?",
                types.join(", "),
                manifest.config().media_type()
            )));
        }
    };
    if layer.size() > max_layer_bytes {
        return Err(OciError::TooLarge(format!(
            "{what}: its layer {} is {} bytes; at most {max_layer_bytes} are pulled",
            layer.digest(),
            layer.size()
        )));
    }
    Ok(layer.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_artifact_parses_back_to_its_component_layer() {
        let component = b"\0asm\x0d\0\x01\0 not really".to_vec();
        let info = ComponentInfo { imports: vec!["toolhost:plugin/log@0.1.0".into()], exports: vec![] };
        let artifact = build(&component, info.clone(), "2026-01-01T00:00:00Z").unwrap();
        let manifest = parse_manifest(&artifact.manifest, OCI_MANIFEST_MEDIA_TYPE, "m").unwrap();
        let layer = component_layer(&manifest, 1 << 20, "m").unwrap();
        assert_eq!(layer.digest().to_string(), artifact.layer_digest);
        assert_eq!(layer.size(), component.len() as u64);
        let config: WasmConfig = serde_json::from_slice(&artifact.config).unwrap();
        assert_eq!((config.architecture.as_str(), config.os.as_str()), ("wasm", "wasip2"));
        assert_eq!(config.component, info);
        assert_eq!(config.layer_digests, vec![artifact.layer_digest.clone()]);
        // Too large for the bound: refused from the manifest alone.
        let err = component_layer(&manifest, 3, "m").unwrap_err();
        assert_eq!(err.code(), "too_large", "{err}");
    }

    #[test]
    fn indexes_images_and_odd_layers_are_refused() {
        let index =
            br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
        assert_eq!(parse_manifest(index, "", "m").unwrap_err().code(), "unsupported_artifact");
        let image = manifest_json(
            "application/vnd.oci.image.config.v1+json",
            b"{}",
            &[("application/vnd.oci.image.layer.v1.tar+gzip", b"x", HashMap::new())],
            None,
        )
        .unwrap();
        let parsed = parse_manifest(&image, OCI_MANIFEST_MEDIA_TYPE, "m").unwrap();
        let err = component_layer(&parsed, 100, "m").unwrap_err().to_string();
        assert!(err.contains("container image"), "{err}");
        let two = manifest_json(
            WASM_CONFIG_MEDIA_TYPE,
            b"{}",
            &[(WASM_LAYER_MEDIA_TYPE, b"a", HashMap::new()), (WASM_LAYER_MEDIA_TYPE, b"b", HashMap::new())],
            None,
        )
        .unwrap();
        let parsed = parse_manifest(&two, OCI_MANIFEST_MEDIA_TYPE, "m").unwrap();
        assert_eq!(component_layer(&parsed, 100, "m").unwrap_err().code(), "unsupported_artifact");
        assert_eq!(parse_manifest(b"[1,2", "", "m").unwrap_err().code(), "unsupported_artifact");
        // A 5 GB layer declared in an otherwise fine manifest.
        let huge = format!(
            r#"{{"schemaVersion":2,"mediaType":"{OCI_MANIFEST_MEDIA_TYPE}","config":{{"mediaType":"{WASM_CONFIG_MEDIA_TYPE}","digest":"sha256:{z}","size":2}},"layers":[{{"mediaType":"application/wasm","digest":"sha256:{z}","size":5000000000}}]}}"#,
            z = "0".repeat(64)
        );
        let parsed = parse_manifest(huge.as_bytes(), OCI_MANIFEST_MEDIA_TYPE, "m").unwrap();
        assert_eq!(component_layer(&parsed, 200 << 20, "m").unwrap_err().code(), "too_large");
    }
}
