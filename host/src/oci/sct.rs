//! Certificate transparency: the SCTs a Fulcio certificate embeds (RFC 6962 §3.3),
//! checked against the CT log keys of the trusted root. Each SCT is the log's
//! signature over a precertificate entry: the timestamp, the sha256 of the issuer's
//! public key, and the certificate's TBS with the SCT extension taken out (the
//! precertificate the log saw). One that verifies with a trusted log's key, within
//! that key's validity, is enough.

use sha2::{Digest, Sha256};
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::keys::PublicKey;

/// The embedded SCT list extension, 1.3.6.1.4.1.11129.2.4.2, as DER OID content bytes.
const SCT_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02];

/// A CT log the trusted root names.
#[derive(Debug, Clone)]
pub(crate) struct CtLog {
    /// Its id: sha256 of its key.
    pub(crate) id: Vec<u8>,
    pub(crate) key: PublicKey,
    /// When its key signs (milliseconds since the epoch; `None`: open).
    pub(crate) start_ms: Option<i64>,
    pub(crate) end_ms: Option<i64>,
}

/// Check that `leaf` (DER) embeds an SCT signed by one of `logs`; `issuer_spki` is the
/// DER SubjectPublicKeyInfo of the CA that issued it.
pub(crate) fn verify_embedded(leaf: &[u8], issuer_spki: &[u8], logs: &[CtLog]) -> Result<(), String> {
    let (_, cert) = X509Certificate::from_der(leaf).map_err(|e| format!("the certificate: {e}"))?;
    let scts = cert
        .extensions()
        .iter()
        .find_map(|ext| match ext.parsed_extension() {
            ParsedExtension::SCT(list) => Some(list),
            _ => None,
        })
        .ok_or("the certificate embeds no SCT (it was not logged for certificate transparency)")?;
    let tbs = tbs_without_sct(cert.tbs_certificate.as_ref())?;
    let issuer_key_hash = Sha256::digest(issuer_spki);
    let mut why = Vec::new();
    for sct in scts {
        let Some(log) = logs.iter().find(|l| l.id.as_slice() == sct.id.key_id.as_slice()) else {
            why.push(format!(
                "an SCT from log {}, not a CT log of the trusted root",
                hex::encode(sct.id.key_id)
            ));
            continue;
        };
        let t = i64::try_from(sct.timestamp).unwrap_or(i64::MAX);
        if log.start_ms.is_some_and(|s| t < s) || log.end_ms.is_some_and(|e| t >= e) {
            why.push("an SCT made outside its CT log key's validity".into());
            continue;
        }
        let mut signed = Vec::with_capacity(tbs.len() + 64);
        signed.extend([0u8, 0u8]); // v1, certificate_timestamp
        signed.extend(sct.timestamp.to_be_bytes());
        signed.extend([0u8, 1u8]); // precert_entry
        signed.extend(issuer_key_hash.as_slice());
        let len = u32::try_from(tbs.len()).map_err(|_| "the certificate is too large")?;
        signed.extend(&len.to_be_bytes()[1..]);
        signed.extend(&tbs);
        let extensions = sct.extensions.0;
        let ext_len = u16::try_from(extensions.len()).map_err(|_| "an SCT's extensions are too large")?;
        signed.extend(ext_len.to_be_bytes());
        signed.extend(extensions);
        if log.key.verifies(&signed, sct.signature.data) {
            return Ok(());
        }
        why.push("an SCT whose signature does not verify with its CT log's key".into());
    }
    if why.is_empty() {
        why.push("an empty SCT list".into());
    }
    Err(why.join("; "))
}

/// One DER TLV at the start of `der`: (tag, header length, total length).
fn tlv(der: &[u8]) -> Result<(u8, usize, usize), String> {
    let bad = || "the certificate's DER is malformed".to_string();
    let tag = *der.first().ok_or_else(bad)?;
    let first = *der.get(1).ok_or_else(bad)?;
    let (header, len) = if first < 0x80 {
        (2, first as usize)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 {
            return Err(bad());
        }
        let bytes = der.get(2..2 + n).ok_or_else(bad)?;
        (2 + n, bytes.iter().fold(0usize, |acc, b| (acc << 8) | *b as usize))
    };
    let total = header.checked_add(len).filter(|t| *t <= der.len()).ok_or_else(bad)?;
    Ok((tag, header, total))
}

/// `content` wrapped as one DER TLV with `tag`.
fn wrap(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = vec![tag];
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend(content);
    out
}

/// The children of the constructed TLV `der`.
fn children(der: &[u8]) -> Result<Vec<&[u8]>, String> {
    let (_, header, total) = tlv(der)?;
    let mut rest = &der[header..total];
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (_, _, len) = tlv(rest)?;
        out.push(&rest[..len]);
        rest = &rest[len..];
    }
    Ok(out)
}

/// The TBSCertificate `tbs` (DER) with the embedded SCT extension removed: what the
/// log signed (RFC 6962 §3.2).
pub(crate) fn tbs_without_sct(tbs: &[u8]) -> Result<Vec<u8>, String> {
    let mut content = Vec::with_capacity(tbs.len());
    for field in children(tbs)? {
        if field.first() != Some(&0xa3) {
            content.extend(field);
            continue;
        }
        let [extensions] = children(field)?[..] else {
            return Err("the certificate's extensions are malformed".into());
        };
        let mut kept = Vec::new();
        for ext in children(extensions)? {
            let oid = children(ext)?.first().map(|o| tlv(o).map(|(_, h, t)| &o[h..t])).transpose()?;
            if oid != Some(SCT_OID) {
                kept.extend(ext);
            }
        }
        content.extend(wrap(0xa3, &wrap(0x30, &kept)));
    }
    Ok(wrap(0x30, &content))
}

/// `cert` (DER) with its SCT extension taken out, its issuer's signature kept (so no
/// longer valid): what a stripped certificate looks like.
#[cfg(test)]
pub(crate) fn certificate_without_sct(cert: &[u8]) -> Vec<u8> {
    let parts = children(cert).unwrap();
    let mut content = tbs_without_sct(parts[0]).unwrap();
    for part in &parts[1..] {
        content.extend(*part);
    }
    wrap(0x30, &content)
}
